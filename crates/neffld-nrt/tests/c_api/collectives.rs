//! Tensor-parallel NEFFs through the C library: `nrt_load` and
//! `nrt_load_collectives` load them, and the log says what the memory
//! figures leave out for their collectives (no public struct has room for
//! them). The calls run in a child process of this binary (libnrt's state is
//! process-wide), whose stderr the parent reads.

use std::ptr;

use neffld_nrt::*;
use neffld_testkit::collectives::{self as cc, Step, World};
use neffld_testkit::Alone;

fn child() {
    // SAFETY: NULL version strings are allowed.
    assert_eq!(
        unsafe { nrt_init(1, ptr::null(), ptr::null()) },
        NRT_STATUS::NRT_SUCCESS
    );
    let sample = cc::sample_neff();
    let rank = World::new(2)
        .with_steps(&[Step::AllReduce(64), Step::SendRecvRing(64), Step::Ids])
        .rank(1);
    let mut a: *mut nrt_model_t = ptr::null_mut();
    let mut b: *mut nrt_model_t = ptr::null_mut();
    // SAFETY: the buffers are readable for their lengths; the out-pointers
    // are writable locals.
    unsafe {
        assert_eq!(
            nrt_load(sample.as_ptr().cast(), sample.len(), -1, -1, &mut a),
            NRT_STATUS::NRT_SUCCESS
        );
        assert_eq!(
            nrt_load_collectives(rank.as_ptr().cast(), rank.len(), -1, -1, 1, 2, &mut b),
            NRT_STATUS::NRT_SUCCESS
        );
        assert_eq!(nrt_unload(a), NRT_STATUS::NRT_SUCCESS);
        assert_eq!(nrt_unload(b), NRT_STATUS::NRT_SUCCESS);
    }
    nrt_close();
}

#[test]
fn collectives_neffs_load_and_the_log_names_what_is_not_counted() {
    let alone = Alone::new(
        module_path!(),
        "collectives_neffs_load_and_the_log_names_what_is_not_counted",
    )
    .env("NEURON_RT_ROOT_COMM_ID", "10.1.2.3:62182")
    .env("NEURON_RT_LOG_LEVEL", "DEBUG")
    .env_remove("NEFFLD_LOG");
    if alone.is_child() {
        child();
        return;
    }
    let out = alone.passed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    let find = |want: &str| {
        lines
            .iter()
            .find(|l| l.contains(want))
            .unwrap_or_else(|| panic!("no line has {want:?}:\n{stderr}"))
    };
    assert!(
        find("nrt_load: nn1: collectives memory not counted: 1 collective in 1 replica group")
            .contains(" INFO ")
    );
    find("nrt_load_collectives: nn2: collectives memory not counted: 3 collectives in 1 replica group");
    let each = find("nrt_load_collectives: nn2 sg00 pe#2 psr send: 64 in, 0 out, peer rank 0");
    assert!(each.contains(" DEBUG "), "{each}");
}
