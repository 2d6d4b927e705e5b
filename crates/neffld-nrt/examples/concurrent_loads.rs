//! Eight threads loading one NEFF through the C API at once, against eight
//! loads one after another: the parse cache lets the concurrent loads share
//! one parse. Usage: `concurrent_loads [NEFF]` (default: matmul_large).

use std::ffi::c_void;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use neffld_nrt::*;

fn load(bytes: &[u8]) -> *mut nrt_model_t {
    let mut m: *mut nrt_model_t = std::ptr::null_mut();
    // SAFETY: `bytes` is a live buffer of `bytes.len()` bytes and `m` a valid out-pointer.
    let s = unsafe { nrt_load(bytes.as_ptr().cast::<c_void>(), bytes.len(), 0, 1, &mut m) };
    assert_eq!(s as u32, 0, "nrt_load failed: {s:?}");
    m
}

fn unload(m: *mut nrt_model_t) {
    // SAFETY: `m` came from nrt_load and is unloaded once.
    let s = unsafe { nrt_unload(m) };
    assert_eq!(s as u32, 0);
}

fn main() {
    let path = std::env::args().nth(1).unwrap_or_else(|| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../testdata/fixtures/matmul_large.neff"
        )
        .into()
    });
    let bytes = std::fs::read(&path).expect("read the NEFF");
    std::env::set_var("NEFFLD_DEVICE", "null");
    // SAFETY: null version strings are accepted.
    assert_eq!(
        unsafe { nrt_init(1, std::ptr::null(), std::ptr::null()) } as u32,
        0
    );
    let rounds = 7;
    let (mut conc, mut seq) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let barrier = Barrier::new(8);
        let t = Instant::now();
        let models: Vec<usize> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        barrier.wait();
                        load(&bytes) as usize
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        conc.push(t.elapsed());
        for m in models {
            unload(m as *mut nrt_model_t);
        }
        let t = Instant::now();
        let models: Vec<_> = (0..8).map(|_| load(&bytes)).collect();
        seq.push(t.elapsed());
        for m in models {
            unload(m);
        }
    }
    conc.sort();
    seq.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "8 loads through nrt_load: concurrent {:.1} ms, sequential {:.1} ms (medians of {rounds}), ratio {:.2}",
        ms(conc[rounds / 2]),
        ms(seq[rounds / 2]),
        ms(seq[rounds / 2]) / ms(conc[rounds / 2])
    );
    nrt_close();
}
