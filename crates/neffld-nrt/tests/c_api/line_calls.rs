//! A C entry point a runtime line adds (the `c_calls` of its row in the
//! library's line table) is refused under the lines before it, as if it
//! were not there: `NRT_FAILURE`, naming the line that added it. The line
//! is the environment's (`NEFFLD_RUNTIME`) before `nrt_init`.

use std::ptr;

use neffld_nrt::*;

/// `nrt_inspect_config_set_device_profile_num_warmup` on fresh options
/// under `line` (`None`: the default, the newest).
fn set_warmup_under(line: Option<&str>) -> NRT_STATUS {
    // SAFETY: this test runs alone in its process: nothing reads the
    // environment concurrently.
    unsafe {
        match line {
            Some(l) => std::env::set_var("NEFFLD_RUNTIME", l),
            None => std::env::remove_var("NEFFLD_RUNTIME"),
        }
    }
    let mut options: *mut nrt_inspect_config_t = ptr::null_mut();
    // SAFETY: `options` is writable.
    assert_eq!(
        unsafe { nrt_inspect_config_allocate(&mut options) },
        NRT_STATUS::NRT_SUCCESS
    );
    let s = nrt_inspect_config_set_device_profile_num_warmup(options, 5);
    assert_eq!(nrt_inspect_config_free(options), NRT_STATUS::NRT_SUCCESS);
    s
}

#[test]
fn the_profile_warmup_setter_is_2_35s() {
    if neffld_testkit::ran_alone(module_path!(), "the_profile_warmup_setter_is_2_35s") {
        return;
    }
    assert_eq!(set_warmup_under(Some("2.34")), NRT_STATUS::NRT_FAILURE);
    assert_eq!(set_warmup_under(Some("2.30.51")), NRT_STATUS::NRT_FAILURE);
    assert_eq!(set_warmup_under(Some("2.35")), NRT_STATUS::NRT_SUCCESS);
    assert_eq!(set_warmup_under(None), NRT_STATUS::NRT_SUCCESS);
    // The options are still checked where the call exists.
    assert_eq!(
        nrt_inspect_config_set_device_profile_num_warmup(ptr::null_mut(), 1),
        NRT_STATUS::NRT_INVALID
    );
}
