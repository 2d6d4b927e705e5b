//! `NEURON_RT_VISIBLE_CORES` naming cores the device does not have: every
//! entry point refuses it the same way, before `nrt_init` too (its own
//! process sets the variable once, before any call).

use neffld_nrt::*;

#[test]
fn cores_the_device_lacks_are_refused_by_every_entry_point() {
    if neffld_testkit::ran_alone(
        module_path!(),
        "cores_the_device_lacks_are_refused_by_every_entry_point",
    ) {
        return;
    }
    // SAFETY: the only test of this binary: nothing reads the environment
    // concurrently.
    unsafe { std::env::set_var("NEURON_RT_VISIBLE_CORES", "0-999") };
    let mut n = 7u32;
    // SAFETY: `n` is writable.
    unsafe {
        assert_eq!(nrt_get_visible_vnc_count(&mut n), NRT_STATUS::NRT_INVALID);
        assert_eq!(nrt_get_visible_nc_count(&mut n), NRT_STATUS::NRT_INVALID);
    }
    assert_eq!(n, 7, "no count is written");
    // SAFETY: NULL version strings are allowed.
    let s = unsafe {
        nrt_init(
            NRT_FRAMEWORK_TYPE_NO_FW_ARG,
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(s, NRT_STATUS::NRT_INVALID);
    // A list the device holds is taken, before and after init alike.
    // SAFETY: as above.
    unsafe { std::env::set_var("NEURON_RT_VISIBLE_CORES", "1-2") };
    unsafe {
        assert_eq!(nrt_get_visible_vnc_count(&mut n), NRT_STATUS::NRT_SUCCESS);
        assert_eq!(n, 2);
        let s = nrt_init(
            NRT_FRAMEWORK_TYPE_NO_FW_ARG,
            std::ptr::null(),
            std::ptr::null(),
        );
        assert_eq!(s, NRT_STATUS::NRT_SUCCESS);
        assert_eq!(nrt_get_visible_vnc_count(&mut n), NRT_STATUS::NRT_SUCCESS);
        assert_eq!(n, 2);
    }
    nrt_close();
}

const NRT_FRAMEWORK_TYPE_NO_FW_ARG: u32 = nrt_framework_type_t::NRT_FRAMEWORK_TYPE_NO_FW as u32;
