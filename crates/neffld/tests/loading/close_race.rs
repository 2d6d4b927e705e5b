//! Close and load are ordered (DESIGN.md point 10): loader threads race
//! `close`, then a re-initialised runtime loads afresh, and every handle of
//! the closed runtime is checked against the new one.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use crate::common::*;
use neffld::api::{LoadError, Model, Runtime};
use neffld::config::{RuntimeConfig, Topology};
use neffld::{Arch, NrtStatus};

const ITERATIONS: usize = 20;
const LOADERS: usize = 16;
/// Loads each loader makes at most (device memory bounds the total).
const LOADS_PER_LOADER: usize = 6;
const FRESH_LOADS: usize = 32;

fn config() -> RuntimeConfig {
    RuntimeConfig {
        topology: Topology {
            arch: Arch::Cayman,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// What one iteration's loaders saw.
#[derive(Default)]
struct Raced {
    loaded: Vec<Model>,
    closed: usize,
}

/// `LOADERS` threads load `bytes` until the runtime closes, spread over the
/// visible logical cores; `close` comes 0–9 ms after the first success.
fn race(rt: &Arc<Runtime>, bytes: &Arc<Vec<u8>>, iteration: usize) -> Raced {
    let visible = rt.visible_vnc_count() as usize;
    let first = Arc::new(AtomicUsize::new(0));
    let start = Arc::new(Barrier::new(LOADERS + 1));
    let loaders: Vec<_> = (0..LOADERS)
        .map(|i| {
            let (rt, bytes, first, start) =
                (rt.clone(), bytes.clone(), first.clone(), start.clone());
            std::thread::spawn(move || {
                let mut out = Raced::default();
                start.wait();
                while out.loaded.len() < LOADS_PER_LOADER {
                    match rt.load(&bytes, Some((i % visible) as u32)) {
                        Ok(m) => {
                            first.fetch_add(1, Ordering::SeqCst);
                            out.loaded.push(m);
                        }
                        Err(LoadError::Closed) => {
                            out.closed += 1;
                            break;
                        }
                        Err(e) => panic!("loader {i}: {e}"),
                    }
                }
                out
            })
        })
        .collect();
    start.wait();
    while first.load(Ordering::SeqCst) == 0 {
        std::thread::yield_now();
    }
    std::thread::sleep(Duration::from_millis((iteration % 10) as u64));
    rt.close();
    let mut all = Raced::default();
    for l in loaders {
        let r = l.join().expect("a loader panicked");
        all.loaded.extend(r.loaded);
        all.closed += r.closed;
    }
    all
}

#[test]
fn loads_racing_close_then_reinit_leave_nothing_and_stale_handles_are_refused() {
    let bytes = Arc::new(fixture("matmul_small.neff"));
    let (mut raced, mut refused, mut stale_checked, mut collisions) = (0, 0, 0, 0);
    for it in 0..ITERATIONS {
        let rt = Arc::new(Runtime::new(config()).unwrap());
        let dev = rt.devices().next().unwrap().clone();
        let r = race(&rt, &bytes, it);
        // Close waited for every load that entered before it and unloaded
        // it; every later load was refused.
        assert_eq!(rt.loaded_models(), 0, "iteration {it}");
        assert_eq!(
            beyond_start(&*dev).len(),
            0,
            "iteration {it}: {:?}",
            dev.live_allocations().first()
        );
        assert!(rt.vnc_claims().iter().all(|&c| c == 0), "iteration {it}");
        for m in &r.loaded {
            assert_eq!(rt.unload(m).unwrap_err().status(), NrtStatus::Closed);
        }
        raced += r.loaded.len();
        refused += r.closed;

        // Re-init: the new runtime hands out the same H_NN values again.
        let rt2 = Runtime::new(config()).unwrap();
        let visible = rt2.visible_vnc_count() as usize;
        let fresh: Vec<Model> = (0..FRESH_LOADS)
            .map(|i| rt2.load(&bytes, Some((i % visible) as u32)).unwrap())
            .collect();
        for stale in &r.loaded {
            // A handle that names one of the new runtime's models by H_NN.
            collisions += usize::from(fresh.iter().any(|f| f.h_nn == stale.h_nn));
            let e = rt2.unload(stale).unwrap_err();
            assert_eq!(e.status(), NrtStatus::InvalidHandle, "iteration {it}: {e}");
            let e = rt2.tensor_info(stale).unwrap_err();
            assert_eq!(e.status(), NrtStatus::InvalidHandle, "iteration {it}: {e}");
            assert!(rt2.with_model(stale, |_| ()).is_err(), "iteration {it}");
            stale_checked += 1;
        }
        assert_eq!(rt2.loaded_models(), FRESH_LOADS, "iteration {it}");
        for m in &fresh {
            rt2.unload(m).unwrap();
        }
        assert_eq!(beyond_start(rt2.devices().next().unwrap()).len(), 0);
        rt2.close();
    }
    println!(
        "{ITERATIONS} iterations of {LOADERS} loaders: {raced} loads completed before a close \
         (and were unloaded by it), {refused} refused with NRT_CLOSED, {stale_checked} stale \
         handles refused by the next runtime ({collisions} of them with the H_NN of one of its models)"
    );
    assert!(raced > 0 && stale_checked == raced && collisions > 0);
}
