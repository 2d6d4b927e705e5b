//! `NRT_TENSOR_PLACEMENT_VIRTUAL` by runtime line (`NEFFLD_RUNTIME`, read
//! at `nrt_init`): taken up to 2.31, refused with `NRT_INVALID` from 2.32,
//! which removed it. This binary's only test sets the variable between
//! runtimes.

use std::ptr;

use neffld_nrt::*;

const VIRTUAL: u32 = nrt_tensor_placement_t::NRT_TENSOR_PLACEMENT_VIRTUAL as u32;

/// Starts a runtime of `line`, allocates a VIRTUAL tensor, writes and reads
/// it back when it was taken, and closes the runtime.
fn virtual_tensor_on(line: &str) -> NRT_STATUS {
    // SAFETY: the only test of this binary: nothing reads the environment
    // concurrently.
    unsafe { std::env::set_var("NEFFLD_RUNTIME", line) };
    // SAFETY: NULL version strings are allowed.
    let s = unsafe { nrt_init(NRT_FRAMEWORK_TYPE_NO_FW_ARG, ptr::null(), ptr::null()) };
    assert_eq!(s, NRT_STATUS::NRT_SUCCESS, "nrt_init on {line}");
    let mut t: *mut nrt_tensor_t = ptr::null_mut();
    // SAFETY: the name is a NUL-terminated literal; `t` is writable.
    let s = unsafe { nrt_tensor_allocate(VIRTUAL, -1, 64, c"v".as_ptr(), &mut t) };
    if s == NRT_STATUS::NRT_SUCCESS {
        let data = [3u8; 64];
        let mut back = [0u8; 64];
        // SAFETY: both buffers hold 64 bytes; `t` is the live tensor just made.
        unsafe {
            assert_eq!(
                nrt_tensor_write(t, data.as_ptr().cast(), 0, 64),
                NRT_STATUS::NRT_SUCCESS
            );
            assert_eq!(
                nrt_tensor_read(t, back.as_mut_ptr().cast(), 0, 64),
                NRT_STATUS::NRT_SUCCESS
            );
            nrt_tensor_free(&mut t);
        }
        assert_eq!(back, data);
    } else {
        assert!(t.is_null(), "no tensor on a refusal");
    }
    nrt_close();
    s
}

#[test]
fn virtual_placement_is_refused_from_2_32() {
    if neffld_testkit::ran_alone(module_path!(), "virtual_placement_is_refused_from_2_32") {
        return;
    }
    for (line, want) in [
        ("2.27", NRT_STATUS::NRT_SUCCESS),
        ("2.30", NRT_STATUS::NRT_SUCCESS),
        ("2.31", NRT_STATUS::NRT_SUCCESS),
        ("2.32", NRT_STATUS::NRT_INVALID),
        ("2.33.10", NRT_STATUS::NRT_INVALID),
        ("2.34", NRT_STATUS::NRT_INVALID),
        ("2.35", NRT_STATUS::NRT_INVALID),
    ] {
        assert_eq!(virtual_tensor_on(line), want, "on {line}");
    }
}

const NRT_FRAMEWORK_TYPE_NO_FW_ARG: u32 = nrt_framework_type_t::NRT_FRAMEWORK_TYPE_NO_FW as u32;
