//! Calls made before any `nrt_init` (its own process never initialises).

use std::ptr;

use neffld_nrt::*;

#[test]
fn before_init_the_guard_answers_uninitialized() {
    if neffld_testkit::ran_alone(
        module_path!(),
        "before_init_the_guard_answers_uninitialized",
    ) {
        return;
    }
    let bytes = [0u8; 2048];
    let mut model: *mut nrt_model_t = ptr::null_mut();
    // SAFETY: `bytes` has 2048 readable bytes; `model` is a writable pointer.
    unsafe {
        // vnc_count is checked before the runtime state (stage.md §2.3).
        let s = nrt_load(bytes.as_ptr().cast(), bytes.len(), -1, 2, &mut model);
        assert_eq!(s, NRT_STATUS::NRT_INVALID);
        let s = nrt_load(bytes.as_ptr().cast(), bytes.len(), -1, -1, &mut model);
        assert_eq!(s, NRT_STATUS::NRT_UNINITIALIZED);
        let s = nrt_load_collectives(bytes.as_ptr().cast(), bytes.len(), -1, -1, 0, 1, &mut model);
        assert_eq!(s, NRT_STATUS::NRT_UNINITIALIZED);
        assert!(model.is_null());
        assert_eq!(nrt_unload(ptr::null_mut()), NRT_STATUS::NRT_UNINITIALIZED);
        let mut info: *mut nrt_tensor_info_array_t = ptr::null_mut();
        assert_eq!(
            nrt_get_model_tensor_info(ptr::null_mut(), &mut info),
            NRT_STATUS::NRT_UNINITIALIZED
        );
        let mut t: *mut nrt_tensor_t = ptr::null_mut();
        let s = nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_HOST_ARG, -1, 16, ptr::null(), &mut t);
        assert_eq!(s, NRT_STATUS::NRT_UNINITIALIZED);
        assert!(t.is_null());
        // The counts are allowed before nrt_init.
        let mut n = 0u32;
        assert_eq!(nrt_get_total_vnc_count(&mut n), NRT_STATUS::NRT_SUCCESS);
        assert!(n > 0);
        assert_eq!(nrt_get_visible_nc_count(&mut n), NRT_STATUS::NRT_SUCCESS);
        assert!(n > 0);
    }
    // nrt_close before nrt_init changes nothing.
    nrt_close();
    let mut n = 0u32;
    // SAFETY: `n` is writable.
    assert_eq!(
        unsafe { nrt_get_model_vnc_count(ptr::null(), &mut n) },
        NRT_STATUS::NRT_UNINITIALIZED
    );
}

const NRT_TENSOR_PLACEMENT_HOST_ARG: u32 = nrt_tensor_placement_t::NRT_TENSOR_PLACEMENT_HOST as u32;
