//! Fault-injection sweeps (stage.md §9, §12): failing any one allocation or
//! write of a load fails it with the device's status and leaves the device,
//! the model table and the logical-core claims exactly as before. So does a
//! panic at any one of them, on the threaded and the single-thread fan-out
//! paths: the staging transaction unwinds through its guards.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Once};

use crate::common::*;
use neffld::api::Runtime;
use neffld::cache::Role;
use neffld::device::{Device, FaultPlan, Geometry, Ledger};
use neffld::ids::PCore;
use neffld::{Arch, NrtStatus};
use neffld_testkit::Synth;

/// How a sweep's faults fire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fire {
    Error,
    Panic,
}

/// Keeps the injected panics out of the test output (other panics still
/// print).
fn quiet_injected_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let msg = info
                .payload()
                .downcast_ref::<String>()
                .map(String::as_str)
                .unwrap_or("");
            if !msg.starts_with("injected panic") {
                default(info);
            }
        }));
    });
}

/// The operations of one load and what the sweep saw.
#[derive(Debug, Default)]
struct Swept {
    allocs: u64,
    writes: u64,
}

/// Fails the k-th allocation for every k, then the k-th write for every k,
/// of a load of `bytes` on the first free logical core (which must be
/// logical core 0), by an error or by a panic. The sweep ends when the fault
/// lands past the last operation and the load succeeds; the allocation count
/// must then equal the allocations a clean load holds. After every failed
/// load the device's live allocations and ledger, the registry and the
/// logical-core claims must be what they were before it.
fn sweep(
    name: &str,
    rt: &Runtime,
    dev: &Device,
    bytes: &[u8],
    expect_role: Option<Role>,
    fire: Fire,
) -> Swept {
    quiet_injected_panics();
    let before: Ledger = dev.ledger();
    let live_before = beyond_start(dev).len();
    let models_before = rt.loaded_models();
    let claims_before = rt.vnc_claims();
    let check_clean = |what: &str| {
        let live = beyond_start(&*dev).len();
        assert_eq!(
            live,
            live_before,
            "{name} {what}: {} allocations leaked: {:?}",
            live.saturating_sub(live_before),
            dev.live_allocations()
        );
        assert!(dev.ledger() == before, "{name} {what}: the ledger changed");
        assert_eq!(rt.loaded_models(), models_before, "{name} {what}");
        assert_eq!(rt.vnc_claims(), claims_before, "{name} {what}: claims");
    };
    // A clean load: how many allocations it holds.
    let m = rt
        .load(bytes, None)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(m.vnc, 0, "{name}");
    if let Some(role) = expect_role {
        assert_eq!(
            rt.with_model(&m, |lm| lm.cache_role).unwrap(),
            role,
            "{name}"
        );
    }
    let held = (beyond_start(dev).len() - live_before) as u64;
    rt.unload(&m).unwrap();
    check_clean("clean load");
    let mut out = Swept::default();
    for (op, plan, status) in [
        (
            "allocation",
            FaultPlan::alloc as fn(u64) -> FaultPlan,
            NrtStatus::Resource,
        ),
        ("write", FaultPlan::write, NrtStatus::Failure),
    ] {
        let (status, says) = match fire {
            Fire::Error => (status, "injected fault"),
            Fire::Panic => (NrtStatus::Failure, "injected panic"),
        };
        let mut k = 1;
        loop {
            let plan = match fire {
                Fire::Error => plan(k),
                Fire::Panic => plan(k).panicking(),
            };
            dev.set_fault_plan(plan);
            let loaded = catch_unwind(AssertUnwindSafe(|| rt.load(bytes, None)));
            let Ok(loaded) = loaded else {
                dev.set_fault_plan(FaultPlan::default());
                check_clean(&format!("{op} {k} (the panic escaped the load)"));
                panic!("{name}: {op} {k}: the panic escaped the load");
            };
            match loaded {
                Ok(m) => {
                    dev.set_fault_plan(FaultPlan::default());
                    // The claim was released every time: still logical core 0.
                    assert_eq!(m.vnc, 0, "{name}: {op} sweep");
                    rt.unload(&m).unwrap();
                    check_clean(op);
                    break;
                }
                Err(e) => {
                    check_clean(&format!("{op} {k}"));
                    assert_eq!(e.status(), status, "{name}: {op} {k}: {e}");
                    assert!(e.to_string().contains(says), "{name}: {op} {k}: {e}");
                }
            }
            k += 1;
            assert!(k < 100_000, "{name}: the {op} sweep does not end");
        }
        if op == "allocation" {
            out.allocs = k - 1;
        } else {
            out.writes = k - 1;
        }
    }
    dev.set_fault_plan(FaultPlan::default());
    assert_eq!(
        out.allocs, held,
        "{name}: every allocation of a load stays held until unload"
    );
    assert!(out.writes > 0, "{name}");
    out
}

/// Runs `f` while a second load of `bytes` on logical core `holder_vnc`
/// (physical cores `holder_cores`) is parked inside its first allocation:
/// the parse cache stays READY, so the loads `f` makes reuse the parse and
/// skip the inflate. Returns after the held load has finished and unloaded.
fn with_holder<R>(
    rt: &Arc<Runtime>,
    dev: &Arc<GateDevice>,
    bytes: &[u8],
    holder_vnc: u32,
    holder_cores: std::ops::Range<u32>,
    f: impl FnOnce() -> R,
) -> R {
    dev.gate.close(holder_cores);
    let holder = {
        let (rt, bytes) = (rt.clone(), bytes.to_vec());
        std::thread::spawn(move || rt.load(&bytes, Some(holder_vnc)))
    };
    dev.gate.wait_parked(1);
    let r = f();
    dev.gate.open();
    let m = holder.join().unwrap().unwrap();
    assert_eq!(m.vnc, holder_vnc);
    rt.unload(&m).unwrap();
    assert!(!dev.gate.timed_out());
    r
}

/// Sweeps every fixture on logical core 0 while logical core 3 holds the
/// parse cache; returns the allocations and writes swept in all.
fn sweep_fixtures(fire: Fire) -> (u64, u64) {
    let mut total = (0, 0);
    for (name, bytes) in all_fixtures() {
        let (rt, dev) = gated_runtime(Geometry::for_arch(Arch::Cayman), None, 1);
        let rt = Arc::new(rt);
        let swept = with_holder(&rt, &dev, &bytes, 3, 6..8, || {
            sweep(&name, &rt, &dev, &bytes, Some(Role::Reuse), fire)
        });
        assert_eq!(beyond_start(&dev).len(), 0, "{name}");
        println!(
            "{name} ({fire:?}): {} allocations, {} writes swept",
            swept.allocs, swept.writes
        );
        total.0 += swept.allocs;
        total.1 += swept.writes;
    }
    total
}

/// Every fixture, every allocation and every write.
#[test]
fn every_fixture_rolls_back_from_every_allocation_and_write_failure() {
    let (allocs, writes) = sweep_fixtures(Fire::Error);
    println!("total: {allocs} allocation faults, {writes} write faults");
}

/// Every fixture, a panic at every allocation and every write.
#[test]
fn every_fixture_unwinds_from_a_panic_at_every_allocation_and_write() {
    let (allocs, writes) = sweep_fixtures(Fire::Panic);
    println!("total: {allocs} allocation panics, {writes} write panics");
}

/// A panic at every allocation and every write of an 8-subgraph load, with
/// the builds on one thread each and with all on the caller's thread; each
/// time the next clean load takes logical core 0 again.
#[test]
fn a_multi_core_load_unwinds_from_a_panic_on_both_fan_out_paths() {
    let bytes = synth_n_bytes(8, true);
    for (path, fanout_min_bytes) in [("threaded", 0), ("single-thread", u64::MAX)] {
        let (rt, dev) = gated_runtime_fanout(
            Geometry::custom(Arch::Cayman, 16, 8, 4 << 30).unwrap(),
            Some(8),
            1,
            fanout_min_bytes,
        );
        let rt = Arc::new(rt);
        let name = format!("synth8 {path}");
        let swept = with_holder(&rt, &dev, &bytes, 1, 8..16, || {
            sweep(&name, &rt, &dev, &bytes, Some(Role::Reuse), Fire::Panic)
        });
        assert!(swept.allocs >= 8 * 5, "{name}: {swept:?}");
        assert_eq!(beyond_start(&dev).len(), 0, "{name}");
        assert_eq!(rt.vnc_claims(), vec![0, 0], "{name}");
        println!(
            "{name}: {} allocation panics, {} write panics swept",
            swept.allocs, swept.writes
        );
    }
}

/// A 16-subgraph writer-built NEFF with LNC 16, with the header declaring
/// LNC 16 and with it declaring none: first a clean load on a 16-core
/// device, then the sweep on logical core 0 of a 32-core device (logical
/// core 1 holds the parse cache).
#[test]
fn a_16_subgraph_neff_rolls_back_from_every_failure() {
    for declare in [true, false] {
        let bytes = synth_n_bytes(16, declare);
        let (rt, dev) = runtime_on(
            Geometry::custom(Arch::Cayman, 16, 8, 4 << 30).unwrap(),
            Some(16),
        );
        let m = rt.load(&bytes, None).unwrap();
        rt.with_model(&m, |lm| {
            let cores: Vec<u32> = lm.cores.iter().map(|c| c.pcore().0).collect();
            assert_eq!(cores, (0..16).collect::<Vec<_>>());
        })
        .unwrap();
        rt.unload(&m).unwrap();
        assert_eq!(beyond_start(&*dev).len(), 0);

        let (rt, dev) = gated_runtime(
            Geometry::custom(Arch::Cayman, 32, 16, 4 << 30).unwrap(),
            Some(16),
            1,
        );
        let rt = Arc::new(rt);
        let swept = with_holder(&rt, &dev, &bytes, 1, 16..32, || {
            sweep("synth16", &rt, &dev, &bytes, Some(Role::Reuse), Fire::Error)
        });
        assert!(swept.allocs >= 16 * 5, "{swept:?}");
        println!(
            "synth16 (LNC declared: {declare}): {} allocations, {} writes swept",
            swept.allocs, swept.writes
        );
    }
}

/// 256 subgraphs on a 256-core device (LNC 256): the load stages, and
/// failing the first allocation on core 200 — in the memory plan (sg200 has
/// a weight) or in its core build (sg200 has none) — rolls back all 255
/// other cores.
#[test]
fn a_256_subgraph_load_stages_and_a_failure_on_core_200_rolls_back_all_others() {
    let geometry = Geometry::custom(Arch::Cayman, 256, 64, 2 << 30).unwrap();
    let (rt, dev) = runtime_on(geometry, Some(256));
    let empty = dev.ledger();
    let s = Synth::dynamic_cayman_n(256);
    let bytes = write_with_lnc(&s, 256, true);
    let m = rt.load(&bytes, None).unwrap_or_else(|e| panic!("{e}"));
    rt.with_model(&m, |lm| {
        assert_eq!(lm.cores.len(), 256);
        for (i, c) in lm.cores.iter().enumerate() {
            assert_eq!(c.pcore(), PCore(i as u32));
            assert_eq!(c.subgraph, format!("sg{i:02}"));
        }
    })
    .unwrap();
    let cores_used: std::collections::BTreeSet<u32> =
        dev.live_allocations().iter().map(|a| a.core.0).collect();
    assert_eq!(cores_used.len(), 256, "every core holds allocations");
    rt.unload(&m).unwrap();
    assert_eq!(beyond_start(&*dev).len(), 0);

    // sg200 without a weight: its first allocation is made by its core build.
    let mut no_weight = s.clone();
    no_weight.edit("sg200/def.json", |v| {
        v["var"].as_object_mut().unwrap().remove("w_sg0000");
    });
    no_weight.remove("sg200/value_sg0000_w_CRSM.npy");
    let no_weight = write_with_lnc(&no_weight, 256, true);

    for (what, bytes) in [("plan", &bytes), ("core build", &no_weight)] {
        dev.set_fault_plan(FaultPlan::alloc_on_core(PCore(200)));
        let e = rt.load(bytes, None).unwrap_err();
        assert_eq!(e.status(), NrtStatus::Resource, "{what}: {e}");
        assert!(e.to_string().contains("sg200"), "{what}: {e}");
        println!("{what}: {e}");
        assert_eq!(
            beyond_start(&*dev).len(),
            0,
            "{what}: {:?}",
            dev.live_allocations().first()
        );
        assert!(dev.ledger() == empty, "{what}: the ledger is not empty");
        assert_eq!(rt.loaded_models(), 0);
        dev.set_fault_plan(FaultPlan::default());
        let m = rt
            .load(bytes, None)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        rt.unload(&m).unwrap();
        assert_eq!(beyond_start(&*dev).len(), 0);
    }
}
