//! Runtime and per-load configuration, from explicit values or from the
//! `NEURON_RT_*` environment variables the reference runtime reads
//! (stage.md §15) and neffld's own `NEFFLD_*` ones, each defined once in
//! [`vars`]. Parsing takes a lookup function, so it is tested without
//! touching the process environment; only [`RuntimeConfig::from_env`] reads it.

pub mod vars;

use thiserror::Error;

use crate::container::OpenOptions;
use crate::device::Geometry;
use crate::instance::Instance;
use crate::line::{ImplicitAsync, RuntimeLine};
use crate::stage::ScratchpadMode;
use crate::Arch;

/// A runtime variable (or a setting standing for one) whose value cannot be
/// honoured: the variable, the value and why, which the message quotes.
#[derive(Debug, Error, PartialEq, Eq)]
#[error("invalid value {value:?} for {var}: {reason}")]
pub struct ConfigError {
    /// The variable (`NEURON_RT_VISIBLE_CORES`, …).
    pub var: &'static str,
    /// The value given.
    pub value: String,
    /// Why it is refused.
    pub reason: String,
}

impl ConfigError {
    /// Always `NRT_INVALID`, as the runtime's own start refuses a bad variable.
    pub fn status(&self) -> crate::NrtStatus {
        crate::NrtStatus::Invalid
    }
}

/// Logical cores as the user listed them: the cores, and the variable and
/// value that listed them, which messages quote.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CoreList {
    /// The variable that listed them.
    pub var: &'static str,
    /// Its value as given.
    pub value: String,
    /// Sorted, without duplicates.
    pub cores: Vec<u32>,
}

/// Which simulated backend a runtime stages onto.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeviceKind {
    /// Keeps every written byte (sparsely): the device image can be read back.
    Sim,
    /// Keeps no bytes: for NEFFs too large to mirror.
    Null,
}

impl DeviceKind {
    /// The name users give it (`NEFFLD_DEVICE`, `--device`, Python's
    /// `device=`) and reports show: "sim" or "null".
    pub fn name(self) -> &'static str {
        match self {
            DeviceKind::Sim => "sim",
            DeviceKind::Null => "null",
        }
    }
}

/// Parses [`DeviceKind::name`].
impl std::str::FromStr for DeviceKind {
    type Err = String;
    fn from_str(s: &str) -> Result<DeviceKind, String> {
        match s {
            "sim" => Ok(DeviceKind::Sim),
            "null" => Ok(DeviceKind::Null),
            _ => Err(format!(
                "unknown device {s:?} (expected \"sim\" or \"null\")"
            )),
        }
    }
}

/// Everything a runtime is configured with, along its three seams: what
/// it runs on, what libnrt itself reads, and neffld's own tuning (each
/// variable's [`vars::Seam`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuntimeConfig {
    /// What the runtime runs on: the instance, its chips, the logical cores.
    pub topology: Topology,
    /// What libnrt reads: the line it is, and its `NEURON_RT_*` variables.
    pub libnrt: Libnrt,
    /// neffld's own tuning of its device, loader, parse cache and planner.
    pub loader: Loader,
}

/// What a runtime runs on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    /// The instance architecture (the arch gate compares NEFFs against it).
    pub arch: Arch,
    /// Devices (chips) of the instance, each of the architecture's geometry
    /// (`ND 0` … `ND chips-1`); logical cores are numbered across them.
    pub chips: u32,
    /// The instance type (`NEFFLD_INSTANCE`), when one is named: it sets
    /// `arch` and `chips` ([`RuntimeConfig::on_instance`]).
    pub instance: Option<&'static Instance>,
    /// Logical-core size; `None` = the architecture's default (sunda: 1, else 2).
    pub lnc: Option<u32>,
    /// Logical cores this process may use (`NEURON_RT_VISIBLE_CORES` /
    /// `NEURON_RT_NUM_CORES`); `None` = all. Checked against a device by
    /// [`RuntimeConfig::logical_cores`].
    pub visible_cores: Option<CoreList>,
}

/// What libnrt itself reads (and which line's libnrt it is).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Libnrt {
    /// The runtime line whose behaviour loads reproduce (`NEFFLD_RUNTIME`:
    /// `2.27` or a version such as `2.27.23`); `None` = the newest line,
    /// the one users run ([`RuntimeLine::NEWEST`]).
    pub line: Option<RuntimeLine>,
    /// `NEURON_RT_VALIDATE_HASH`: check the payload digest (default off).
    pub validate_hash: bool,
    /// `NEURON_RT_ALLOW_LEGACY_NEFF`: accept an architecture mismatch and a
    /// missing Cayman SB reservation.
    pub allow_legacy_neff: bool,
    /// `NEURON_RT_EXEC_TIMEOUT`, seconds (recorded with each model).
    pub exec_timeout_s: u32,
    /// `NEURON_SCRATCHPAD_PAGE_SIZE` in bytes (given in MiB, 1 to 4095; the
    /// documentation advises multiples of 512).
    pub scratchpad_page: u64,
    /// `NEURON_RT_CONTIGUOUS_SCRATCHPAD` (or the older
    /// `NEURON_RT_DBG_EXPERIMENTAL_CONTIGUOUS_SCRATCHPAD`): keep each core's
    /// scratchpad as one contiguous region of 64 MiB pages; `None` = the
    /// runtime line's default ([`RuntimeLine::contiguous_scratchpad`]).
    pub contiguous_scratchpad: Option<bool>,
    /// `NEURON_RT_ROOT_COMM_ID` (`host:port` of the root communicator),
    /// required by collectives loads.
    pub root_comm_id: Option<String>,
    /// Profiler buffers sized with `NEURON_RT_PROFILE_BUF_<KIND>_MB`, in
    /// bytes, in [`PROFILE_BUFFERS`] order. Nothing here allocates them:
    /// the planner does, for a deployment that profiles (docs/decisions.md).
    pub profile_buffers: Vec<(&'static str, u64)>,
    /// `NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS`, as given: implicit
    /// async execution, which the runtime warns about from 2.32 and no
    /// longer does (nothing here executes either way).
    pub implicit_async: Option<String>,
    /// `NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG` (2.33+; `0` or `1`): whether
    /// a refused device allocation logs the usage report and writes its
    /// table file. `None` = unset, or a line without the variable
    /// ([`RuntimeConfig::oom_log_enabled`]).
    pub oom_log: Option<bool>,
    /// The line's start-up deltas turned off, by the variable that turns
    /// each off ([`crate::line::StartDelta::off_by`];
    /// `NEFFLD_DMA_PROFILING=0`).
    pub start_off: Vec<&'static str>,
}

/// neffld's own tuning: its simulated device, its ceilings, the parse
/// cache, the staging's threads and the planner's replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loader {
    /// The simulated device: one that keeps the bytes, or one that only accounts.
    pub device: DeviceKind,
    /// Ceiling on a NEFF's inflated payload (`NEFFLD_MAX_INFLATED`); `None` =
    /// the container default.
    pub max_inflated: Option<u64>,
    /// Ceiling on a NEFF's tar entries (`NEFFLD_MAX_MEMBERS`); `None` = the
    /// container default.
    pub max_members: Option<u64>,
    /// Ceiling on a NEFF read from a stream (`NEFFLD_MAX_NEFF_SIZE`),
    /// read when one is ([`crate::neff::read_neff`]).
    pub max_neff_size: u64,
    /// Ceiling on the steps one plan expands to (`NEFFLD_MAX_STEPS`),
    /// read by a plan before its deployment ([`max_steps`]).
    pub max_steps: usize,
    /// Parse-cache slots (`NEFFLD_CACHE_SLOTS`); 1 = the reference behaviour.
    pub cache_slots: usize,
    /// Parses the cache keeps after their loads end (`NEFFLD_CACHE_RETAIN`;
    /// 0 = none, the reference), so replicas of one NEFF parse it once.
    pub cache_retain: usize,
    /// Ceiling on the retained parses' bytes (`NEFFLD_CACHE_RETAIN_BYTES`).
    pub cache_retain_bytes: u64,
    /// The caller makes one load at a time (the CLI): a parse can then be
    /// shared only through retention, so the cache reads a whole file for
    /// its fingerprint only when it may retain the parse.
    pub one_load_at_a_time: bool,
    /// Validate every staged model before registering it (`NEFFLD_CHECK`).
    pub check: bool,
    /// Keep each loaded model's relocated instruction images on the host
    /// for its staged view (`--dump`, `compare`, `nrt_profile_stop`,
    /// Python's `model.cores`). On a device that keeps no bytes the images
    /// are most of what a loaded model holds on the host (4 MiB for
    /// matmul_large), so a planner, which only asks what fits, turns this
    /// off and its host memory stays with what one load of each NEFF holds.
    pub retain_images: bool,
    /// Fan a multi-subgraph load's core builds out to threads only when they
    /// copy at least this many bytes (`NEFFLD_FANOUT_MIN_BYTES`; 0 = always,
    /// as the reference does).
    pub fanout_min_bytes: u64,
    /// A load of a NEFF already staged on the same physical cores makes
    /// that staging's device requests again instead of staging anew
    /// (`NEFFLD_REPLAY`): what a planner of many ranks wants, on devices
    /// that keep no bytes. `None` leaves it to the caller (a runtime does
    /// not replay, a plan does); a runtime replays only where nothing can
    /// tell a replayed load from a staged one (`RuntimeConfig::replays`).
    pub replay: Option<bool>,
    /// Ceiling on the allocations the copies a plan's headroom counts make
    /// (`NEFFLD_MAX_HEADROOM`).
    pub max_headroom: u64,
}

/// The profiler buffers the runtime lets a user size, and the variable
/// that sizes each (in MiB).
pub(crate) const PROFILE_BUFFERS: [(&str, &str); 5] = [
    ("EVENT", "NEURON_RT_PROFILE_BUF_EVENT_MB"),
    ("DMA", "NEURON_RT_PROFILE_BUF_DMA_MB"),
    ("THROTTLE", "NEURON_RT_PROFILE_BUF_THROTTLE_MB"),
    (
        "CC_CORE_INSTRUCTION",
        "NEURON_RT_PROFILE_BUF_CC_CORE_INSTRUCTION_MB",
    ),
    ("CC_CORE_EVENT", "NEURON_RT_PROFILE_BUF_CC_CORE_EVENT_MB"),
];

pub use vars::{Reader, Seam, Variable, VARIABLES};

impl Default for Topology {
    fn default() -> Self {
        Topology {
            arch: Arch::Cayman,
            chips: 1,
            instance: None,
            lnc: None,
            visible_cores: None,
        }
    }
}

impl Default for Libnrt {
    fn default() -> Self {
        Libnrt {
            line: None,
            validate_hash: false,
            allow_legacy_neff: false,
            exec_timeout_s: 30,
            scratchpad_page: ScratchpadMode::DEFAULT_PAGE,
            contiguous_scratchpad: None,
            root_comm_id: None,
            profile_buffers: Vec::new(),
            implicit_async: None,
            oom_log: None,
            start_off: Vec::new(),
        }
    }
}

impl Default for Loader {
    fn default() -> Self {
        Loader {
            device: DeviceKind::Sim,
            max_inflated: None,
            max_members: None,
            max_neff_size: crate::container::stream::MAX_STREAM_NEFF,
            max_steps: MAX_STEPS,
            cache_slots: 1,
            cache_retain: 0,
            cache_retain_bytes: crate::cache::DEFAULT_RETAIN_BYTES,
            one_load_at_a_time: false,
            check: false,
            retain_images: true,
            fanout_min_bytes: crate::stage::DEFAULT_FANOUT_MIN_BYTES,
            replay: None,
            max_headroom: crate::plan::headroom::HEADROOM_ALLOCATIONS,
        }
    }
}

pub(crate) fn parse_bool(var: &'static str, v: &str) -> Result<bool, ConfigError> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" | "" => Ok(false),
        _ => Err(ConfigError {
            var,
            value: v.into(),
            reason: "expected 0/1 or true/false".into(),
        }),
    }
}

pub(crate) fn parse_num<T: std::str::FromStr>(
    var: &'static str,
    v: &str,
) -> Result<T, ConfigError> {
    v.trim().parse().map_err(|_| ConfigError {
        var,
        value: v.into(),
        reason: "expected a non-negative integer".into(),
    })
}

/// The default ceiling on the steps one plan expands to (the command
/// line's LOADs, tensors and unloads and a deployment file's steps
/// together), checked before expanding.
pub const MAX_STEPS: usize = 1 << 18;

/// The ceiling on the steps one plan expands to: `NEFFLD_MAX_STEPS` as
/// `lookup` gives it, else [`MAX_STEPS`].
pub fn max_steps(lookup: impl Fn(&str) -> Option<String>) -> Result<usize, ConfigError> {
    Ok(RuntimeConfig::default()
        .with_one(&vars::NEFFLD_MAX_STEPS, lookup)?
        .loader
        .max_steps)
}

/// The ceiling on a NEFF read from a stream (standard input, a pipe, a
/// device): `NEFFLD_MAX_NEFF_SIZE` as `lookup` gives it, else
/// [`crate::container::stream::MAX_STREAM_NEFF`].
pub(crate) fn max_stream_neff(lookup: impl Fn(&str) -> Option<String>) -> Result<u64, ConfigError> {
    Ok(RuntimeConfig::default()
        .with_one(&vars::NEFFLD_MAX_NEFF_SIZE, lookup)?
        .loader
        .max_neff_size)
}

/// `"0-3,6"` → `[0, 1, 2, 3, 6]` (sorted, deduplicated).
pub(crate) fn parse_core_list(var: &'static str, v: &str) -> Result<Vec<u32>, ConfigError> {
    let bad = |reason: &str| ConfigError {
        var,
        value: v.into(),
        reason: reason.into(),
    };
    let mut out = Vec::new();
    for part in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (parse_num(var, a)?, parse_num(var, b)?);
                if a > b || b - a > 4096 {
                    return Err(bad("a range must be ascending and at most 4096 long"));
                }
                out.extend(a..=b);
            }
            None => out.push(parse_num(var, part)?),
        }
    }
    if out.is_empty() {
        return Err(bad("no core listed"));
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

impl RuntimeConfig {
    /// Applies every variable a runtime reads ([`Reader::Runtime`]) that
    /// `lookup` knows over `self`, in [`VARIABLES`]' order; a variable the
    /// configured line does not have is ignored, as its runtime does.
    pub fn with_env(
        mut self,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<RuntimeConfig, ConfigError> {
        for var in VARIABLES.iter().filter(|v| v.reader == Reader::Runtime) {
            if !var.read_under(self.line()) {
                continue;
            }
            if let Some(value) = lookup(var.name) {
                var.apply(&mut self, value)?;
            }
        }
        Ok(self)
    }

    /// Applies `var` alone, as `lookup` gives it, over `self`.
    pub fn with_one(
        mut self,
        var: &Variable,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<RuntimeConfig, ConfigError> {
        if let Some(value) = lookup(var.name) {
            var.apply(&mut self, value)?;
        }
        Ok(self)
    }

    /// Whether a device allocation refused for want of room reports the
    /// HBM's usage (the log lines and the `neuron_mem_table_*` file): always
    /// before 2.33, else unless `NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG=0`.
    /// The allocation fails either way.
    pub fn oom_log_enabled(&self) -> bool {
        !self.line().oom_log_switch() || self.libnrt.oom_log.unwrap_or(true)
    }

    /// What a runtime of this configuration warns about when it starts:
    /// implicit async execution asked for on a line that deprecated it
    /// (2.32) or removed it (2.33, 2.34; the release notes differ on which).
    pub fn start_warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(v) = &self.libnrt.implicit_async {
            let state = match self.line().implicit_async() {
                ImplicitAsync::Supported => None,
                ImplicitAsync::Deprecated => Some("deprecated"),
                ImplicitAsync::Removed => {
                    Some("no longer supported and the variable has no effect")
                }
            };
            if let Some(state) = state {
                out.push(format!(
                    "NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS={} is set: implicit async mode is {state} in runtime {}; use the explicit async API (nrta_*) instead",
                    crate::text::escape(v),
                    self.line()
                ));
            }
        }
        out
    }

    /// This configuration on `instance`: its architecture and chip count.
    pub fn on_instance(mut self, instance: &'static Instance) -> RuntimeConfig {
        self.topology.instance = Some(instance);
        self.topology.arch = instance.arch;
        self.topology.chips = instance.chips;
        self
    }

    /// Logical cores of the whole instance (every chip) at this LNC size.
    pub fn total_vnc_count(&self) -> u32 {
        let cores = crate::device::Geometry::for_arch(self.topology.arch).cores();
        self.topology.chips.max(1) * cores / self.lnc_size().max(1)
    }

    /// Logical cores a runtime of this configuration starts: the visible
    /// ones (`NEURON_RT_VISIBLE_CORES`, `NEURON_RT_NUM_CORES`), else every
    /// one of the instance.
    pub fn started_vnc_count(&self) -> usize {
        self.topology
            .visible_cores
            .as_ref()
            .map_or(self.total_vnc_count() as usize, |v| v.cores.len())
    }

    /// Defaults overridden by the process environment.
    pub fn from_env() -> Result<RuntimeConfig, ConfigError> {
        RuntimeConfig::default().with_env(|k| std::env::var(k).ok())
    }

    /// What the parse cache keeps.
    pub(crate) fn cache_policy(&self) -> crate::cache::CachePolicy {
        crate::cache::CachePolicy {
            slots: self.loader.cache_slots,
            retain: self.loader.cache_retain,
            retain_bytes: self.loader.cache_retain_bytes,
            late_reuse: !self.loader.one_load_at_a_time,
        }
    }

    /// The runtime line loads run under: the configured one, else the
    /// architecture's default.
    pub fn line(&self) -> RuntimeLine {
        self.libnrt.line.unwrap_or(RuntimeLine::NEWEST)
    }

    /// The captured line whose rules loads follow on this architecture
    /// ([`RuntimeLine::captured`]).
    pub(crate) fn captured_line(&self) -> crate::line::Captured {
        self.line().captured(self.topology.arch)
    }

    /// What the runtime allocates for itself when it starts on a device of
    /// `geometry` ([`crate::memory::start_plan`]): its line's rows and
    /// start-up deltas.
    pub(crate) fn start_plan(&self, geometry: &Geometry) -> crate::memory::StartPlan {
        crate::memory::start_plan(
            geometry,
            self.topology.arch,
            self.lnc_size(),
            self.line().facts(),
            |d| self.keeps(d),
        )
    }

    /// What a runtime of this configuration takes at start beyond the
    /// captured rows its line carries over, and why, in a sentence each:
    /// the line's start-up deltas on `logical_cores` started logical cores,
    /// or that a variable turned one off. What a plan notes, so that a
    /// plan under one line and under the line before it differ by what is
    /// said here.
    pub fn start_notes(&self, logical_cores: usize) -> Vec<String> {
        use crate::line::facts::mib;
        let line = self.line();
        line.facts()
            .start
            .iter()
            .map(|d| {
                let (cores, noun) = match d.per {
                    crate::line::Per::PhysicalCore => (
                        logical_cores.saturating_mul(self.lnc_size() as usize),
                        "physical core",
                    ),
                    _ => (logical_cores, "logical core"),
                };
                match d.off_by {
                    Some(var) if !self.keeps(d) => format!(
                        "runtime {line} would take {} per {} at start for {}; {var}=0 leaves it out here",
                        mib(d.bytes),
                        d.per.noun(),
                        d.what,
                    ),
                    _ => format!(
                        "runtime {line} takes {} per {} at start for {}: {} on the {} it starts here{}",
                        mib(d.bytes),
                        d.per.noun(),
                        d.what,
                        mib(d.bytes.saturating_mul(cores as u64)),
                        crate::text::count(cores as u64, noun),
                        d.off_by
                            .map_or(String::new(), |var| format!("; {var}=0 leaves it out")),
                    ),
                }
            })
            .collect()
    }

    /// Whether a runtime of this configuration takes its line's start-up
    /// delta `d`: unless the variable that turns it off says `0`.
    pub fn keeps(&self, d: &crate::line::StartDelta) -> bool {
        d.off_by
            .is_none_or(|var| !self.libnrt.start_off.contains(&var))
    }

    /// Whether the contiguous scratchpad is asked for: by the environment,
    /// else by the runtime line.
    pub fn contiguous_scratchpad_asked(&self) -> bool {
        self.libnrt
            .contiguous_scratchpad
            .unwrap_or_else(|| self.line().contiguous_scratchpad())
    }

    /// How every core keeps its scratchpad (stage.md §6.5): one contiguous
    /// region of 64 MiB pages when that is asked for and allowed — the
    /// runtime turns it off on a one-core logical core of trn2 and trn3 —
    /// else pages of [`Libnrt::scratchpad_page`] bytes.
    pub(crate) fn scratchpad_mode(&self) -> ScratchpadMode {
        let allowed = self.topology.arch == Arch::Sunda || self.lnc_size() > 1;
        if self.contiguous_scratchpad_asked() && allowed {
            if self.line().contiguous_scratchpad() {
                ScratchpadMode::contiguous()
            } else {
                ScratchpadMode::capped_contiguous()
            }
        } else {
            ScratchpadMode::paged(self.libnrt.scratchpad_page)
        }
    }

    /// The logical cores this configuration may use on an instance of
    /// `chips` devices of `cores_per_chip` physical cores each, by visible
    /// index: the one check of the LNC size and of
    /// `NEURON_RT_VISIBLE_CORES` / `NEURON_RT_NUM_CORES` against the
    /// devices, made when a runtime starts and by the core counts asked
    /// before one does. A refusal quotes the variable's value as the user
    /// gave it.
    pub fn logical_cores(&self, chip: &Geometry, chips: u32) -> Result<Vec<u32>, ConfigError> {
        let lnc = self.lnc_size();
        if !chip.takes_lnc(lnc) {
            return Err(ConfigError {
                var: "NEURON_LOGICAL_NC_CONFIG",
                value: lnc.to_string(),
                reason: format!(
                    "{} takes logical-core size {}",
                    self.topology.arch.instance(),
                    chip.lnc_sizes_text()
                ),
            });
        }
        let cores_per_chip = chip.cores();
        let total = cores_per_chip / lnc * chips;
        let Some(list) = &self.topology.visible_cores else {
            return Ok((0..total).collect());
        };
        if let Some(bad) = list.cores.iter().find(|&&c| c >= total) {
            // A count names no core: say the count, not the first core
            // past the end.
            let asked = match list.var {
                "NEURON_RT_NUM_CORES" => format!(
                    "{} asked, and this instance has",
                    crate::text::count(list.cores.len() as u64, "logical core")
                ),
                _ => format!("logical core {bad} is not on this instance, which has"),
            };
            return Err(ConfigError {
                var: list.var,
                value: list.value.clone(),
                reason: format!(
                    "{asked} {} of size {lnc} (0 to {})",
                    crate::text::count(total, "logical core"),
                    total.saturating_sub(1)
                ),
            });
        }
        Ok(list.cores.clone())
    }

    /// The effective logical-core size: sunda is forced to 1 (stage.md §5.1).
    pub fn lnc_size(&self) -> u32 {
        match self.topology.arch {
            Arch::Sunda => 1,
            _ => self.topology.lnc.unwrap_or(2),
        }
    }

    /// Whether a runtime under this configuration replays loads: asked
    /// for, on devices that keep no bytes (the replay writes none), with
    /// no check of the staged model and no staged images kept (a replayed
    /// load keeps only its allocations, not where each variable, ring and
    /// image landed).
    pub(crate) fn replays(&self) -> bool {
        self.loader.replay == Some(true)
            && self.loader.device == DeviceKind::Null
            && !self.loader.check
            && !self.loader.retain_images
    }

    /// The chip a load runs on, as messages name it: the instance's when
    /// one is set.
    pub fn chip(&self) -> crate::arch::Chip {
        self.topology
            .instance
            .map_or(crate::arch::Chip::of(self.topology.arch), Instance::chip)
    }

    /// How a load under this configuration reads the manifests (S2, S3).
    pub(crate) fn parse_options(&self) -> crate::manifest::ParseOptions {
        crate::manifest::ParseOptions {
            chip: self.chip(),
            allow_legacy_neff: self.libnrt.allow_legacy_neff,
            runtime_lnc: self.lnc_size(),
        }
    }

    /// How a load under this configuration opens a NEFF (S1): the hash gate
    /// and the two ceilings.
    pub fn open_options(&self) -> OpenOptions {
        OpenOptions {
            verify_hash: self.libnrt.validate_hash,
            compare_hash: false,
            inflate_limit: self.loader.max_inflated,
            max_members: self.loader.max_members,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::HashMap;

    /// An environment of `pairs` only, for the tests of what reads one.
    pub(crate) fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn variables_override_defaults() {
        let c = RuntimeConfig::default()
            .with_env(env(&[
                ("NEFFLD_ARCH", "trn1"),
                ("NEFFLD_DEVICE", "null"),
                ("NEURON_RT_VISIBLE_CORES", "2-3,0"),
                ("NEURON_RT_VALIDATE_HASH", "true"),
                ("NEURON_SCRATCHPAD_PAGE_SIZE", "64"),
                ("NEURON_RT_ALLOW_LEGACY_NEFF", "1"),
                ("NEFFLD_FANOUT_MIN_BYTES", "0"),
                ("NEFFLD_MAX_MEMBERS", "1000000"),
                ("NEFFLD_RUNTIME", "2.25.57"),
            ]))
            .unwrap();
        assert_eq!(c.line(), RuntimeLine::V2_25);
        assert_eq!(c.loader.fanout_min_bytes, 0);
        assert_eq!(c.loader.max_members, Some(1_000_000));
        assert_eq!(c.topology.arch, Arch::Sunda);
        assert_eq!(c.loader.device, DeviceKind::Null);
        assert_eq!(
            c.topology.visible_cores.as_ref().map(|l| &l.cores[..]),
            Some(&[0, 2, 3][..])
        );
        assert!(c.libnrt.validate_hash && c.libnrt.allow_legacy_neff);
        assert_eq!(c.libnrt.scratchpad_page, 64 << 20);
        assert_eq!(c.lnc_size(), 1, "sunda forces LNC 1");
        let d = RuntimeConfig::default();
        assert_eq!(d.lnc_size(), 2);
        assert!(!d.libnrt.validate_hash);
        assert_eq!(
            d.loader.fanout_min_bytes,
            crate::stage::DEFAULT_FANOUT_MIN_BYTES
        );
        assert_eq!(d.loader.max_members, None);
        assert_eq!(d.line(), RuntimeLine::NEWEST, "trn2's default: the newest");
        let trn1 = RuntimeConfig {
            topology: Topology {
                arch: Arch::Sunda,
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(
            trn1.line(),
            RuntimeLine::NEWEST,
            "trn1's default: the newest"
        );
    }

    /// Page sizes as the runtime checks them when it starts (bytes above 0
    /// and below 4 GiB), and the contiguous mode: the default from 2.33
    /// (device-memory documentation), asked for by either variable on the
    /// older lines (then capped where it cannot grow), turned off by
    /// `NEURON_RT_CONTIGUOUS_SCRATCHPAD=0`, refused on a one-core logical
    /// core of trn2 and trn3, where the page is always 64 MiB.
    #[test]
    fn scratchpad_page_sizes_and_the_contiguous_mode() {
        let page = |mib: &str| {
            RuntimeConfig::default()
                .with_env(env(&[("NEURON_SCRATCHPAD_PAGE_SIZE", mib)]))
                .map(|c| c.libnrt.scratchpad_page)
        };
        assert_eq!(page("1"), Ok(1 << 20));
        assert_eq!(
            page("700"),
            Ok(700 << 20),
            "not a multiple of 512: accepted"
        );
        assert_eq!(page("4095"), Ok(4095 << 20));
        for bad in ["0", "4096", "99999999999999999"] {
            let e = page(bad).unwrap_err();
            assert_eq!(e.var, "NEURON_SCRATCHPAD_PAGE_SIZE");
            assert!(
                e.reason.contains("less than 4294967296 bytes"),
                "{bad}: {e}"
            );
        }
        for line in RuntimeLine::ALL {
            let (major, minor) = line.version();
            assert_eq!(
                line.contiguous_scratchpad(),
                (major, minor) >= (2, 33),
                "{line}"
            );
        }
        let mode = |pairs: &[(&str, &str)]| {
            RuntimeConfig::default()
                .with_env(env(pairs))
                .unwrap()
                .scratchpad_mode()
        };
        assert_eq!(
            mode(&[]),
            ScratchpadMode::contiguous(),
            "the newest on trn2"
        );
        assert_eq!(ScratchpadMode::contiguous().page, 64 << 20);
        let old = ("NEFFLD_RUNTIME", "2.32");
        assert_eq!(mode(&[old]), ScratchpadMode::paged(512 << 20));
        let off = ("NEURON_RT_CONTIGUOUS_SCRATCHPAD", "0");
        let big = ("NEURON_SCRATCHPAD_PAGE_SIZE", "2048");
        assert_eq!(mode(&[off, big]), ScratchpadMode::paged(2048 << 20));
        assert_eq!(
            mode(&[big]),
            ScratchpadMode::contiguous(),
            "the page size is ignored while the region is contiguous"
        );
        let on = ("NEURON_RT_CONTIGUOUS_SCRATCHPAD", "1");
        assert_eq!(mode(&[on, old]), ScratchpadMode::capped_contiguous());
        assert_eq!(
            mode(&[
                ("NEURON_RT_DBG_EXPERIMENTAL_CONTIGUOUS_SCRATCHPAD", "1"),
                old
            ]),
            ScratchpadMode::capped_contiguous()
        );
        let lnc1 = ("NEURON_LOGICAL_NC_CONFIG", "1");
        assert_eq!(mode(&[on, big, lnc1]), ScratchpadMode::paged(2048 << 20));
        assert_eq!(mode(&[lnc1]), ScratchpadMode::paged(512 << 20));
        let trn1 = ("NEFFLD_ARCH", "trn1");
        assert_eq!(mode(&[trn1]), ScratchpadMode::contiguous());
        assert_eq!(mode(&[trn1, off]), ScratchpadMode::paged(512 << 20));
        let trn3 = ("NEFFLD_ARCH", "trn3");
        assert_eq!(mode(&[trn3]), ScratchpadMode::contiguous());
        assert_eq!(mode(&[trn3, lnc1]), ScratchpadMode::paged(512 << 20));
        let e = RuntimeConfig::default()
            .with_env(env(&[("NEURON_RT_CONTIGUOUS_SCRATCHPAD", "sometimes")]))
            .unwrap_err();
        assert_eq!(e.var, "NEURON_RT_CONTIGUOUS_SCRATCHPAD");
    }

    /// Implicit async execution: warned about from 2.32, silently kept on
    /// the older lines.
    #[test]
    fn implicit_async_is_warned_about_from_2_32() {
        let set = ("NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS", "4");
        let warnings = |line: &str| {
            RuntimeConfig::default()
                .with_env(env(&[set, ("NEFFLD_RUNTIME", line)]))
                .unwrap()
                .start_warnings()
        };
        assert!(warnings("2.31").is_empty());
        let w = warnings("2.32");
        assert!(w.len() == 1 && w[0].contains("deprecated"), "{w:?}");
        let w = warnings("2.34");
        assert!(w[0].contains("no effect") && w[0].contains("=4"), "{w:?}");
        assert!(RuntimeConfig::default().start_warnings().is_empty());
    }

    /// `NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG`: read from 2.33 (`0` or `1`,
    /// anything else refused naming it), ignored by the older lines.
    #[test]
    fn the_oom_log_switch_is_read_from_2_33() {
        let enabled = |pairs: &[(&str, &str)]| {
            RuntimeConfig::default()
                .with_env(env(pairs))
                .map(|c| c.oom_log_enabled())
        };
        let off = ("NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG", "0");
        assert_eq!(enabled(&[]), Ok(true));
        assert_eq!(enabled(&[off]), Ok(false));
        assert_eq!(enabled(&[off, ("NEFFLD_RUNTIME", "2.33")]), Ok(false));
        assert_eq!(enabled(&[off, ("NEFFLD_RUNTIME", "2.32")]), Ok(true));
        let on = ("NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG", " 1 ");
        assert_eq!(enabled(&[on]), Ok(true));
        let bad = ("NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG", "off");
        let e = enabled(&[bad]).unwrap_err();
        assert_eq!(e.var, "NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG");
        assert!(e.to_string().contains("\"off\""), "{e}");
        assert_eq!(enabled(&[bad, ("NEFFLD_RUNTIME", "2.30")]), Ok(true));
    }

    #[test]
    fn cache_retention_is_read_from_the_environment() {
        let d = RuntimeConfig::default().cache_policy();
        assert_eq!((d.slots, d.retain, d.late_reuse), (1, 0, true));
        let c = RuntimeConfig::default()
            .with_env(env(&[
                ("NEFFLD_CACHE_RETAIN", "8"),
                ("NEFFLD_CACHE_RETAIN_BYTES", "1048576"),
            ]))
            .unwrap();
        let p = c.cache_policy();
        assert_eq!((p.retain, p.retain_bytes), (8, 1 << 20));
        let e = RuntimeConfig::default()
            .with_env(env(&[("NEFFLD_CACHE_RETAIN", "-1")]))
            .unwrap_err();
        assert_eq!(e.var, "NEFFLD_CACHE_RETAIN");
    }

    /// The cores a configuration may use are checked against a device in
    /// one place, which quotes the user's own value.
    #[test]
    fn visible_cores_the_device_lacks_are_refused_quoting_the_value() {
        let c = RuntimeConfig::default()
            .with_env(env(&[("NEURON_RT_VISIBLE_CORES", "0-999")]))
            .unwrap();
        let e = c
            .logical_cores(&Geometry::for_arch(Arch::Cayman), 1)
            .unwrap_err();
        assert_eq!(
            (e.var, e.value.as_str()),
            ("NEURON_RT_VISIBLE_CORES", "0-999")
        );
        let text = e.to_string();
        assert!(
            text.contains("\"0-999\"") && text.contains("4 logical cores"),
            "{text}"
        );
        // 0 is the variable's default, every core.
        let c = RuntimeConfig::default()
            .with_env(env(&[("NEURON_RT_NUM_CORES", "0")]))
            .unwrap();
        assert_eq!(
            c.logical_cores(&Geometry::for_arch(Arch::Cayman), 1)
                .unwrap(),
            [0, 1, 2, 3]
        );
        let c = RuntimeConfig::default()
            .with_env(env(&[("NEURON_RT_NUM_CORES", "9")]))
            .unwrap();
        let e = c
            .logical_cores(&Geometry::for_arch(Arch::Cayman), 1)
            .unwrap_err();
        assert_eq!(e.value, "9");
        // A count names no core: the message gives the count.
        assert!(e.reason.starts_with("9 logical cores asked"), "{e}");
        let c = RuntimeConfig::default()
            .with_env(env(&[("NEURON_RT_VISIBLE_CORES", "3, 1")]))
            .unwrap();
        assert_eq!(
            c.logical_cores(&Geometry::for_arch(Arch::Cayman), 1)
                .unwrap(),
            [1, 3]
        );
        assert_eq!(
            RuntimeConfig::default()
                .logical_cores(&Geometry::for_arch(Arch::Cayman), 1)
                .unwrap(),
            [0, 1, 2, 3]
        );
    }

    /// One LNC rule, libnrt's: trn2 and trn3 take 1 or 2, trn1 runs every
    /// core alone whatever is asked. A size that divides the cores (4 on a
    /// trn2's 8) is still refused.
    #[test]
    fn the_lnc_sizes_are_the_runtimes() {
        for (arch, asked, takes) in [
            (Arch::Cayman, 1, true),
            (Arch::Cayman, 2, true),
            (Arch::Cayman, 4, false),
            (Arch::Cayman, 8, false),
            (Arch::Mariana, 4, false),
            (Arch::Sunda, 2, true),
        ] {
            let c = RuntimeConfig {
                topology: Topology {
                    arch,
                    lnc: Some(asked),
                    ..Default::default()
                },
                ..Default::default()
            };
            let got = c.logical_cores(&Geometry::for_arch(arch), 1);
            assert_eq!(got.is_ok(), takes, "{arch:?} LNC {asked}: {got:?}");
            if let Err(e) = got {
                assert_eq!(e.var, "NEURON_LOGICAL_NC_CONFIG");
                assert_eq!(e.value, asked.to_string());
                assert!(e.to_string().contains("1 or 2"), "{e}");
            }
        }
        let trn1 = RuntimeConfig {
            topology: Topology {
                arch: Arch::Sunda,
                lnc: Some(2),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(
            trn1.logical_cores(&Geometry::for_arch(Arch::Sunda), 1)
                .unwrap(),
            [0, 1],
            "trn1 runs LNC 1"
        );
    }

    #[test]
    fn an_instance_sets_the_architecture_and_the_chips() {
        let c = RuntimeConfig::default()
            .with_env(env(&[("NEFFLD_INSTANCE", "inf2.24xlarge")]))
            .unwrap();
        assert_eq!((c.topology.arch, c.topology.chips), (Arch::Sunda, 6));
        assert_eq!(c.topology.instance.unwrap().family, "inf2");
        assert_eq!(c.total_vnc_count(), 12, "six chips of two cores, LNC 1");
        let c = RuntimeConfig::default()
            .with_env(env(&[
                ("NEFFLD_INSTANCE", "trn2.48xlarge"),
                ("NEURON_LOGICAL_NC_CONFIG", "1"),
            ]))
            .unwrap();
        assert_eq!(c.total_vnc_count(), 128);
        let e = RuntimeConfig::default()
            .with_env(env(&[
                ("NEFFLD_INSTANCE", "trn2.3xlarge"),
                ("NEFFLD_ARCH", "trn1"),
            ]))
            .unwrap_err();
        assert_eq!(e.var, "NEFFLD_ARCH");
        let e = RuntimeConfig::default()
            .with_env(env(&[("NEFFLD_INSTANCE", "trn2.huge")]))
            .unwrap_err();
        assert!(e.to_string().contains("trn2.3xlarge"), "{e}");
    }

    #[test]
    fn profile_buffers_are_read_in_mib() {
        let c = RuntimeConfig::default()
            .with_env(env(&[
                ("NEURON_RT_PROFILE_BUF_DMA_MB", "512"),
                ("NEURON_RT_PROFILE_BUF_EVENT_MB", "64"),
            ]))
            .unwrap();
        assert_eq!(
            c.libnrt.profile_buffers,
            [("EVENT", 64 << 20), ("DMA", 512 << 20)]
        );
    }

    /// The variables a runtime reads are exactly what `with_env` asks for
    /// (under the newest line, which has them all), so a caller that
    /// refuses the others refuses only what would be ignored.
    #[test]
    fn the_variable_list_is_what_is_read() {
        let asked = std::sync::Mutex::new(Vec::new());
        RuntimeConfig::default()
            .with_env(|k| {
                asked.lock().unwrap().push(k.to_string());
                None
            })
            .unwrap();
        let mut asked = asked.into_inner().unwrap();
        asked.sort();
        let mut listed: Vec<String> = vars::names(Reader::Runtime).map(str::to_string).collect();
        listed.sort();
        assert_eq!(asked, listed);
    }

    #[test]
    fn bad_values_name_the_variable() {
        let e = RuntimeConfig::default()
            .with_env(env(&[("NEURON_RT_VALIDATE_HASH", "maybe")]))
            .unwrap_err();
        assert_eq!(e.var, "NEURON_RT_VALIDATE_HASH");
        assert!(e.to_string().contains("maybe"));
        assert!(RuntimeConfig::default()
            .with_env(env(&[("NEURON_RT_VISIBLE_CORES", "3-1")]))
            .is_err());
        assert!(RuntimeConfig::default()
            .with_env(env(&[("NEURON_SCRATCHPAD_PAGE_SIZE", "4096")]))
            .is_err());
        assert!(RuntimeConfig::default()
            .with_env(env(&[("NEFFLD_ARCH", "trn9")]))
            .is_err());
        let e = RuntimeConfig::default()
            .with_env(env(&[("NEFFLD_MAX_MEMBERS", "many")]))
            .unwrap_err();
        assert_eq!(e.var, "NEFFLD_MAX_MEMBERS");
        let e = RuntimeConfig::default()
            .with_env(env(&[("NEFFLD_RUNTIME", "2.26")]))
            .unwrap_err();
        assert_eq!(e.var, "NEFFLD_RUNTIME");
        assert!(e.to_string().contains("'2.26'"), "{e}");
    }

    /// Issue 29 row 9: a profiler buffer whose bytes overflow 64 bits is
    /// refused naming the variable (`mib << 20` wrapped to 0 bytes).
    #[test]
    fn a_profiler_buffer_that_overflows_is_refused() {
        for v in ["17592186044416", "17592186044417"] {
            let e = RuntimeConfig::default()
                .with_env(env(&[("NEURON_RT_PROFILE_BUF_EVENT_MB", v)]))
                .unwrap_err();
            assert_eq!(e.var, "NEURON_RT_PROFILE_BUF_EVENT_MB");
            assert!(e.to_string().contains(v), "{e}");
        }
        let c = RuntimeConfig::default()
            .with_env(env(&[("NEURON_RT_PROFILE_BUF_EVENT_MB", "17592186044415")]))
            .unwrap();
        assert_eq!(
            c.libnrt.profile_buffers,
            vec![("EVENT", 17592186044415u64 << 20)]
        );
    }
}
