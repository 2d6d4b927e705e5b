//! The one answer to "what does this load run with": which architecture,
//! logical-core size, runtime line, device and checks. Every front end (the
//! `load`, `verify` and `plan` commands, Python's `load` and `verify`, the
//! planner) hands what its user gave to [`Settings::resolve`] and runs with
//! what it returns, so the same flags and variables give the same verdict
//! wherever they are given.
//!
//! The precedence, highest first (docs/cli.md, "Settings"):
//!
//! | setting | 1 | 2 | 3 | 4 |
//! |---|---|---|---|---|
//! | architecture | `--arch` | `--instance` | `NEFFLD_ARCH` / `NEFFLD_INSTANCE` (they must agree) | the NEFF's own target, else trn2 |
//! | logical-core size | `--lnc` | `NEURON_LOGICAL_NC_CONFIG` / `NEURON_RT_VIRTUAL_CORE_SIZE` | the NEFF's declared size, when the front end follows it and the architecture takes it | the architecture's (trn1: 1, else 2) |
//! | runtime line | `--runtime` | `NEFFLD_RUNTIME` | the newest ([`RuntimeLine::NEWEST`]) | |
//! | device | `--device` (the CLI's and Python's always give one) | `NEFFLD_DEVICE` | sim | |
//! | hash, check, legacy NEFFs | the flag | the variable | off | |
//! | inflate ceiling | `--max-inflated` | `NEFFLD_MAX_INFLATED` | the container's | |
//!
//! An architecture named by a flag or the environment is the instance's,
//! as a real runtime's is: a NEFF built for another one meets the arch gate
//! (parse.md §3, refused unless `NEURON_RT_ALLOW_LEGACY_NEFF`), never a
//! device chosen to suit it. Only when nothing names one does the NEFF's
//! own target choose the device.

use thiserror::Error;

use crate::config::{ConfigError, DeviceKind, RuntimeConfig};
use crate::container::{Neff, OpenOptions};
use crate::instance::Instance;
use crate::line::RuntimeLine;
use crate::Arch;

/// What a user gave on a command line or in a call, beside the
/// environment; `None` (or `false` for [`Asked::follow_neff_lnc`]) leaves
/// a setting to the next rule of the precedence.
#[derive(Clone, Copy, Debug, Default)]
pub struct Asked {
    /// `--arch` (a load's, or Python's `arch=`).
    pub arch: Option<Arch>,
    /// `--instance` (a plan's): its architecture and chips.
    pub instance: Option<&'static Instance>,
    /// `--lnc`.
    pub lnc: Option<u32>,
    /// `--runtime`.
    pub runtime: Option<RuntimeLine>,
    /// `--device`.
    pub device: Option<DeviceKind>,
    /// `--validate-hash` (`Some(true)`), or a command that decides the hash
    /// gate itself (`verify`: required unless `--ignore-hash`).
    pub validate_hash: Option<bool>,
    /// `--check`.
    pub check: Option<bool>,
    /// `--allow-legacy-neff`.
    pub allow_legacy_neff: Option<bool>,
    /// `--max-inflated`.
    pub max_inflated: Option<u64>,
    /// Take the NEFF's declared logical-core size when neither a flag nor
    /// the environment sets one (Python's `load` and `verify`, `inspect`'s
    /// reading of the manifests), rather than the architecture's default
    /// (a command-line `load`, as `nrt_load` under a default runtime).
    pub follow_neff_lnc: bool,
}

/// Where the architecture came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArchSource {
    /// `--arch`.
    Flag,
    /// `--instance`.
    Instance,
    /// `NEFFLD_ARCH` or `NEFFLD_INSTANCE`.
    Environment,
    /// Nothing named one: the NEFF's own target (trn2 when it names none).
    Neff,
}

/// A logical-core size asked for that the architecture's cores cannot take.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("{lnc} does not fit a {} core: {arch} takes logical-core size {}", arch.instance(), arch.lnc_sizes_text())]
pub struct LncUnfit {
    /// The size asked for.
    pub lnc: u32,
    /// The architecture the load runs on.
    pub arch: Arch,
}

/// Everything but the NEFF decided: the environment and the user's flags,
/// by the precedence of this module. [`Settings::for_neff`] adds what the
/// NEFF itself decides.
#[derive(Clone, Debug)]
pub struct Settings {
    config: RuntimeConfig,
    source: ArchSource,
    asked_lnc: Option<u32>,
    follow_neff_lnc: bool,
}

impl Settings {
    /// The settings of `asked` over the variables `env` knows.
    pub fn resolve(
        asked: &Asked,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Settings, ConfigError> {
        let named_by_env = env("NEFFLD_ARCH").is_some() || env("NEFFLD_INSTANCE").is_some();
        // The variables are read under the line asked for: a variable a
        // line does not have is ignored under it, whether the line came
        // from the environment or from `--runtime`.
        let runtime = asked.runtime.map(|l| l.to_string());
        let mut config = RuntimeConfig::default().with_env(|k| match (k, &runtime) {
            ("NEFFLD_RUNTIME", Some(line)) => Some(line.clone()),
            _ => env(k),
        })?;
        let mut source = if named_by_env {
            ArchSource::Environment
        } else {
            ArchSource::Neff
        };
        if let Some(i) = asked.instance {
            config = config.on_instance(i);
            source = ArchSource::Instance;
        }
        if let Some(a) = asked.arch {
            config.topology.arch = a;
            source = ArchSource::Flag;
        }
        config.topology.lnc = asked.lnc.or(config.topology.lnc);
        config.libnrt.line = asked.runtime.or(config.libnrt.line);
        config.loader.device = asked.device.unwrap_or(config.loader.device);
        config.libnrt.validate_hash = asked.validate_hash.unwrap_or(config.libnrt.validate_hash);
        config.loader.check = asked.check.unwrap_or(config.loader.check);
        config.libnrt.allow_legacy_neff = asked
            .allow_legacy_neff
            .unwrap_or(config.libnrt.allow_legacy_neff);
        config.loader.max_inflated = asked.max_inflated.or(config.loader.max_inflated);
        Ok(Settings {
            config,
            source,
            asked_lnc: asked.lnc,
            follow_neff_lnc: asked.follow_neff_lnc,
        })
    }

    /// [`Settings::resolve`] over the process environment.
    pub fn from_env(asked: &Asked) -> Result<Settings, ConfigError> {
        Settings::resolve(asked, |k| std::env::var(k).ok())
    }

    /// Settings that leave the architecture to the NEFF (`config.topology.arch` only
    /// when the NEFF names none) and take everything else from `config`.
    pub fn neff_own(config: RuntimeConfig) -> Settings {
        Settings {
            config,
            source: ArchSource::Neff,
            asked_lnc: None,
            follow_neff_lnc: false,
        }
    }

    /// What is settled before the NEFF is read; its `arch` is the one a
    /// flag or the environment named, else trn2.
    pub fn config(&self) -> &RuntimeConfig {
        &self.config
    }

    /// Where the architecture comes from.
    pub fn arch_source(&self) -> ArchSource {
        self.source
    }

    /// How the NEFF is opened (S1): the hash gate and the ceilings, which
    /// the NEFF cannot change.
    pub fn open_options(&self) -> OpenOptions {
        self.config.open_options()
    }

    /// The whole configuration of a load of `neff` (`None`: a NEFF that did
    /// not open, whose load will say why): its target chooses the
    /// architecture only when nothing named one, and its declared
    /// logical-core size applies only as [`Asked::follow_neff_lnc`] says
    /// and when the architecture takes it.
    pub fn for_neff(&self, neff: Option<&Neff>) -> RuntimeConfig {
        let mut config = self.config.clone();
        if self.source == ArchSource::Neff {
            if let Some(arch) = neff.and_then(crate::parse::declared_arch) {
                config.topology.arch = arch;
            }
        }
        if self.follow_neff_lnc && config.topology.lnc.is_none() {
            config.topology.lnc = neff
                .and_then(|n| n.header().declared_lnc())
                .filter(|l| config.topology.arch.lnc_sizes().contains(l));
        }
        config
    }

    /// The `--lnc` asked for, against the architecture the load runs on
    /// (a variable's size is the runtime's to refuse when it starts).
    pub fn check_lnc(&self, config: &RuntimeConfig) -> Result<(), LncUnfit> {
        match self.asked_lnc {
            Some(lnc) if !config.topology.arch.lnc_sizes().contains(&lnc) => Err(LncUnfit {
                lnc,
                arch: config.topology.arch,
            }),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::env;

    /// A variable the asked line does not have is ignored under it, the
    /// line asked by flag as by the environment (`--runtime 2.30` refused
    /// an OOM-log value 2.30 never reads).
    #[test]
    fn variables_are_read_under_the_line_the_flag_asks_for() {
        let off = env(&[("NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG", "off")]);
        let at = |line: &str| Asked {
            runtime: Some(line.parse().unwrap()),
            ..Asked::default()
        };
        assert!(Settings::resolve(&at("2.30"), &off).is_ok());
        let e = Settings::resolve(&at("2.33"), &off).unwrap_err();
        assert_eq!(e.var, "NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG");
        // The flag wins over the environment's line, a bad one included.
        let bad = env(&[("NEFFLD_RUNTIME", "1.0")]);
        let s = Settings::resolve(&at("2.30"), &bad).unwrap();
        assert_eq!(s.config().line().to_string(), "2.30");
    }

    #[test]
    fn a_flag_beats_the_environment_which_beats_the_neff() {
        let trn1 = env(&[("NEFFLD_ARCH", "trn1")]);
        let s = Settings::resolve(&Asked::default(), &trn1).unwrap();
        assert_eq!(
            (s.config().topology.arch, s.arch_source()),
            (Arch::Sunda, ArchSource::Environment)
        );
        let flag = Asked {
            arch: Some(Arch::Mariana),
            ..Asked::default()
        };
        let s = Settings::resolve(&flag, &trn1).unwrap();
        assert_eq!(
            (s.config().topology.arch, s.arch_source()),
            (Arch::Mariana, ArchSource::Flag)
        );
        let s = Settings::resolve(&Asked::default(), env(&[])).unwrap();
        assert_eq!(s.arch_source(), ArchSource::Neff);
        // Without a NEFF to name one, trn2.
        assert_eq!(s.for_neff(None).topology.arch, Arch::Cayman);
    }

    #[test]
    fn an_instance_flag_beats_the_environments_architecture() {
        let i = Instance::named("trn1.32xlarge").unwrap();
        let asked = Asked {
            instance: Some(i),
            ..Asked::default()
        };
        let s = Settings::resolve(&asked, env(&[("NEFFLD_ARCH", "trn2")])).unwrap();
        assert_eq!(
            (
                s.config().topology.arch,
                s.config().topology.chips,
                s.arch_source()
            ),
            (Arch::Sunda, 16, ArchSource::Instance)
        );
    }

    #[test]
    fn flags_beat_variables_and_variables_beat_defaults() {
        let e = env(&[
            ("NEFFLD_RUNTIME", "2.27"),
            ("NEURON_LOGICAL_NC_CONFIG", "1"),
            ("NEURON_RT_VALIDATE_HASH", "1"),
        ]);
        let s = Settings::resolve(&Asked::default(), &e).unwrap();
        assert_eq!(s.config().libnrt.line, Some(RuntimeLine::V2_27));
        assert_eq!(s.config().topology.lnc, Some(1));
        assert!(s.config().libnrt.validate_hash);
        let asked = Asked {
            runtime: Some(RuntimeLine::V2_30),
            lnc: Some(2),
            validate_hash: Some(false),
            ..Asked::default()
        };
        let s = Settings::resolve(&asked, &e).unwrap();
        assert_eq!(s.config().libnrt.line, Some(RuntimeLine::V2_30));
        assert_eq!(s.config().topology.lnc, Some(2));
        assert!(!s.config().libnrt.validate_hash);
    }

    #[test]
    fn an_lnc_the_architecture_cannot_take_is_refused_naming_both() {
        let asked = Asked {
            arch: Some(Arch::Sunda),
            lnc: Some(2),
            ..Asked::default()
        };
        let s = Settings::resolve(&asked, env(&[])).unwrap();
        let e = s.check_lnc(&s.for_neff(None)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "2 does not fit a trn1 core: trn1 (sunda, v2) takes logical-core size 1"
        );
    }
}
