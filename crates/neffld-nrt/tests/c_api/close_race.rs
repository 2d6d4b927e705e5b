//! `nrt_load` racing `nrt_close`, then `nrt_init` and fresh loads, through
//! the exported functions (in a process of its own: the runtime state is
//! process-wide). Every raced load either succeeded before the close (which
//! freed its handle) or failed with `NRT_CLOSED`; no handle of the closed
//! runtime reaches a model of the new one.

use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use neffld_nrt::*;

const ITERATIONS: usize = 20;
const LOADERS: usize = 16;
const LOADS_PER_LOADER: usize = 4;
const FRESH_LOADS: usize = 32;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../../testdata/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A loaded model's handle as a number (raw pointers are not `Send`).
fn load(bytes: &[u8], vnc: i32) -> (NRT_STATUS, usize) {
    let mut model: *mut nrt_model_t = ptr::null_mut();
    // SAFETY: `bytes` is readable for its length; `model` is writable.
    let s = unsafe { nrt_load(bytes.as_ptr().cast(), bytes.len(), vnc, -1, &mut model) };
    (s, model as usize)
}

/// `nrt_unload` of a handle this test got from `nrt_load`; one that a close
/// freed is refused by the handle registry without being dereferenced.
fn unload(h: usize) -> NRT_STATUS {
    // SAFETY: the pointer is only looked up in the live-handle registry
    // before any use.
    unsafe { nrt_unload(h as *mut nrt_model_t) }
}

fn init() {
    // SAFETY: NULL version strings are allowed.
    let s = unsafe { nrt_init(1, ptr::null(), ptr::null()) };
    assert_eq!(s, NRT_STATUS::NRT_SUCCESS);
}

fn visible_cores() -> i32 {
    let mut n = 0u32;
    // SAFETY: `n` is writable.
    assert_eq!(
        unsafe { nrt_get_visible_nc_count(&mut n) },
        NRT_STATUS::NRT_SUCCESS
    );
    n as i32
}

#[test]
fn nrt_load_racing_nrt_close_then_reinit() {
    if neffld_testkit::ran_alone(module_path!(), "nrt_load_racing_nrt_close_then_reinit") {
        return;
    }
    let bytes = Arc::new(fixture("matmul_small.neff"));
    let (mut loaded, mut closed, mut checked, mut reused) = (0, 0, 0, 0);
    for it in 0..ITERATIONS {
        init();
        let visible = visible_cores();
        let first = Arc::new(AtomicUsize::new(0));
        let start = Arc::new(Barrier::new(LOADERS + 1));
        let loaders: Vec<_> = (0..LOADERS)
            .map(|i| {
                let (bytes, first, start) = (bytes.clone(), first.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    let mut out = Vec::new();
                    for _ in 0..LOADS_PER_LOADER {
                        let (s, h) = load(&bytes, i as i32 % visible);
                        out.push((s, h));
                        if s != NRT_STATUS::NRT_SUCCESS {
                            break;
                        }
                        first.fetch_add(1, Ordering::SeqCst);
                    }
                    out
                })
            })
            .collect();
        start.wait();
        while first.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        std::thread::sleep(Duration::from_millis((2 + it % 10) as u64));
        nrt_close();
        let raced: Vec<(NRT_STATUS, usize)> = loaders
            .into_iter()
            .flat_map(|l| l.join().expect("a loader panicked"))
            .collect();
        for &(s, _) in &raced {
            assert!(
                s == NRT_STATUS::NRT_SUCCESS || s == NRT_STATUS::NRT_CLOSED,
                "iteration {it}: {s:?}"
            );
        }
        let stale: Vec<usize> = raced
            .iter()
            .filter(|(s, _)| *s == NRT_STATUS::NRT_SUCCESS)
            .map(|&(_, h)| h)
            .collect();
        loaded += stale.len();
        closed += raced.len() - stale.len();

        init();
        let fresh: Vec<usize> = (0..FRESH_LOADS)
            .map(|i| {
                let (s, h) = load(&bytes, i as i32 % visible);
                assert_eq!(s, NRT_STATUS::NRT_SUCCESS, "iteration {it}: fresh load {i}");
                h
            })
            .collect();
        for &h in &stale {
            // A freed handle whose address a fresh one reuses is the
            // caller's use-after-free, not something a runtime can refuse.
            if fresh.contains(&h) {
                reused += 1;
                continue;
            }
            assert_eq!(unload(h), NRT_STATUS::NRT_INVALID_HANDLE, "iteration {it}");
            checked += 1;
        }
        for &h in &fresh {
            assert_eq!(
                unload(h),
                NRT_STATUS::NRT_SUCCESS,
                "iteration {it}: a fresh model was lost"
            );
        }
        nrt_close();
    }
    println!(
        "{ITERATIONS} iterations of {LOADERS} loaders: {loaded} loads before a close, {closed} \
         NRT_CLOSED; {checked} stale handles refused after re-init ({reused} addresses reused by \
         fresh handles, skipped)"
    );
    assert!(loaded > 0 && checked > 0);
}
