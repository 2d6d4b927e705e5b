//! The retained parse cache (`NEFFLD_CACHE_RETAIN`, `RuntimeConfig::cache_retain`)
//! through whole loads: replicas parse once, different NEFFs never share a
//! parse, and concurrent loads, unloads and evictions leave nothing behind.

use std::sync::Arc;

use crate::common::*;
use neffld::api::Runtime;
use neffld::cache::Role;
use neffld::config::{Loader, RuntimeConfig, Topology};
use neffld::container::NeffHeader;
use neffld::device::{Geometry, SimDevice};
use neffld::manifest::tensor::TensorInfo;
use neffld::Arch;

/// A runtime on 8 logical cores (16 physical, LNC 2) keeping `retain` parses.
fn retaining(retain: usize) -> (Runtime, Arc<SimDevice>) {
    let geometry = Geometry::custom(Arch::Cayman, 16, 8, 4 << 30).unwrap();
    let dev = Arc::new(SimDevice::new(geometry));
    let cfg = RuntimeConfig {
        topology: Topology {
            arch: Arch::Cayman,
            ..Default::default()
        },
        loader: Loader {
            check: true,
            cache_retain: retain,
            ..Default::default()
        },
        ..Default::default()
    };
    (Runtime::with_device(cfg, dev.clone()).unwrap(), dev)
}

/// What a load of `bytes` must report: its header's name and uuid, and the
/// tensors of a parse of its own (no cache involved).
fn expected(bytes: &[u8]) -> (String, [u8; 16], std::sync::Arc<[TensorInfo]>) {
    let h = NeffHeader::parse(bytes).unwrap();
    let (_, model) = parse(bytes, Arch::Cayman, 2);
    (h.name_str(), h.uuid, model.tensor_info())
}

#[test]
fn replicas_on_eight_cores_parse_once_with_retention_and_eight_times_without() {
    let bytes = fixture("matmul_small.neff");
    let want = expected(&bytes);
    for (retain, parses) in [(1, 1), (0, 8)] {
        let (rt, dev) = retaining(retain);
        for core in 0..8 {
            // Each replica is unloaded before the next: only retention can
            // carry the parse from one to the next.
            let m = rt.load(&bytes, Some(core)).unwrap();
            let (role, tensors) = rt
                .with_model(&m, |lm| (lm.cache_role, lm.tensors.clone()))
                .unwrap();
            let first = if core == 0 {
                Role::Creator
            } else {
                Role::Reuse
            };
            assert_eq!(
                role,
                if retain > 0 { first } else { Role::Creator },
                "core {core}"
            );
            assert_eq!((m.name.clone(), m.uuid, tensors), want.clone());
            rt.unload(&m).unwrap();
        }
        assert_eq!(rt.parse_count(), parses, "retain {retain}");
        assert_eq!(beyond_start(&*dev).len(), 0);
    }
}

#[test]
fn two_neffs_alternating_through_one_retained_slot_never_share() {
    let a = fixture("matmul_small.neff");
    let b = fixture("matmul_large.neff");
    let (want_a, want_b) = (expected(&a), expected(&b));
    let (rt, dev) = retaining(1);
    for (i, (bytes, want)) in [(&a, &want_a), (&b, &want_b), (&a, &want_a), (&a, &want_a)]
        .into_iter()
        .enumerate()
    {
        let m = rt.load(bytes, None).unwrap();
        let tensors = rt.with_model(&m, |lm| lm.tensors.clone()).unwrap();
        assert_eq!((m.name.clone(), m.uuid, tensors), want.clone(), "load {i}");
        rt.unload(&m).unwrap();
    }
    // a, b (evicts a), a (evicts b), a again from the cache.
    assert_eq!(rt.parse_count(), 3);
    assert_eq!(beyond_start(&*dev).len(), 0);
}

/// Four threads load and unload three NEFFs in a churning order, with two
/// parses retained: every model is the one its file describes, and at the
/// end nothing is registered or allocated.
#[test]
fn concurrent_loads_unloads_and_evictions_keep_every_model_its_own() {
    let files: Vec<Vec<u8>> = [
        "matmul_small.neff",
        "matmul_large.neff",
        "kfusion__fused_attention__fused.neff",
    ]
    .iter()
    .map(|n| fixture(n))
    .collect();
    let wants: Vec<_> = files.iter().map(|f| expected(f)).collect();
    let (rt, dev) = retaining(2);
    std::thread::scope(|s| {
        for t in 0..4usize {
            let (rt, files, wants) = (&rt, &files, &wants);
            s.spawn(move || {
                for i in 0..12usize {
                    let f = (t * 5 + i * (t + 1)) % files.len();
                    let m = rt.load(&files[f], None).unwrap();
                    let tensors = rt.with_model(&m, |lm| lm.tensors.clone()).unwrap();
                    assert_eq!((m.name.clone(), m.uuid, tensors), wants[f].clone());
                    rt.unload(&m).unwrap();
                }
            });
        }
    });
    assert!(rt.parse_count() < 48, "some loads shared a parse");
    assert_eq!(rt.loaded_models(), 0);
    assert_eq!(beyond_start(&*dev).len(), 0);
}
