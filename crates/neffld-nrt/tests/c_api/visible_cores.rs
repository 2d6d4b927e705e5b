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

/// `NEURON_RT_VISIBLE_CORES=2`: the one visible core is core 0 to every
/// call a client makes — `nrt_load`'s `vnc`, `nrt_get_model_info` and the
/// system trace's `nc_idx`, which said 2.
#[test]
fn a_visible_core_is_numbered_from_0_in_every_call() {
    if neffld_testkit::ran_alone(
        module_path!(),
        "a_visible_core_is_numbered_from_0_in_every_call",
    ) {
        return;
    }
    // SAFETY: the test's own process: nothing reads the environment
    // concurrently.
    unsafe { std::env::set_var("NEURON_RT_VISIBLE_CORES", "2") };
    let neff = std::fs::read(format!(
        "{}/../../testdata/fixtures/matmul_small.neff",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let mut config: *mut nrt_sys_trace_config_t = std::ptr::null_mut();
    let mut model: *mut nrt_model_t = std::ptr::null_mut();
    let mut info = nrt_model_info_t { vnc: 99 };
    // SAFETY: every pointer is a live local of the stated size.
    unsafe {
        let s = nrt_init(
            NRT_FRAMEWORK_TYPE_NO_FW_ARG,
            std::ptr::null(),
            std::ptr::null(),
        );
        assert_eq!(s, NRT_STATUS::NRT_SUCCESS);
        assert_eq!(
            nrt_sys_trace_config_allocate(&mut config),
            NRT_STATUS::NRT_SUCCESS
        );
        assert_eq!(nrt_sys_trace_start(config), NRT_STATUS::NRT_SUCCESS);
        nrt_sys_trace_config_free(config);
        assert_eq!(
            nrt_load(neff.as_ptr().cast(), neff.len(), 1, -1, &mut model),
            NRT_STATUS::NRT_INVALID,
            "one core is visible: core 1 is not"
        );
        assert_eq!(
            nrt_load(neff.as_ptr().cast(), neff.len(), 0, -1, &mut model),
            NRT_STATUS::NRT_SUCCESS
        );
        let size = std::mem::size_of::<nrt_model_info_t>();
        assert_eq!(
            nrt_get_model_info(model, &mut info, size, std::ptr::null_mut()),
            NRT_STATUS::NRT_SUCCESS
        );
        assert_eq!(info.vnc, 0);
        let mut opts: *mut nrt_sys_trace_fetch_options_t = std::ptr::null_mut();
        let mut buf: *mut std::ffi::c_char = std::ptr::null_mut();
        let mut len = 0usize;
        assert_eq!(
            nrt_sys_trace_fetch_options_allocate(&mut opts),
            NRT_STATUS::NRT_SUCCESS
        );
        assert_eq!(
            nrt_sys_trace_fetch_events(&mut buf, &mut len, opts),
            NRT_STATUS::NRT_SUCCESS
        );
        nrt_sys_trace_fetch_options_free(opts);
        let doc: serde_json::Value =
            serde_json::from_slice(std::slice::from_raw_parts(buf.cast::<u8>(), len)).unwrap();
        nrt_sys_trace_buffer_free(buf);
        let events = doc["events"].as_array().unwrap();
        assert_eq!(events.len(), 1, "{doc}");
        assert_eq!(events[0]["nc_idx"], 0, "{doc}");
        assert_eq!(nrt_unload(model), NRT_STATUS::NRT_SUCCESS);
        assert_eq!(nrt_sys_trace_stop(), NRT_STATUS::NRT_SUCCESS);
    }
    nrt_close();
}
