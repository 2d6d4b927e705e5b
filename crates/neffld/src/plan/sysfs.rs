//! A plan as the Neuron driver shows it in sysfs: the tree under
//! `/sys/devices/virtual/neuron_device/`, laid out as the driver lays it
//! out (its `neuron_sysfs_metrics.c`; the Neuron sysfs user guide), so a
//! tool that reads that directory can be pointed at a copy of it
//! (docs/decisions.md, "neuron-monitor and sysfs").
//!
//! Every device of the instance is a `neuron<N>` with a `neuron_core<M>`
//! per physical core. Each file holds a decimal number and a newline, as
//! the driver's do (`core_count`, which the driver writes without one,
//! aside). What is written:
//!
//! - `device_mem/` of every core: the driver's counters of the plan's
//!   ledger ([`crate::device::CoreCounters`]): bytes in whole 4 KiB pages,
//!   as the driver charges them; `total` held where the plan stopped,
//!   `present` the last change, `peak` the most held (a refused step's
//!   allocations count). `driver_memory` and `uncategorized` are 0: no
//!   usage of the runtime's lands there;
//! - `stats/status/` of every core: each refused load counted once on each
//!   physical core of its logical core under its status (the driver's
//!   counters of `NRT_RESOURCE`, `NRT_INVALID`, …); `success` counts
//!   completed executions, so it stays 0 with every execution counter;
//! - `other_info/model_load_count`: each load that went through, on each
//!   physical core of its logical core; the other counters are 0;
//! - host memory (`host_mem`), the ECC counters and the resets are 0; the
//!   power status says there is no data; `info/` names the chip as the
//!   driver does (`NDv3`, `Trainium2`, `Trn2`, cores `NCv3`).
//!
//! The driver folds a process's status and load counts in when the
//! process ends; the tree shows them for the deployment with its memory
//! still held, which no single moment of a real host shows.

use std::collections::BTreeMap;
use std::path::Path;

use super::{Plan, Step};
use crate::device::{DeviceMem, Geometry, MemCounter};
use crate::{Arch, NrtStatus};

/// The status counters of a core (`stats/status/`), in the driver's order.
pub const STATUS_COUNTERS: [&str; 24] = [
    "success",
    "failure",
    "timeout",
    "exec_bad_input",
    "hw_error",
    "execute_completed_with_error",
    "execute_completed_with_num_error",
    "generic_error",
    "resource_error",
    "resource_nc_error",
    "execute_failed_to_queue",
    "invalid_error",
    "unsupported_neff_version",
    "oob_error",
    "hw_collectives_error",
    "hw_hbm_ue_error",
    "hw_nc_ue_error",
    "hw_dma_abort_error",
    "execute_sw_nq_overflow",
    "execute_sw_semaphore_error",
    "execute_sw_event_error",
    "execute_sw_psum_collision",
    "execute_sw_sequencer_fatal",
    "hw_repairable_hbm_ue_error",
];

/// The counters of a core's `stats/other_info/`, in the driver's order.
pub const OTHER_INFO: [&str; 6] = [
    "model_load_count",
    "reset_req_count",
    "reset_fail_count",
    "inference_count",
    "flop_count",
    "nc_time_in_use",
];

/// The device-level host-memory categories (`stats/memory_usage/host_mem/`).
pub const HOST_MEM: [&str; 8] = [
    "dma_buffers",
    "tensors",
    "constants",
    "application_memory",
    "driver_memory",
    "notifications",
    "dma_rings",
    "uncategorized",
];

/// The status counter a load refused with `status` is counted under.
pub fn status_counter(status: NrtStatus) -> &'static str {
    match status {
        NrtStatus::Success => "success",
        NrtStatus::Failure => "failure",
        NrtStatus::Invalid => "invalid_error",
        NrtStatus::Resource => "resource_error",
        NrtStatus::Timeout => "timeout",
        NrtStatus::HwError => "hw_error",
        NrtStatus::LoadNotEnoughNc => "resource_nc_error",
        NrtStatus::UnsupportedNeffVersion => "unsupported_neff_version",
        NrtStatus::ExecBadInput => "exec_bad_input",
        NrtStatus::ExecOob => "oob_error",
        _ => "generic_error",
    }
}

/// What the driver calls a chip: its device and core architecture and
/// its product and instance family (`info/architecture/`).
fn chip_names(p: &Plan) -> (&'static str, &'static str, &'static str, &'static str) {
    let inf2 = p.instance.is_some_and(|i| i.family == "inf2");
    match p.arch {
        Arch::Sunda if inf2 => ("NDv3", "NCv2", "Inferentia2", "Inf2"),
        Arch::Sunda => ("NDv2", "NCv2", "Trainium1", "Trn1"),
        Arch::Cayman => ("NDv3", "NCv3", "Trainium2", "Trn2"),
        Arch::Mariana => ("NDv4", "NCv4", "Trainium3", "Trn3"),
    }
}

/// The tree: every file by its path below the directory, with its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SysfsTree {
    /// `neuron0/core_count`, … in the order written.
    pub files: Vec<(String, Vec<u8>)>,
}

impl SysfsTree {
    /// Writes the tree as directory `dir` ([`crate::tree::replace_tree`]):
    /// built beside it and renamed into place, never through a symbolic
    /// link, never half; an earlier tree of `neuron<N>` directories is
    /// replaced, any other non-empty directory refused. The error names
    /// what was wrong.
    pub fn write(&self, dir: &Path) -> Result<(), String> {
        crate::tree::replace_tree(dir, &self.files, |name| {
            name.strip_prefix(b"neuron")
                .is_some_and(|n| !n.is_empty() && n.iter().all(u8::is_ascii_digit))
        })
    }

    /// The bytes of the file at `path`.
    pub fn get(&self, path: &str) -> Option<&[u8]> {
        self.files
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, b)| b.as_slice())
    }
}

struct Files(Vec<(String, Vec<u8>)>);

impl Files {
    fn text(&mut self, path: String, text: &str) {
        self.0.push((path, text.as_bytes().to_vec()));
    }

    fn number(&mut self, path: String, n: u64) {
        self.0.push((path, format!("{n}\n").into_bytes()));
    }

    /// A counter of two files.
    fn counter(&mut self, dir: &str, total: u64, present: u64) {
        self.number(format!("{dir}/total"), total);
        self.number(format!("{dir}/present"), present);
    }

    /// A memory counter of three.
    fn mem(&mut self, dir: &str, c: MemCounter) {
        self.counter(dir, c.total, c.present);
        self.number(format!("{dir}/peak"), c.peak);
    }
}

/// What the loads of a plan left on one physical core's counters.
#[derive(Clone, Debug, Default)]
struct LoadCounts {
    /// Refused loads by status counter.
    refused: BTreeMap<&'static str, u64>,
    /// Loads that went through.
    loaded: u64,
}

impl Plan {
    /// Per physical core (`ND`, core): what its loads counted.
    fn load_counts(&self) -> BTreeMap<(u32, u32), LoadCounts> {
        let mut counts: BTreeMap<(u32, u32), LoadCounts> = BTreeMap::new();
        for s in &self.steps {
            let (Step::Load { .. }, Some(nd)) = (&s.step, s.device) else {
                continue;
            };
            for &p in &s.pcores {
                let at = counts.entry((nd, p)).or_default();
                match &s.outcome {
                    Ok(()) => at.loaded += 1,
                    Err(f) => *at.refused.entry(status_counter(f.status)).or_default() += 1,
                }
            }
        }
        counts
    }

    /// The deployment where the plan stopped as the driver's sysfs tree.
    pub fn sysfs(&self) -> SysfsTree {
        let g = Geometry::for_arch(self.arch);
        let (nd_arch, nc_arch, device_name, family) = chip_names(self);
        let loads = self.load_counts();
        let mut f = Files(Vec::new());
        for nd in 0..self.chips.max(1) {
            let d = format!("neuron{nd}");
            // The driver prints the count without a newline.
            f.text(format!("{d}/core_count"), &g.cores().to_string());
            f.text(format!("{d}/info/notify_delay"), "-1\n");
            f.text(format!("{d}/info/serial_number"), "\n");
            f.text(
                format!("{d}/info/architecture/arch_type"),
                &format!("{nd_arch}\n"),
            );
            f.text(
                format!("{d}/info/architecture/device_name"),
                &format!("{device_name}\n"),
            );
            f.text(
                format!("{d}/info/architecture/instance_type"),
                &format!("{family}\n"),
            );
            for ecc in [
                "sram_ecc_uncorrected",
                "mem_ecc_uncorrected",
                "mem_ecc_repairable_uncorrected",
            ] {
                f.number(format!("{d}/stats/hardware/{ecc}"), 0);
            }
            for h in HOST_MEM {
                f.mem(
                    &format!("{d}/stats/memory_usage/host_mem/{h}"),
                    MemCounter::default(),
                );
            }
            f.text(
                format!("{d}/stats/power/utilization"),
                "POWER_STATUS_NO_DATA,0,0.00,0.00,0.00\n",
            );
            let counters = self.counters.get(nd as usize);
            for core in 0..g.cores() {
                let c = format!("{d}/neuron_core{core}");
                f.text(
                    format!("{c}/info/architecture/arch_type"),
                    &format!("{nc_arch}\n"),
                );
                let counted = loads.get(&(nd, core)).cloned().unwrap_or_default();
                for s in STATUS_COUNTERS {
                    let n = counted.refused.get(s).copied().unwrap_or(0);
                    f.counter(&format!("{c}/stats/status/{s}"), n, n);
                }
                let k = counters
                    .and_then(|v| v.get(core as usize))
                    .copied()
                    .unwrap_or_default();
                let mem = format!("{c}/stats/memory_usage");
                f.mem(&format!("{mem}/device_mem"), k.device_mem);
                for cat in DeviceMem::ALL {
                    f.mem(&format!("{mem}/device_mem/{}", cat.name()), k.get(cat));
                }
                f.mem(&format!("{mem}/host_mem"), MemCounter::default());
                for o in OTHER_INFO {
                    let n = if o == "model_load_count" {
                        counted.loaded
                    } else {
                        0
                    };
                    f.counter(&format!("{c}/stats/other_info/{o}"), n, n);
                }
            }
        }
        SysfsTree { files: f.0 }
    }
}
