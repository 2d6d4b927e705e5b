//! A device tensor of a runtime closed since stays closed after a new
//! `nrt_init`: it read and wrote the closed runtime's device, at the
//! address a new tensor then got, and copied bytes between the two.

use std::ptr;

use neffld_nrt::*;

const DEVICE: u32 = nrt_tensor_placement_t::NRT_TENSOR_PLACEMENT_DEVICE as u32;

fn init() {
    // SAFETY: NULL version strings are allowed.
    assert_eq!(
        unsafe { nrt_init(1, ptr::null(), ptr::null()) },
        NRT_STATUS::NRT_SUCCESS
    );
}

fn allocate() -> *mut nrt_tensor_t {
    let mut t: *mut nrt_tensor_t = ptr::null_mut();
    // SAFETY: `t` is writable; a NULL name is allowed.
    let s = unsafe { nrt_tensor_allocate(DEVICE, 0, 64, ptr::null(), &mut t) };
    assert_eq!(s, NRT_STATUS::NRT_SUCCESS);
    t
}

fn read(t: *mut nrt_tensor_t) -> NRT_STATUS {
    let mut buf = [0u8; 8];
    // SAFETY: `buf` has 8 writable bytes.
    unsafe { nrt_tensor_read(t, buf.as_mut_ptr().cast(), 0, 8) }
}

#[test]
fn a_tensor_of_a_closed_runtime_stays_closed_after_reinit() {
    if neffld_testkit::ran_alone(
        module_path!(),
        "a_tensor_of_a_closed_runtime_stays_closed_after_reinit",
    ) {
        return;
    }
    init();
    let old = allocate();
    assert_eq!(read(old), NRT_STATUS::NRT_SUCCESS);
    nrt_close();
    assert_eq!(read(old), NRT_STATUS::NRT_CLOSED);
    init();
    let fresh = allocate();
    assert_eq!(read(old), NRT_STATUS::NRT_CLOSED);
    assert_eq!(read(fresh), NRT_STATUS::NRT_SUCCESS);
    // SAFETY: both are live tensor handles.
    unsafe {
        assert_eq!(nrt_tensor_copy(old, 0, fresh, 0, 8), NRT_STATUS::NRT_CLOSED);
        let mut lnc = 0i32;
        assert_eq!(
            nrt_tensor_get_lnc_index(old, &mut lnc),
            NRT_STATUS::NRT_CLOSED
        );
        // Freeing it still works.
        nrt_tensor_free(&mut { old });
        nrt_tensor_free(&mut { fresh });
    }
    nrt_close();
}
