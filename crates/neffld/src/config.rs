//! Runtime and per-load configuration, from explicit values or from the
//! `NEURON_RT_*` environment variables the reference runtime reads
//! (stage.md §15). Parsing takes a lookup function, so it is tested without
//! touching the process environment; only [`RuntimeConfig::from_env`] reads it.

use thiserror::Error;

use crate::container::OpenOptions;
use crate::line::RuntimeLine;
use crate::Arch;

#[derive(Debug, Error, PartialEq, Eq)]
#[error("invalid value {value:?} for {var}: {reason}")]
pub struct ConfigError {
    pub var: &'static str,
    pub value: String,
    pub reason: String,
}

impl ConfigError {
    pub fn status(&self) -> crate::NrtStatus {
        crate::NrtStatus::Invalid
    }
}

/// Logical cores as the user listed them: the cores, and the variable and
/// value that listed them, which messages quote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreList {
    pub var: &'static str,
    pub value: String,
    /// Sorted, without duplicates.
    pub cores: Vec<u32>,
}

/// Which simulated backend a runtime stages onto.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceKind {
    /// Keeps every written byte (sparsely): the device image can be read back.
    Sim,
    /// Keeps no bytes: for NEFFs too large to mirror.
    Null,
}

/// Everything a runtime is configured with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeConfig {
    /// The instance architecture (the arch gate compares NEFFs against it).
    pub arch: Arch,
    /// Devices (chips) of the instance, each of the architecture's geometry
    /// (`ND 0` … `ND chips-1`); logical cores are numbered across them.
    pub chips: u32,
    /// The runtime line whose behaviour loads reproduce (`NEFFLD_RUNTIME`:
    /// `2.27` or a version such as `2.27.23`); `None` = the newest line
    /// with evidence for the architecture ([`RuntimeLine::default_for`]).
    pub runtime: Option<RuntimeLine>,
    pub device: DeviceKind,
    /// Logical-core size; `None` = the architecture's default (sunda: 1, else 2).
    pub lnc: Option<u32>,
    /// Logical cores this process may use (`NEURON_RT_VISIBLE_CORES` /
    /// `NEURON_RT_NUM_CORES`); `None` = all. Checked against a device by
    /// [`RuntimeConfig::logical_cores`].
    pub visible_cores: Option<CoreList>,
    /// `NEURON_RT_VALIDATE_HASH`: check the payload digest (default off).
    pub validate_hash: bool,
    /// `NEURON_RT_ALLOW_LEGACY_NEFF`: accept an architecture mismatch and a
    /// missing Cayman SB reservation.
    pub allow_legacy_neff: bool,
    /// `NEURON_RT_EXEC_TIMEOUT`, seconds (recorded with each model).
    pub exec_timeout_s: u32,
    /// `NEURON_SCRATCHPAD_PAGE_SIZE` in bytes (given in MiB).
    pub scratchpad_page: u64,
    /// Ceiling on a NEFF's inflated payload (`NEFFLD_MAX_INFLATED`); `None` =
    /// the container default.
    pub max_inflated: Option<u64>,
    /// Ceiling on a NEFF's tar entries (`NEFFLD_MAX_MEMBERS`); `None` = the
    /// container default.
    pub max_members: Option<u64>,
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
    /// Fan a multi-subgraph load's core builds out to threads only when they
    /// copy at least this many bytes (`NEFFLD_FANOUT_MIN_BYTES`; 0 = always,
    /// as the reference does).
    pub fanout_min_bytes: u64,
    /// `NEURON_RT_ROOT_COMM_ID` (`host:port` of the root communicator),
    /// required by collectives loads.
    pub root_comm_id: Option<String>,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            arch: Arch::Cayman,
            chips: 1,
            runtime: None,
            device: DeviceKind::Sim,
            lnc: None,
            visible_cores: None,
            validate_hash: false,
            allow_legacy_neff: false,
            exec_timeout_s: 30,
            scratchpad_page: 512 << 20,
            max_inflated: None,
            max_members: None,
            cache_slots: 1,
            cache_retain: 0,
            cache_retain_bytes: crate::cache::DEFAULT_RETAIN_BYTES,
            one_load_at_a_time: false,
            check: false,
            fanout_min_bytes: crate::stage::DEFAULT_FANOUT_MIN_BYTES,
            root_comm_id: None,
        }
    }
}

fn parse_bool(var: &'static str, v: &str) -> Result<bool, ConfigError> {
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

fn parse_num<T: std::str::FromStr>(var: &'static str, v: &str) -> Result<T, ConfigError> {
    v.trim().parse().map_err(|_| ConfigError {
        var,
        value: v.into(),
        reason: "expected a non-negative integer".into(),
    })
}

/// `"0-3,6"` → `[0, 1, 2, 3, 6]` (sorted, deduplicated).
pub fn parse_core_list(var: &'static str, v: &str) -> Result<Vec<u32>, ConfigError> {
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
    /// Applies every recognised variable that `lookup` knows over `self`.
    pub fn with_env(
        mut self,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<RuntimeConfig, ConfigError> {
        if let Some(v) = lookup("NEFFLD_ARCH") {
            self.arch = v.parse().map_err(|reason| ConfigError {
                var: "NEFFLD_ARCH",
                value: v.clone(),
                reason,
            })?;
        }
        if let Some(v) = lookup("NEFFLD_RUNTIME") {
            self.runtime = Some(v.parse().map_err(|reason| ConfigError {
                var: "NEFFLD_RUNTIME",
                value: v.clone(),
                reason,
            })?);
        }
        if let Some(v) = lookup("NEFFLD_DEVICE") {
            self.device = match v.trim() {
                "sim" => DeviceKind::Sim,
                "null" => DeviceKind::Null,
                _ => {
                    return Err(ConfigError {
                        var: "NEFFLD_DEVICE",
                        value: v,
                        reason: "expected sim or null".into(),
                    })
                }
            };
        }
        for var in ["NEURON_RT_VIRTUAL_CORE_SIZE", "NEURON_LOGICAL_NC_CONFIG"] {
            if let Some(v) = lookup(var) {
                self.lnc = Some(parse_num(var, &v)?);
            }
        }
        if let Some(v) = lookup("NEURON_RT_NUM_CORES") {
            let var = "NEURON_RT_NUM_CORES";
            let n: u32 = parse_num(var, &v)?;
            if n > 4096 {
                return Err(ConfigError {
                    var,
                    value: v,
                    reason: "at most 4096 cores".into(),
                });
            }
            self.visible_cores = Some(CoreList {
                var,
                cores: (0..n).collect(),
                value: v,
            });
        }
        if let Some(v) = lookup("NEURON_RT_VISIBLE_CORES") {
            let var = "NEURON_RT_VISIBLE_CORES";
            self.visible_cores = Some(CoreList {
                var,
                cores: parse_core_list(var, &v)?,
                value: v,
            });
        }
        if let Some(v) = lookup("NEURON_RT_VALIDATE_HASH") {
            self.validate_hash = parse_bool("NEURON_RT_VALIDATE_HASH", &v)?;
        }
        if let Some(v) = lookup("NEURON_RT_ALLOW_LEGACY_NEFF") {
            self.allow_legacy_neff = parse_bool("NEURON_RT_ALLOW_LEGACY_NEFF", &v)?;
        }
        if let Some(v) = lookup("NEURON_RT_EXEC_TIMEOUT") {
            self.exec_timeout_s = parse_num("NEURON_RT_EXEC_TIMEOUT", &v)?;
        }
        if let Some(v) = lookup("NEURON_SCRATCHPAD_PAGE_SIZE") {
            let mib: u64 = parse_num("NEURON_SCRATCHPAD_PAGE_SIZE", &v)?;
            if mib == 0 || mib >= 4096 {
                return Err(ConfigError {
                    var: "NEURON_SCRATCHPAD_PAGE_SIZE",
                    value: v,
                    reason: "Invalid scratchpad page size: expected 1..4095 MiB".into(),
                });
            }
            self.scratchpad_page = mib << 20;
        }
        if let Some(v) = lookup("NEFFLD_MAX_INFLATED") {
            self.max_inflated = Some(parse_num("NEFFLD_MAX_INFLATED", &v)?);
        }
        if let Some(v) = lookup("NEFFLD_MAX_MEMBERS") {
            self.max_members = Some(parse_num("NEFFLD_MAX_MEMBERS", &v)?);
        }
        if let Some(v) = lookup("NEURON_RT_ROOT_COMM_ID") {
            self.root_comm_id = Some(v).filter(|v| !v.trim().is_empty());
        }
        if let Some(v) = lookup("NEFFLD_CHECK") {
            self.check = parse_bool("NEFFLD_CHECK", &v)?;
        }
        if let Some(v) = lookup("NEFFLD_CACHE_SLOTS") {
            self.cache_slots = parse_num::<usize>("NEFFLD_CACHE_SLOTS", &v)?.max(1);
        }
        if let Some(v) = lookup("NEFFLD_CACHE_RETAIN") {
            self.cache_retain = parse_num("NEFFLD_CACHE_RETAIN", &v)?;
        }
        if let Some(v) = lookup("NEFFLD_CACHE_RETAIN_BYTES") {
            self.cache_retain_bytes = parse_num("NEFFLD_CACHE_RETAIN_BYTES", &v)?;
        }
        if let Some(v) = lookup("NEFFLD_FANOUT_MIN_BYTES") {
            self.fanout_min_bytes = parse_num("NEFFLD_FANOUT_MIN_BYTES", &v)?;
        }
        Ok(self)
    }

    /// Defaults overridden by the process environment.
    pub fn from_env() -> Result<RuntimeConfig, ConfigError> {
        RuntimeConfig::default().with_env(|k| std::env::var(k).ok())
    }

    /// What the parse cache keeps.
    pub fn cache_policy(&self) -> crate::cache::CachePolicy {
        crate::cache::CachePolicy {
            slots: self.cache_slots,
            retain: self.cache_retain,
            retain_bytes: self.cache_retain_bytes,
            late_reuse: !self.one_load_at_a_time,
        }
    }

    /// The runtime line loads run under: the configured one, else the
    /// architecture's default.
    pub fn line(&self) -> RuntimeLine {
        self.runtime
            .unwrap_or_else(|| RuntimeLine::default_for(self.arch))
    }

    /// The logical cores this configuration may use on an instance of
    /// `chips` devices of `cores_per_chip` physical cores each, by visible
    /// index: the one check of the LNC size and of
    /// `NEURON_RT_VISIBLE_CORES` / `NEURON_RT_NUM_CORES` against the
    /// devices, made when a runtime starts and by the core counts asked
    /// before one does. A refusal quotes the variable's value as the user
    /// gave it.
    pub fn logical_cores(&self, cores_per_chip: u32, chips: u32) -> Result<Vec<u32>, ConfigError> {
        let lnc = self.lnc_size();
        if lnc == 0 || !lnc.is_power_of_two() || !cores_per_chip.is_multiple_of(lnc) {
            return Err(ConfigError {
                var: "NEURON_LOGICAL_NC_CONFIG",
                value: lnc.to_string(),
                reason: format!(
                    "the LNC size must be a power of two dividing the {cores_per_chip} cores"
                ),
            });
        }
        let total = cores_per_chip / lnc * chips;
        let Some(list) = &self.visible_cores else {
            return Ok((0..total).collect());
        };
        if let Some(bad) = list.cores.iter().find(|&&c| c >= total) {
            return Err(ConfigError {
                var: list.var,
                value: list.value.clone(),
                reason: format!(
                    "logical core {bad} is not on this instance, which has {} of size {lnc} (0 to {})",
                    crate::text::count(total, "logical core"),
                    total.saturating_sub(1)
                ),
            });
        }
        Ok(list.cores.clone())
    }

    /// The effective logical-core size: sunda is forced to 1 (stage.md §5.1).
    pub fn lnc_size(&self) -> u32 {
        match self.arch {
            Arch::Sunda => 1,
            _ => self.lnc.unwrap_or(2),
        }
    }

    /// How a load under this configuration opens a NEFF (S1): the hash gate
    /// and the two ceilings.
    pub fn open_options(&self) -> OpenOptions {
        OpenOptions {
            verify_hash: self.validate_hash,
            compare_hash: false,
            inflate_limit: self.max_inflated,
            max_members: self.max_members,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
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
        assert_eq!(c.fanout_min_bytes, 0);
        assert_eq!(c.max_members, Some(1_000_000));
        assert_eq!(c.arch, Arch::Sunda);
        assert_eq!(c.device, DeviceKind::Null);
        assert_eq!(
            c.visible_cores.as_ref().map(|l| &l.cores[..]),
            Some(&[0, 2, 3][..])
        );
        assert!(c.validate_hash && c.allow_legacy_neff);
        assert_eq!(c.scratchpad_page, 64 << 20);
        assert_eq!(c.lnc_size(), 1, "sunda forces LNC 1");
        let d = RuntimeConfig::default();
        assert_eq!(d.lnc_size(), 2);
        assert!(!d.validate_hash);
        assert_eq!(d.fanout_min_bytes, crate::stage::DEFAULT_FANOUT_MIN_BYTES);
        assert_eq!(d.max_members, None);
        assert_eq!(d.line(), RuntimeLine::V2_30, "trn2's default");
        let trn1 = RuntimeConfig {
            arch: Arch::Sunda,
            ..RuntimeConfig::default()
        };
        assert_eq!(trn1.line(), RuntimeLine::V2_23, "trn1's default");
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
        let e = c.logical_cores(8, 1).unwrap_err();
        assert_eq!(
            (e.var, e.value.as_str()),
            ("NEURON_RT_VISIBLE_CORES", "0-999")
        );
        let text = e.to_string();
        assert!(
            text.contains("\"0-999\"") && text.contains("4 logical cores"),
            "{text}"
        );
        let c = RuntimeConfig::default()
            .with_env(env(&[("NEURON_RT_NUM_CORES", "9")]))
            .unwrap();
        assert_eq!(c.logical_cores(8, 1).unwrap_err().value, "9");
        let c = RuntimeConfig::default()
            .with_env(env(&[("NEURON_RT_VISIBLE_CORES", "3, 1")]))
            .unwrap();
        assert_eq!(c.logical_cores(8, 1).unwrap(), [1, 3]);
        assert_eq!(
            RuntimeConfig::default().logical_cores(8, 1).unwrap(),
            [0, 1, 2, 3]
        );
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
}
