//! Model lifecycle acceptance (stage.md §4, §10, §11, §16): the parse cache
//! under concurrent loads, repeated load/unload, and the unload guards.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use crate::common::*;
use neffld::api::{Model, Runtime};
use neffld::cache::Role;
use neffld::container::writer::Producer;
use neffld::device::{Device, Geometry};
use neffld::ids::{HNn, LCore};
use neffld::registry::{Registry, RegistryError, STATE_READY};
use neffld::{Arch, NrtStatus};
use neffld_testkit::Synth;

/// Runs `f` on its own thread and fails the test if it is not done in time.
fn watchdog<R: Send + 'static>(secs: u64, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(r) => {
            worker.join().unwrap();
            r
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("not done within {secs} s: deadlock?"),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            // The worker panicked: surface its panic.
            match worker.join() {
                Err(p) => std::panic::resume_unwind(p),
                Ok(()) => unreachable!("the worker sent nothing but returned"),
            }
        }
    }
}

/// 16 threads load the same NEFF at once, each on its own logical core of a
/// 32-core device: one parse. The device parks every load in its first
/// allocation until all 16 are staging, so all 16 provably overlap the
/// creator's hold on the cache slot (no timing luck involved).
#[test]
fn sixteen_concurrent_loads_of_one_neff_parse_it_once() {
    watchdog(120, || {
        let geometry = Geometry::custom(Arch::Cayman, 32, 16, 4 << 30).unwrap();
        let (rt, dev) = gated_runtime(geometry, None, 1);
        let rt = Arc::new(rt);
        assert_eq!(rt.visible_vnc_count(), 16);
        let bytes = Arc::new(fixture("matmul_small.neff"));
        dev.gate.latch(16, 2);
        let start = Arc::new(Barrier::new(16));
        let threads: Vec<_> = (0..16)
            .map(|_| {
                let (rt, bytes, start) = (rt.clone(), bytes.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    rt.load(&bytes, None)
                })
            })
            .collect();
        let models: Vec<Model> = threads
            .into_iter()
            .map(|t| t.join().unwrap().unwrap())
            .collect();
        assert!(!dev.gate.timed_out(), "the loads never overlapped");
        assert_eq!(rt.parse_count(), 1, "one parse for 16 loads");
        let roles: Vec<Role> = models
            .iter()
            .map(|m| rt.with_model(m, |lm| lm.cache_role).unwrap())
            .collect();
        assert_eq!(
            roles.iter().filter(|r| **r == Role::Creator).count(),
            1,
            "{roles:?}"
        );
        assert!(
            roles
                .iter()
                .all(|r| matches!(r, Role::Creator | Role::Reuse | Role::ReuseAfterWait)),
            "{roles:?}"
        );
        let mut vncs: Vec<u32> = models.iter().map(|m| m.vnc).collect();
        vncs.sort();
        assert_eq!(vncs, (0..16).collect::<Vec<_>>());
        for m in &models {
            rt.unload(m).unwrap();
        }
        assert_eq!(beyond_start(&dev).len(), 0);
        assert_eq!(rt.loaded_models(), 0);
        println!("16 loads, roles {roles:?}, {} parse", rt.parse_count());
    });
}

/// 16 threads over 4 NEFFs, one of which fails its parse, for several
/// rounds: no deadlock, every load succeeds or fails with the injected
/// status, and afterwards the ledger, the registry and the cache are empty.
#[test]
fn concurrent_loads_with_a_failing_parse_neither_deadlock_nor_leak() {
    watchdog(60, || {
        let mut broken = Synth::dynamic_cayman();
        broken.edit("sg00/def.json", |v| {
            v["var"]["w_sg0000"]["alignment"] = serde_json::json!(3);
        });
        let neffs: Arc<Vec<Vec<u8>>> = Arc::new(vec![
            fixture("matmul_small.neff"),
            fixture("kfusion__fused_attention__fused.neff"),
            Synth::dynamic_cayman().write(Producer::V2_21),
            broken.write(Producer::V2_21),
        ]);
        let (rt, dev) = runtime(Arch::Cayman);
        let empty = dev.ledger();
        let rt = Arc::new(rt);
        // The injected failure, alone.
        let injected = rt.load(&neffs[3], Some(0)).unwrap_err();
        assert_eq!(injected.status(), NrtStatus::Invalid, "{injected}");
        let message = injected.to_string();
        assert!(message.contains("alignment"), "{message}");
        let (mut ok, mut failed) = (0, 0);
        for round in 0..3 {
            let start = Arc::new(Barrier::new(16));
            let threads: Vec<_> = (0..16usize)
                .map(|i| {
                    let (rt, neffs, start) = (rt.clone(), neffs.clone(), start.clone());
                    std::thread::spawn(move || {
                        start.wait();
                        let which = (i + round) % 4;
                        (which, rt.load(&neffs[which], Some((i % 4) as u32)))
                    })
                })
                .collect();
            let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
            for (which, r) in &results {
                match (which, r) {
                    (3, Err(e)) => {
                        assert_eq!(e.status(), NrtStatus::Invalid);
                        assert_eq!(e.to_string(), message);
                        failed += 1;
                    }
                    (3, Ok(_)) => panic!("the broken NEFF loaded"),
                    (_, Ok(_)) => ok += 1,
                    (w, Err(e)) => panic!("NEFF {w} failed: {e}"),
                }
            }
            for (_, r) in results {
                if let Ok(m) = r {
                    rt.unload(&m).unwrap();
                }
            }
            assert_eq!(rt.loaded_models(), 0);
            assert_eq!(
                beyond_start(&*dev).len(),
                0,
                "round {round}: {:?}",
                dev.live_allocations()
            );
            assert!(
                dev.ledger() == empty,
                "round {round}: the ledger is not empty"
            );
        }
        assert_eq!((ok, failed), (36, 12));
        // The cache is empty: with one slot, a load can only be its creator
        // when no slot is busy, and every NEFF gets parsed afresh.
        for (i, bytes) in neffs.iter().enumerate().take(3) {
            let before = rt.parse_count();
            let m = rt.load(bytes, Some(0)).unwrap();
            assert_eq!(
                rt.with_model(&m, |lm| lm.cache_role).unwrap(),
                Role::Creator,
                "NEFF {i}"
            );
            assert_eq!(rt.parse_count(), before + 1);
            rt.unload(&m).unwrap();
        }
        assert_eq!(beyond_start(&*dev).len(), 0);
        println!(
            "{ok} loads succeeded, {failed} failed as injected; {} parses",
            rt.parse_count()
        );
    });
}

fn cycles(rt: &Runtime, dev: &Device, bytes: &[u8], n: usize, label: &str) -> (u64, u64) {
    let empty = dev.ledger();
    let first = rss_bytes();
    let t = Instant::now();
    for i in 0..n {
        let m = rt
            .load(bytes, Some(0))
            .unwrap_or_else(|e| panic!("{label} cycle {i}: {e}"));
        rt.unload(&m).unwrap();
        assert_eq!(beyond_start(dev).len(), 0, "{label} cycle {i}");
    }
    let last = rss_bytes();
    assert!(dev.ledger() == empty, "{label}: the ledger is not empty");
    assert_eq!(rt.loaded_models(), 0, "{label}");
    println!(
        "{label}: {n} load/unload cycles in {:.1?}, VmRSS first {:.1} MiB, last {:.1} MiB",
        t.elapsed(),
        first as f64 / (1 << 20) as f64,
        last as f64 / (1 << 20) as f64
    );
    assert!(
        last < first + (64 << 20),
        "{label}: host RSS grew from {first} to {last} bytes"
    );
    (first, last)
}

/// 1,000 load/unload cycles of matmul_small: nothing left on the device or
/// in the registry, and host memory does not grow. A parked load on logical
/// core 3 keeps the parse cached, so the cycles exercise staging and unload
/// (a debug-build inflate costs ~60 ms); 50 more cycles parse every time.
/// `NEFFLD_LONG=1` runs all 1,000 cycles with a parse each. The resident
/// set is the process's: the test runs alone in a child process, where no
/// other test's allocations move it.
#[test]
fn a_thousand_load_unload_cycles_leave_nothing_behind() {
    if neffld_testkit::ran_alone(
        module_path!(),
        "a_thousand_load_unload_cycles_leave_nothing_behind",
    ) {
        return;
    }
    let bytes = fixture("matmul_small.neff");
    let long = std::env::var("NEFFLD_LONG").is_ok_and(|v| v == "1");
    let (rt, dev) = gated_runtime(Geometry::for_arch(Arch::Cayman), None, 1);
    let rt = Arc::new(rt);
    if long {
        cycles(&rt, &dev, &bytes, 1000, "parsed every cycle");
        return;
    }
    cycles(&rt, &dev, &bytes, 50, "parsed every cycle");
    let parses = rt.parse_count();
    dev.gate.close(6..8);
    let holder = {
        let (rt, bytes) = (rt.clone(), bytes.clone());
        std::thread::spawn(move || rt.load(&bytes, Some(3)))
    };
    dev.gate.wait_parked(1);
    cycles(&rt, &dev, &bytes, 1000, "parse cached");
    assert_eq!(
        rt.parse_count(),
        parses + 1,
        "the cycles reused the held parse"
    );
    dev.gate.open();
    let m = holder.join().unwrap().unwrap();
    rt.unload(&m).unwrap();
    assert_eq!(beyond_start(&dev).len(), 0);
}

/// Unload guards: an unknown handle and a double unload → 3, a failed
/// unload changes nothing.
#[test]
fn unload_of_unknown_or_already_unloaded_handles() {
    let (rt, dev) = runtime(Arch::Cayman);
    let bytes = fixture("matmul_small.neff");
    let m = rt.load(&bytes, None).unwrap();
    let stranger = Model {
        runtime: m.runtime,
        h_nn: HNn(m.h_nn.0 + 1000),
        vnc: 0,
        lcore: LCore(0),
        name: "file.neff".into(),
        uuid: m.uuid,
        gid: None,
    };
    let e = rt.unload(&stranger).unwrap_err();
    assert_eq!(e.status(), NrtStatus::InvalidHandle);
    assert_eq!(e.status().code(), 3);
    assert_eq!(
        e.to_string(),
        format!("Failed to find model: {}", stranger.h_nn.0)
    );
    // Nothing changed: the real model is intact, its claim too.
    assert_eq!(rt.loaded_models(), 1);
    assert!(rt.with_model(&m, |lm| lm.cores.len()).unwrap() == 2);
    assert_eq!(
        rt.load(&bytes, None).map(|n| n.vnc).ok(),
        Some(1),
        "core 0 still claimed"
    );
    rt.unload(&m).unwrap();
    let e = rt.unload(&m).unwrap_err();
    assert_eq!(e.status().code(), 3, "double unload: {e}");
    assert_eq!(
        rt.with_model(&m, |_| ()).unwrap_err().status(),
        NrtStatus::InvalidHandle
    );
    rt.close();
    assert_eq!(
        beyond_start(&*dev).len(),
        0,
        "close unloaded the other model"
    );
}

/// Unload while another thread holds the model: the entry is erased at
/// once (new lookups fail with 3) but teardown waits for the holder.
#[test]
fn unload_waits_for_a_held_reference() {
    let (rt, dev) = runtime(Arch::Cayman);
    let rt = Arc::new(rt);
    let m = rt.load(&fixture("matmul_small.neff"), None).unwrap();
    let inside = Arc::new(Barrier::new(2));
    let released = Arc::new(AtomicBool::new(false));
    let holder = {
        let (rt, m, inside, released) = (rt.clone(), m.clone(), inside.clone(), released.clone());
        std::thread::spawn(move || {
            rt.with_model(&m, |lm| {
                inside.wait();
                std::thread::sleep(Duration::from_millis(300));
                // Still staged while held: the images are live.
                assert!(lm.cores.iter().all(|c| !c.allocs.is_empty()));
                released.store(true, Ordering::SeqCst);
            })
            .unwrap()
        })
    };
    inside.wait();
    let live = beyond_start(&*dev).len();
    let t = Instant::now();
    let unloader = {
        let (rt, m) = (rt.clone(), m.clone());
        std::thread::spawn(move || rt.unload(&m))
    };
    // The erase is the commit point: soon no one can find the model.
    let deadline = Instant::now() + Duration::from_secs(10);
    while rt.loaded_models() != 0 {
        assert!(Instant::now() < deadline, "unload never erased the entry");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(
        rt.with_model(&m, |_| ()).unwrap_err().status(),
        NrtStatus::InvalidHandle
    );
    if !released.load(Ordering::SeqCst) {
        assert_eq!(
            beyond_start(&*dev).len(),
            live,
            "nothing freed while the reference is held"
        );
    }
    unloader.join().unwrap().unwrap();
    assert!(
        released.load(Ordering::SeqCst),
        "unload returned while the model was in use"
    );
    assert!(
        t.elapsed() >= Duration::from_millis(200),
        "{:?}",
        t.elapsed()
    );
    holder.join().unwrap();
    assert_eq!(beyond_start(&*dev).len(), 0);
}

/// A model not in the READY state cannot be unloaded (→ 2) and stays
/// registered. The runtime never stores another state, so this is shown on
/// the registry it uses.
#[test]
fn unload_of_a_model_in_the_wrong_state() {
    let reg: Registry<&str> = Registry::default();
    let h = reg.register("model");
    assert_eq!(reg.acquire(h).unwrap().state(), STATE_READY);
    reg.acquire(h).unwrap().set_state(1);
    let e = reg.remove(h).map(|_| ()).unwrap_err();
    assert_eq!(
        e,
        RegistryError::WrongState {
            h_nn: h.0,
            state: 1
        }
    );
    assert_eq!(e.status(), NrtStatus::Invalid);
    assert_eq!(
        e.to_string(),
        format!("DLR {} state 1, must be stopped before unloading", h.0)
    );
    assert_eq!(reg.len(), 1, "a refused unload keeps the entry");
    reg.acquire(h).unwrap().set_state(STATE_READY);
    assert_eq!(reg.remove(h).unwrap().model, "model");
    assert!(reg.is_empty());
    assert_eq!(
        reg.remove(h).map(|_| ()).unwrap_err().status(),
        NrtStatus::InvalidHandle
    );
}
