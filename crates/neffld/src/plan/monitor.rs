//! A plan as neuron-monitor reports a running deployment: one document in
//! neuron-monitor's format (its user guide's fields; docs/decisions.md,
//! "neuron-monitor and sysfs"), for its frontends (the Prometheus and
//! CloudWatch scripts, Grafana dashboards) and for tools written against
//! it, with no Trainium host.
//!
//! Every figure is the plan's own ledger where the plan stopped, in
//! neuron-monitor's five categories ([`MonitorCategory`], the one table):
//!
//! - the deployment is one process: the plan runs every step in one
//!   runtime, so `neuron_runtime_data` holds one entry (pid 0, which no
//!   process has, tag `neffld-plan`);
//! - `neuroncore_memory_usage` has an entry for every logical core that
//!   runtime sees, keyed by its index on the instance, its physical cores
//!   summed, zeros where nothing was loaded (what the runtime took when it
//!   started is there); `neuron_device` is their sum;
//! - `loaded_models` is every load held where the plan stopped, in load
//!   order, its subgraphs `sg_00`, `sg_01`, … each on its physical core
//!   (`neuroncore_index` on device `neuron_device_index`) with what that
//!   load holds there;
//! - host memory is not planned: every host figure is 0;
//! - nothing executes, so no group but `memory_used` is reported for the
//!   process, and `is_running` is false;
//! - `system_data` has the one system group the simulated instance
//!   answers, `neuron_hw_counters` (no ECC error on a simulated device);
//!   the host's CPU and memory are not the instance's;
//! - `instance_info` names the instance type and leaves the identifiers of
//!   a real instance (its id, zone, AMI, subnet) empty.

use serde::{Serialize, Serializer};

use super::{NeffRecord, Plan};
use crate::device::Geometry;
use crate::ids::LCore;
use crate::report::categories::{MonitorCategory, MonitorUsage};
use crate::report::memory::CoreMemory;
use crate::Arch;

/// neuron-monitor's default period, in seconds (its user guide).
pub const DEFAULT_PERIOD: f64 = 5.0;

/// One neuron-monitor report, in its field order.
#[derive(Clone, Debug, Serialize)]
pub struct MonitorDoc {
    /// The deployment's one process.
    pub neuron_runtime_data: Vec<RuntimeData>,
    /// The system groups the simulated instance answers.
    pub system_data: SystemData,
    /// The instance.
    pub instance_info: InstanceInfo,
    /// The chips.
    pub neuron_hardware_info: HardwareInfo,
}

/// One Neuron process.
#[derive(Clone, Debug, Serialize)]
pub struct RuntimeData {
    /// 0: no process has it.
    pub pid: u32,
    /// The process's tag.
    pub neuron_runtime_tag: String,
    /// Empty: nothing went wrong collecting it.
    pub error: String,
    /// Its metric groups.
    pub report: RuntimeReport,
}

/// The application-level groups of one process.
#[derive(Clone, Debug, Serialize)]
pub struct RuntimeReport {
    /// Memory.
    pub memory_used: MemoryUsed,
}

/// The `memory_used` group.
#[derive(Clone, Debug, Serialize)]
pub struct MemoryUsed {
    /// Seconds the report covers (the stream's period).
    pub period: f64,
    /// The process's memory.
    pub neuron_runtime_used_bytes: UsedBytes,
    /// The loads.
    pub loaded_models: Vec<LoadedModel>,
    /// Empty.
    pub error: String,
}

/// The process's memory, in bytes.
#[derive(Clone, Debug, Serialize)]
pub struct UsedBytes {
    /// Host memory (not planned: 0).
    pub host: u64,
    /// Device memory: the sum of every core's categories.
    pub neuron_device: u64,
    /// By category.
    pub usage_breakdown: Breakdown,
}

/// The process's memory by category.
#[derive(Clone, Debug, Serialize)]
pub struct Breakdown {
    /// Host categories (0).
    pub host: HostUsage,
    /// Each logical core's device categories, by its index on the instance.
    #[serde(serialize_with = "cores")]
    pub neuroncore_memory_usage: Vec<(u32, MonitorUsage)>,
}

/// neuron-monitor's host categories; host memory is not planned.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct HostUsage {
    /// Everything else.
    pub application_memory: u64,
    /// Constants.
    pub constants: u64,
    /// DMA buffers.
    pub dma_buffers: u64,
    /// Tensors.
    pub tensors: u64,
}

/// One load.
#[derive(Clone, Debug, Serialize)]
pub struct LoadedModel {
    /// The NEFF's name, as the runtime prints it.
    pub name: String,
    /// The NEFF's UUID, 32 hex digits.
    pub uuid: String,
    /// Its id in the usage tables (`H_MODEL`, `plan --json`'s `neffs[].id`).
    pub model_id: u32,
    /// Nothing executes.
    pub is_running: bool,
    /// Each subgraph (`sg_00`, …).
    #[serde(serialize_with = "subgraphs")]
    pub subgraphs: Vec<Subgraph>,
}

/// One subgraph of a load, on one physical core.
#[derive(Clone, Debug, Serialize)]
pub struct Subgraph {
    /// What the load holds on the subgraph's core.
    pub memory_used_bytes: SubgraphBytes,
    /// The physical core on its device.
    pub neuroncore_index: u32,
    /// The device (`ND n`).
    pub neuron_device_index: u32,
}

/// A subgraph's memory.
#[derive(Clone, Debug, Serialize)]
pub struct SubgraphBytes {
    /// 0.
    pub host: u64,
    /// The sum of its four device categories.
    pub neuron_device: u64,
    /// By category.
    pub usage_breakdown: SubgraphBreakdown,
}

/// A subgraph's memory by category: the shared scratchpad is the core's,
/// not a model's, so a subgraph has four device categories.
#[derive(Clone, Debug, Serialize)]
pub struct SubgraphBreakdown {
    /// 0.
    pub host: HostUsage,
    /// Its device categories.
    #[serde(serialize_with = "model_categories")]
    pub neuron_device: MonitorUsage,
}

/// The system groups.
#[derive(Clone, Debug, Serialize)]
pub struct SystemData {
    /// Each device's ECC counters.
    pub neuron_hw_counters: HwCounters,
}

/// The `neuron_hw_counters` group.
#[derive(Clone, Debug, Serialize)]
pub struct HwCounters {
    /// Seconds covered.
    pub period: f64,
    /// One entry per device.
    pub neuron_devices: Vec<DeviceEcc>,
    /// Empty.
    pub error: String,
}

/// One device's ECC counters: a simulated device has no error.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceEcc {
    /// `ND n`.
    pub neuron_device_index: u32,
    /// 0.
    pub mem_ecc_corrected: u64,
    /// 0.
    pub mem_ecc_uncorrected: u64,
    /// 0.
    pub sram_ecc_uncorrected: u64,
    /// 0.
    pub sram_ecc_corrected: u64,
}

/// The instance (`instance_info`): its type; the identifiers of a real
/// instance are empty.
#[derive(Clone, Debug, Default, Serialize)]
pub struct InstanceInfo {
    /// Empty.
    pub instance_name: String,
    /// Empty.
    pub instance_id: String,
    /// The instance type planned on (empty for one chip of an
    /// architecture, which is no instance type).
    pub instance_type: String,
    /// Empty.
    pub instance_availability_zone: String,
    /// Empty.
    pub instance_availability_zone_id: String,
    /// Empty.
    pub instance_region: String,
    /// Empty.
    pub ami_id: String,
    /// Empty.
    pub subnet_id: String,
    /// Empty.
    pub error: String,
}

/// The chips (`neuron_hardware_info`).
#[derive(Clone, Debug, Serialize)]
pub struct HardwareInfo {
    /// `trainium`, `inferentia2`, `trainium2`, `trainium3`.
    pub neuron_device_type: &'static str,
    /// `v2`, `v3`, `v4`, `v5`.
    pub neuron_device_version: &'static str,
    /// `v2`; on trn2 `v3` at LNC 1 and `v3d` at LNC 2.
    pub neuroncore_version: &'static str,
    /// Chips of the instance.
    pub neuron_device_count: u32,
    /// Bytes of HBM of one chip.
    pub neuron_device_memory_size: u64,
    /// Logical cores of one chip.
    pub neuroncore_per_device_count: u32,
    /// The logical-core size.
    pub logical_neuroncore_config: u32,
    /// Empty.
    pub error: String,
}

fn cores<S: Serializer>(cores: &[(u32, MonitorUsage)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(
        cores
            .iter()
            .map(|(i, u)| (i.to_string(), Categories(u, true))),
    )
}

fn subgraphs<S: Serializer>(sgs: &[Subgraph], s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(
        sgs.iter()
            .enumerate()
            .map(|(i, g)| (format!("sg_{i:02}"), g)),
    )
}

fn model_categories<S: Serializer>(u: &MonitorUsage, s: S) -> Result<S::Ok, S::Error> {
    Categories(u, false).serialize(s)
}

/// A core's or a model's categories, by key in neuron-monitor's (sorted)
/// order; a model's without the core's shared scratchpad.
struct Categories<'a>(&'a MonitorUsage, bool);

impl Serialize for Categories<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut keys: Vec<MonitorCategory> = MonitorCategory::ALL
            .into_iter()
            .filter(|&c| self.1 || c != MonitorCategory::ModelScratchpad)
            .collect();
        keys.sort_by_key(|c| c.key());
        s.collect_map(keys.into_iter().map(|c| (c.key(), self.0.get(c))))
    }
}

/// What neuron-monitor calls a chip: device type, device version and the
/// core version at logical-core size `lnc`. trn1, inf2 and trn2 as its
/// user guide and captured reports give them; trn3's follow the sequence
/// (docs/decisions.md).
fn chip_names(p: &Plan) -> (&'static str, &'static str, &'static str) {
    let inf2 = p.instance.is_some_and(|i| i.family == "inf2");
    match p.arch {
        Arch::Sunda if inf2 => ("inferentia2", "v3", "v2"),
        Arch::Sunda => ("trainium", "v2", "v2"),
        Arch::Cayman => ("trainium2", "v4", if p.lnc == 2 { "v3d" } else { "v3" }),
        Arch::Mariana => ("trainium3", "v5", if p.lnc == 2 { "v4d" } else { "v4" }),
    }
}

impl Plan {
    /// The logical cores the runtime sees, by their index on the instance.
    pub fn visible_logical_cores(&self) -> Vec<u32> {
        match &self.visible {
            Some(list) => list.cores.clone(),
            None => (0..self.logical_cores).collect(),
        }
    }

    /// The device and physical cores of logical core `id` of the instance.
    pub fn physical_cores_of(&self, id: u32) -> Option<(u32, std::ops::Range<u32>)> {
        let g = Geometry::for_arch(self.arch);
        let per_chip = g.cores() / self.lnc.max(1);
        let pcores = g.pcores_of(LCore(id % per_chip), self.lnc).ok()?;
        Some((id / per_chip, pcores))
    }

    /// The memory of physical core `pcore` of device `nd` where the plan
    /// stopped.
    fn core_memory(&self, nd: u32, pcore: u32) -> Option<&CoreMemory> {
        self.devices
            .iter()
            .find(|m| m.device == nd)?
            .hbms
            .iter()
            .flat_map(|h| &h.cores)
            .find(|c| c.pcore.0 == pcore)
    }

    fn loaded_model(&self, n: &NeffRecord) -> LoadedModel {
        let subgraphs = n
            .subgraphs
            .iter()
            .map(|&pcore| {
                let rows = self
                    .core_memory(n.device, pcore)
                    .and_then(|c| c.models.iter().find(|(h, _)| *h == n.id))
                    .map(|(_, rows)| *rows)
                    .unwrap_or([0; crate::device::MemUsage::COUNT]);
                let u = MonitorUsage::of(&rows);
                debug_assert_eq!(
                    u.get(MonitorCategory::ModelScratchpad),
                    0,
                    "the shared scratchpad is the runtime's"
                );
                Subgraph {
                    memory_used_bytes: SubgraphBytes {
                        host: 0,
                        neuron_device: u.total(),
                        usage_breakdown: SubgraphBreakdown {
                            host: HostUsage::default(),
                            neuron_device: u,
                        },
                    },
                    neuroncore_index: pcore,
                    neuron_device_index: n.device,
                }
            })
            .collect();
        LoadedModel {
            name: n.name.clone(),
            uuid: n.uuid.iter().map(|b| format!("{b:02x}")).collect(),
            model_id: n.id.0,
            is_running: false,
            subgraphs,
        }
    }

    /// The memory of every logical core the runtime sees where the plan
    /// stopped, in neuron-monitor's and neuron-top's categories (its
    /// physical cores summed), by its index on the instance.
    pub fn monitor_cores(&self) -> Vec<(u32, MonitorUsage)> {
        self.visible_logical_cores()
            .into_iter()
            .map(|id| {
                let mut u = MonitorUsage::default();
                if let Some((nd, pcores)) = self.physical_cores_of(id) {
                    for p in pcores {
                        if let Some(c) = self.core_memory(nd, p) {
                            u.add(&c.categories());
                        }
                    }
                }
                (id, u)
            })
            .collect()
    }

    /// The deployment where the plan stopped as one neuron-monitor report
    /// covering `period` seconds ([`DEFAULT_PERIOD`] for a single report).
    pub fn monitor(&self, period: f64) -> MonitorDoc {
        let cores = self.monitor_cores();
        let device: u64 = cores.iter().map(|(_, u)| u.total()).sum();
        let (device_type, device_version, core_version) = chip_names(self);
        let g = Geometry::for_arch(self.arch);
        MonitorDoc {
            neuron_runtime_data: vec![RuntimeData {
                pid: 0,
                neuron_runtime_tag: "neffld-plan".into(),
                error: String::new(),
                report: RuntimeReport {
                    memory_used: MemoryUsed {
                        period,
                        neuron_runtime_used_bytes: UsedBytes {
                            host: 0,
                            neuron_device: device,
                            usage_breakdown: Breakdown {
                                host: HostUsage::default(),
                                neuroncore_memory_usage: cores,
                            },
                        },
                        loaded_models: self.neffs.iter().map(|n| self.loaded_model(n)).collect(),
                        error: String::new(),
                    },
                },
            }],
            system_data: SystemData {
                neuron_hw_counters: HwCounters {
                    period,
                    neuron_devices: (0..self.chips.max(1))
                        .map(|nd| DeviceEcc {
                            neuron_device_index: nd,
                            mem_ecc_corrected: 0,
                            mem_ecc_uncorrected: 0,
                            sram_ecc_uncorrected: 0,
                            sram_ecc_corrected: 0,
                        })
                        .collect(),
                    error: String::new(),
                },
            },
            instance_info: InstanceInfo {
                instance_type: self.instance.map_or(String::new(), |i| i.name.to_string()),
                ..InstanceInfo::default()
            },
            neuron_hardware_info: HardwareInfo {
                neuron_device_type: device_type,
                neuron_device_version: device_version,
                neuroncore_version: core_version,
                neuron_device_count: self.chips.max(1),
                neuron_device_memory_size: u64::from(g.hbm_channels()) * g.hbm_bytes_per_channel(),
                neuroncore_per_device_count: g.cores() / self.lnc.max(1),
                logical_neuroncore_config: self.lnc,
                error: String::new(),
            },
        }
    }
}

impl MonitorDoc {
    /// The report as neuron-monitor writes it: one line of compact JSON
    /// and its newline.
    pub fn line(&self) -> String {
        let mut s = serde_json::to_string(self).expect("a report serialises");
        s.push('\n');
        s
    }
}
