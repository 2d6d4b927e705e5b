//! A C client on a named instance (`NEFFLD_INSTANCE`): the counts cover
//! every chip, `nrt_get_instance_info` names the family and size, and a
//! load and a tensor on a logical core of another chip land there, as
//! `nrt_get_vnc_memory_stats` shows. Then, on the same instance's chip
//! (trn1's), the device-memory documentation's two-NEFF scratchpad example
//! under each runtime's default, re-reading the environment at each
//! `nrt_init`. It runs in a process of its own: nothing else reads that
//! environment.

use std::ptr;

use neffld_nrt::*;

#[test]
fn an_inf2_24xlarge_has_six_chips_of_two_cores() {
    if neffld_testkit::ran_alone(
        module_path!(),
        "an_inf2_24xlarge_has_six_chips_of_two_cores",
    ) {
        return;
    }
    // The only test of this binary: nothing else reads the environment.
    std::env::set_var("NEFFLD_INSTANCE", "inf2.24xlarge");
    let (mut total, mut visible) = (0u32, 0u32);
    let mut inst = nrt_instance_info_t {
        family: 0,
        size: 0,
        arch_name: [0; 16],
        device_revision: [0; 8],
    };
    // SAFETY: every out-pointer is a writable local of its type's size.
    unsafe {
        assert_eq!(nrt_get_total_vnc_count(&mut total), NRT_STATUS::NRT_SUCCESS);
        assert_eq!(
            nrt_get_visible_vnc_count(&mut visible),
            NRT_STATUS::NRT_SUCCESS
        );
        let len = std::mem::size_of::<nrt_instance_info_t>();
        assert_eq!(
            nrt_get_instance_info(&mut inst, len),
            NRT_STATUS::NRT_SUCCESS
        );
        assert_eq!(
            nrt_init(1, ptr::null(), ptr::null()),
            NRT_STATUS::NRT_SUCCESS
        );
    }
    // The SDK's inf2.24xlarge: six Inferentia2 chips of two NeuronCores.
    assert_eq!((total, visible), (12, 12));
    assert_eq!(
        (inst.family, inst.size),
        (NRT_INSTANCE_INF2, NRT_INSTANCE_SIZE_24XL)
    );
    let demo = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/demo.neff"
    ))
    .unwrap();
    let mut model: *mut nrt_model_t = ptr::null_mut();
    let mut t: *mut nrt_tensor_t = ptr::null_mut();
    let mut stats = nrt_vnc_memory_stats_t {
        bytes_used: 0,
        bytes_limit: 0,
    };
    let size = std::mem::size_of::<nrt_vnc_memory_stats_t>();
    let used = |vnc: u32, stats: &mut nrt_vnc_memory_stats_t| {
        // SAFETY: `stats` is writable for `size` bytes.
        let s = unsafe { nrt_get_vnc_memory_stats(vnc, stats, size, ptr::null_mut()) };
        assert_eq!(s, NRT_STATUS::NRT_SUCCESS);
        stats.bytes_used
    };
    let (idle11, idle0) = (used(11, &mut stats), used(0, &mut stats));
    // SAFETY: `demo` is readable for its length; out-pointers are writable.
    unsafe {
        let s = nrt_load(demo.as_ptr().cast(), demo.len(), 11, -1, &mut model);
        assert_eq!(s, NRT_STATUS::NRT_SUCCESS);
        let placement = nrt_tensor_placement_t::NRT_TENSOR_PLACEMENT_DEVICE as u32;
        let s = nrt_tensor_allocate(placement, 11, 1 << 30, c"kv".as_ptr(), &mut t);
        assert_eq!(s, NRT_STATUS::NRT_SUCCESS);
    }
    assert!(
        used(11, &mut stats) >= idle11 + (1 << 30),
        "ND 5's core holds both"
    );
    assert_eq!(used(0, &mut stats), idle0, "ND 0 holds none of it");
    // A 20 GiB tensor does not fit a 16 GiB HBM of a chip.
    let mut big: *mut nrt_tensor_t = ptr::null_mut();
    // SAFETY: as above.
    let s = unsafe {
        nrt_tensor_allocate(
            nrt_tensor_placement_t::NRT_TENSOR_PLACEMENT_DEVICE as u32,
            10,
            20 << 30,
            c"big".as_ptr(),
            &mut big,
        )
    };
    assert_eq!(s, NRT_STATUS::NRT_RESOURCE);
    // SAFETY: `t` and `model` came from the calls above.
    unsafe {
        nrt_tensor_free(&mut t);
        assert_eq!(nrt_unload(model), NRT_STATUS::NRT_SUCCESS);
    }
    nrt_close();
    the_documented_scratchpad_example_under_each_line();
}

/// The documentation's NEFF A (`a_var1` 512 MB at 0, `a_var2` 1 GB at
/// 512 MB) and NEFF B (`b_var1` 100 MB at 0, `b_var2` 1.5 GB at 100 MB)
/// loaded on one core through the C library: by default (the newest line, the
/// contiguous region) they add the largest need rounded up to 64 MiB —
/// 1,636 MiB to 1.625 GiB — page size or not; with
/// `NEURON_RT_CONTIGUOUS_SCRATCHPAD=0` (or on 2.30) the paged mode's 2 GiB
/// of 512 MiB pages and 2.5 GiB of private variables, 4.5 GiB. The
/// figures are the documentation's rules applied here, not ours.
fn the_documented_scratchpad_example_under_each_line() {
    const MIB: u64 = 1 << 20;
    let a = neffld_testkit::scratchpad_example("neff_a", [(0, 512 * MIB), (512 * MIB, 1024 * MIB)]);
    let b = neffld_testkit::scratchpad_example("neff_b", [(0, 100 * MIB), (100 * MIB, 1536 * MIB)]);
    let added = |env: &[(&str, &str)]| -> u64 {
        for (k, v) in env {
            std::env::set_var(k, v);
        }
        let mut stats = nrt_vnc_memory_stats_t {
            bytes_used: 0,
            bytes_limit: 0,
        };
        let size = std::mem::size_of::<nrt_vnc_memory_stats_t>();
        let mut used = || {
            // SAFETY: `stats` is writable for `size` bytes.
            let s = unsafe { nrt_get_vnc_memory_stats(0, &mut stats, size, ptr::null_mut()) };
            assert_eq!(s, NRT_STATUS::NRT_SUCCESS);
            stats.bytes_used
        };
        // SAFETY: the NEFFs are readable for their lengths; out-pointers
        // are writable locals; the models are unloaded before the close.
        unsafe {
            assert_eq!(
                nrt_init(1, ptr::null(), ptr::null()),
                NRT_STATUS::NRT_SUCCESS
            );
            let idle = used();
            let (mut ma, mut mb): (*mut nrt_model_t, *mut nrt_model_t) =
                (ptr::null_mut(), ptr::null_mut());
            assert_eq!(
                nrt_load(a.as_ptr().cast(), a.len(), 0, -1, &mut ma),
                NRT_STATUS::NRT_SUCCESS
            );
            assert_eq!(
                nrt_load(b.as_ptr().cast(), b.len(), 0, -1, &mut mb),
                NRT_STATUS::NRT_SUCCESS
            );
            let added = (used() - idle) as u64;
            assert_eq!(nrt_unload(mb), NRT_STATUS::NRT_SUCCESS);
            assert_eq!(nrt_unload(ma), NRT_STATUS::NRT_SUCCESS);
            nrt_close();
            for (k, _) in env {
                std::env::remove_var(k);
            }
            added
        }
    };
    let region = (100 * MIB + 1536 * MIB).div_ceil(64 * MIB) * 64 * MIB;
    let paged = 4 * 512 * MIB + 1024 * MIB + 1536 * MIB;
    // Each NEFF's code, weights and rings add a little besides.
    let about = |added: u64, scratchpad: u64| {
        assert!(
            (scratchpad..scratchpad + 4 * MIB).contains(&added),
            "{added} bytes added for {scratchpad} of scratchpad"
        );
    };
    let contiguous = added(&[]);
    about(contiguous, region);
    assert_eq!(
        added(&[("NEURON_SCRATCHPAD_PAGE_SIZE", "2048")]),
        contiguous
    );
    about(added(&[("NEURON_RT_CONTIGUOUS_SCRATCHPAD", "0")]), paged);
    about(added(&[("NEFFLD_RUNTIME", "2.30")]), paged);
}
