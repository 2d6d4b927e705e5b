//! Inputs kept from fuzzing and probing, in the `load` target's format and
//! replayed through its checks (`fuzz/fuzz_targets/load.rs`): the first
//! byte is the flag byte (bit 0: trn1 instead of trn2; bit 1: verify the
//! payload hash; bit 2: allow legacy NEFFs), the rest is the NEFF. Each kept
//! input has a named test; every file under `tests/data/fuzz/load/` is also
//! replayed by `every_kept_load_input`, so a new crash file is covered by
//! dropping it there.

use std::sync::Arc;
use std::time::{Duration, Instant};

use neffld::api::{LoadError, Runtime};
use neffld::config::{DeviceKind, RuntimeConfig};
use neffld::device::{Device, Geometry, NullDevice};
use neffld::{Arch, NrtStatus};

/// As in the fuzz target.
const MAX_INFLATED: u64 = 8 << 20;

fn data(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/data/fuzz/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The `load` target's body: the status of a failed load (`None` when it
/// loaded and unloaded), after checking that nothing is left behind.
fn replay_load(input: &[u8]) -> Option<NrtStatus> {
    let (&flag, neff) = input.split_first()?;
    let arch = if flag & 1 == 1 {
        Arch::Sunda
    } else {
        Arch::Cayman
    };
    let dev = Arc::new(NullDevice::new(Geometry::for_arch(arch)));
    let cfg = RuntimeConfig {
        arch,
        device: DeviceKind::Null,
        validate_hash: flag & 2 != 0,
        allow_legacy_neff: flag & 4 != 0,
        max_inflated: Some(MAX_INFLATED),
        check: true,
        ..RuntimeConfig::default()
    };
    let rt = Runtime::with_device(cfg, dev.clone()).unwrap();
    let status = match rt.load(neff, -1, 1) {
        Ok(m) => {
            rt.unload(&m).unwrap();
            None
        }
        Err(e) => {
            assert!(!matches!(e, LoadError::Validation(_)), "{e}");
            assert!(!e.to_string().is_empty());
            Some(e.status())
        }
    };
    assert_eq!(dev.live_count(), 0, "{:?}", dev.live_allocations());
    assert_eq!(rt.loaded_models(), 0);
    status
}

#[test]
fn every_kept_load_input() {
    let dir = format!("{}/tests/data/fuzz/load", env!("CARGO_MANIFEST_DIR"));
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let t = Instant::now();
        replay_load(&std::fs::read(&p).unwrap());
        assert!(t.elapsed() < Duration::from_secs(5), "{}", p.display());
        n += 1;
    }
    assert!(n > 0);
}

/// A DMA block of 2^24 in-bounds 64-byte runs: expanded in full (about
/// 1.6 GB, 15 s in a debug build) and loaded, before the vring limit was
/// checked from the pattern. Now `NRT_QUEUE_FULL` at once.
#[test]
fn ring_limit_runs() {
    let t = Instant::now();
    assert_eq!(
        replay_load(&data("load/ring_limit_runs.bin")),
        Some(NrtStatus::QueueFull)
    );
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
}

/// One 2^40-byte run between two 2^63-byte I/O tensors: 2^24 chunks built
/// before the template encoding failed. Now `NRT_QUEUE_FULL` at once.
#[test]
fn ring_limit_long_run() {
    let t = Instant::now();
    assert_eq!(
        replay_load(&data("load/ring_limit_long_run.bin")),
        Some(NrtStatus::QueueFull)
    );
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
}
