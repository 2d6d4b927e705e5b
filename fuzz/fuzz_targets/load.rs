//! The whole load (S0–S5) over arbitrary bytes on a `NullDevice`, then
//! unload: every input either loads, passes the staged-model validator and
//! unloads, or fails with a status and a message; either way the device and
//! the registry are empty afterwards.
//!
//! The first byte is a flag byte, the rest is the NEFF:
//! bit 0 selects trn1 (sunda, LNC 1) instead of trn2 (cayman, LNC 2);
//! bit 1 turns payload verification on; bit 2 allows legacy NEFFs.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use neffld::api::{LoadError, Runtime};
use neffld::config::{DeviceKind, RuntimeConfig};
use neffld::device::{Device, Geometry, NullDevice};
use neffld::Arch;

/// A small inflate ceiling keeps each execution bounded in memory.
const MAX_INFLATED: u64 = 8 << 20;

fuzz_target!(|data: &[u8]| {
    let Some((&flag, neff)) = data.split_first() else {
        return;
    };
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
    let rt = Runtime::with_device(cfg, dev.clone()).expect("runtime");
    match rt.load(neff, -1, 1) {
        Ok(m) => {
            assert_eq!(rt.loaded_models(), 1);
            rt.unload(&m).expect("unload of a loaded model");
        }
        Err(e) => {
            // A validator finding is a neffld bug, never a bad NEFF.
            assert!(!matches!(e, LoadError::Validation(_)), "{e}");
            assert!(!e.to_string().is_empty());
            let _ = e.status();
        }
    }
    assert_eq!(dev.live_count(), 0, "{:?}", dev.live_allocations());
    assert_eq!(rt.loaded_models(), 0);
});
