//! Helpers shared by the acceptance tests: fixtures, runtimes on simulated
//! devices, and writer-built NEFFs with many subgraphs.
#![allow(dead_code, unused_imports)]

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use neffld::api::Runtime;
use neffld::config::{Loader, RuntimeConfig, Topology};
use neffld::container::{self, Neff, OpenOptions};
use neffld::device::{
    AllocReq, Allocation, Device, DeviceError, FaultPlan, Geometry, Ledger, LiveAlloc, MemHandle,
    Observer, SimDevice,
};
use neffld::ids::PCore;
use neffld::parse::{self, ParseOptions, ParsedModel};
use neffld::Arch;
pub use neffld_testkit::beyond_start;
use neffld_testkit::{lnc_writer, neff_json, real_fixtures, Synth};

pub use neffld_testkit::fixture;

/// Every `.neff` in the shared fixtures, by name.
pub fn all_fixtures() -> Vec<(String, Vec<u8>)> {
    let v = real_fixtures();
    assert!(
        v.len() >= 12,
        "the shared fixtures are missing: {}",
        v.len()
    );
    v
}

/// A checked runtime on a fresh simulated device.
pub fn runtime_on(geometry: Geometry, lnc: Option<u32>) -> (Runtime, Arc<SimDevice>) {
    let arch = geometry.arch();
    let dev = Arc::new(SimDevice::new(geometry));
    let cfg = RuntimeConfig {
        topology: Topology {
            arch,
            lnc,
            ..Default::default()
        },
        loader: Loader {
            check: true,
            // Every build on its own thread, as the reference does, so the
            // threaded path and its rollback are what these tests exercise.
            fanout_min_bytes: 0,
            ..Default::default()
        },
        ..Default::default()
    };
    (Runtime::with_device(cfg, dev.clone()).unwrap(), dev)
}

pub fn runtime(arch: Arch) -> (Runtime, Arc<SimDevice>) {
    runtime_on(Geometry::for_arch(arch), None)
}

/// Opens and parses a NEFF the way the loader does (for expected values).
pub fn parse(bytes: &[u8], arch: Arch, lnc: u32) -> (Neff, ParsedModel) {
    let neff = container::open(bytes, &OpenOptions::default()).expect("opens");
    let model = parse::parse(&neff, &ParseOptions::new(arch, lnc)).expect("parses");
    (neff, model)
}

/// Writes a synthetic trn2 NEFF with a header declaring LNC `lnc` (feature
/// bit 0x400 set) or not declaring one.
pub fn write_with_lnc(s: &Synth, lnc: u32, declare_lnc: bool) -> Vec<u8> {
    let mut w = lnc_writer(lnc);
    if declare_lnc {
        w.header.feature_bits |= 0x400;
    } else {
        w.header.feature_bits &= !0x400;
    }
    w.write(&s.member_list())
}

/// `n` subgraphs, written with the header declaring (or not) LNC `n`.
pub fn synth_n_bytes(n: usize, declare_lnc: bool) -> Vec<u8> {
    write_with_lnc(&Synth::dynamic_cayman_n(n), n as u32, declare_lnc)
}

/// Host resident set size in bytes (the testkit's `VmRSS` reading); a
/// process with none would make every comparison of it pass, so it fails.
pub fn rss_bytes() -> u64 {
    let kib = neffld_testkit::status_kib("VmRSS");
    assert!(kib > 0, "no VmRSS in /proc/self/status");
    kib * 1024
}

/// A simulated device that parks allocations on chosen physical cores until
/// its gate opens, so a test can keep one load in progress (holding the
/// parse cache) or make several loads overlap deterministically.
pub struct GateDevice {
    pub device: Arc<Device>,
    pub gate: Arc<Gate>,
}

impl std::ops::Deref for GateDevice {
    type Target = Device;
    fn deref(&self) -> &Device {
        &self.device
    }
}

/// The gate of a [`GateDevice`].
pub struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

struct GateState {
    /// Cores whose allocations park while the gate is closed.
    gated: std::ops::Range<u32>,
    open: bool,
    /// Open by itself once this many distinct groups of `group` cores have
    /// an allocation parked.
    open_at: Option<(usize, u32)>,
    arrived: std::collections::BTreeSet<u32>,
    parked: usize,
    timed_out: bool,
}

/// A simulated device whose gate is open.
pub fn gate_device(geometry: Geometry) -> Arc<GateDevice> {
    let gate = Arc::new(Gate {
        state: Mutex::new(GateState {
            gated: 0..0,
            open: true,
            open_at: None,
            arrived: Default::default(),
            parked: 0,
            timed_out: false,
        }),
        changed: Condvar::new(),
    });
    let device: Arc<Device> = Arc::new(SimDevice::new(geometry));
    device.observe(gate.clone());
    Arc::new(GateDevice { device, gate })
}

impl Observer for Gate {
    fn allocating(&self, req: &AllocReq<'_>) {
        self.pass(req.core);
    }
}

impl Gate {
    fn lock(&self) -> std::sync::MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Closes the gate for allocations on `cores`.
    pub fn close(&self, cores: std::ops::Range<u32>) {
        let mut s = self.lock();
        s.gated = cores;
        s.open = false;
        s.open_at = None;
        s.arrived.clear();
    }

    /// Closes the gate for every core; it opens by itself once `loads`
    /// distinct groups of `group` consecutive cores (logical cores) have an
    /// allocation parked.
    pub fn latch(&self, loads: usize, group: u32) {
        let mut s = self.lock();
        s.gated = 0..u32::MAX;
        s.open = false;
        s.open_at = Some((loads, group));
        s.arrived.clear();
    }

    pub fn open(&self) {
        self.lock().open = true;
        self.changed.notify_all();
    }

    /// Allocations parked right now.
    pub fn parked(&self) -> usize {
        self.lock().parked
    }

    /// Whether a parked allocation gave up waiting (the test is broken).
    pub fn timed_out(&self) -> bool {
        self.lock().timed_out
    }

    /// Waits until at least `n` allocations are parked.
    pub fn wait_parked(&self, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut s = self.lock();
        while s.parked < n {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "no load reached the gate in 60 s");
            s = self
                .changed
                .wait_timeout(s, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    fn pass(&self, core: PCore) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut s = self.lock();
        if s.open || !s.gated.contains(&core.0) {
            return;
        }
        s.parked += 1;
        if let Some((loads, group)) = s.open_at {
            s.arrived.insert(core.0 / group);
            if s.arrived.len() >= loads {
                s.open = true;
            }
        }
        self.changed.notify_all();
        while !s.open {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                s.timed_out = true;
                s.open = true;
                break;
            }
            s = self
                .changed
                .wait_timeout(s, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        s.parked -= 1;
        drop(s);
        self.changed.notify_all();
    }
}

/// A checked runtime on a gate device, every build on its own thread.
pub fn gated_runtime(
    geometry: Geometry,
    lnc: Option<u32>,
    cache_slots: usize,
) -> (Runtime, Arc<GateDevice>) {
    gated_runtime_fanout(geometry, lnc, cache_slots, 0)
}

/// As [`gated_runtime`], fanning out builds that copy at least
/// `fanout_min_bytes` (`u64::MAX`: every build on the caller's thread).
pub fn gated_runtime_fanout(
    geometry: Geometry,
    lnc: Option<u32>,
    cache_slots: usize,
    fanout_min_bytes: u64,
) -> (Runtime, Arc<GateDevice>) {
    let arch = geometry.arch();
    let dev = gate_device(geometry);
    let cfg = RuntimeConfig {
        topology: Topology {
            arch,
            lnc,
            ..Default::default()
        },
        loader: Loader {
            check: true,
            cache_slots,
            fanout_min_bytes,
            ..Default::default()
        },
        ..Default::default()
    };
    (Runtime::with_device(cfg, dev.device.clone()).unwrap(), dev)
}
