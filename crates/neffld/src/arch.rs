//! Device architectures (`al_hal_tpb_arch_type`) and the NEFF `target` strings.
//!
//! Both the manifest (the kelf `target`) and the device (its geometry) speak
//! of architectures, so the type lives below both.

use std::fmt;
use std::str::FromStr;

/// The state-buffer window of one core, 32 MiB on every architecture
/// (docs/reference/stage.md §6.1): what a NEFF's `state-buffer` variable
/// spans (it has no `size` of its own) and what the device's geometry maps.
/// It lives here, below both, so the two cannot disagree.
pub(crate) const SB_WINDOW: u64 = 32 << 20;

/// A NeuronCore architecture. The discriminants are the runtime's enum values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Arch {
    /// v2: trn1 / inf2.
    Sunda = 2,
    /// v3: trn2.
    Cayman = 3,
    /// v4: trn3.
    Mariana = 4,
}

impl Arch {
    /// Every chip neffld models, oldest first.
    pub const ALL: [Arch; 3] = [Arch::Sunda, Arch::Cayman, Arch::Mariana];

    /// The runtime's numeric id (printed as `v%u` in the arch-gate message).
    pub fn id(self) -> u32 {
        self as u32
    }

    /// The instance family name users pass on the command line.
    pub fn instance(self) -> &'static str {
        match self {
            Arch::Sunda => "trn1",
            Arch::Cayman => "trn2",
            Arch::Mariana => "trn3",
        }
    }

    /// Logical-core sizes the runtime accepts on this architecture: trn1
    /// cores are never fused (the runtime forces LNC 1), later ones pair up.
    pub fn lnc_sizes(self) -> &'static [u32] {
        match self {
            Arch::Sunda => &[1],
            Arch::Cayman | Arch::Mariana => &[1, 2],
        }
    }

    /// [`Arch::lnc_sizes`] in words: `1`, `1 or 2`.
    pub fn lnc_sizes_text(self) -> String {
        let sizes: Vec<String> = self.lnc_sizes().iter().map(u32::to_string).collect();
        sizes.join(" or ")
    }

    /// The compiler's target name.
    pub fn target_name(self) -> &'static str {
        match self {
            Arch::Sunda => "sunda",
            Arch::Cayman => "cayman",
            Arch::Mariana => "mariana",
        }
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}, v{})",
            self.instance(),
            self.target_name(),
            self.id()
        )
    }
}

/// The chip a load runs on as a message names it: the instance's chip when
/// the runtime knows its instance (`the Inferentia2 of inf2.xlarge`), else
/// the architecture (`trn1`); and the compiler's `--target` that builds
/// for it. Every "recompile it" advice is [`Chip::recompile`], so a load,
/// `verify`, a plan and the C library say the same thing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chip {
    /// The architecture.
    pub arch: Arch,
    /// The instance's chip name, its EC2 name and its family's compiler
    /// target, when the instance is known.
    instance: Option<(&'static str, &'static str, &'static str)>,
}

impl Chip {
    /// The chip of `arch`, no instance named.
    pub const fn of(arch: Arch) -> Chip {
        Chip {
            arch,
            instance: None,
        }
    }

    /// The chip `chip` (`Inferentia2`) of instance `name`, whose family
    /// the compiler targets as `target` (`inf2`).
    pub(crate) const fn on_instance(
        arch: Arch,
        chip: &'static str,
        name: &'static str,
        target: &'static str,
    ) -> Chip {
        Chip {
            arch,
            instance: Some((chip, name, target)),
        }
    }

    /// The value of `neuronx-cc --target` that compiles for this chip.
    pub fn target(self) -> &'static str {
        self.instance.map_or(self.arch.instance(), |(_, _, t)| t)
    }

    /// What to do with a NEFF compiled for another chip.
    pub fn recompile(self) -> String {
        format!(
            "recompile it for {self} with `neuronx-cc --target={}`",
            self.target()
        )
    }
}

impl fmt::Display for Chip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.instance {
            Some((chip, name, _)) => write!(f, "the {chip} of {name}"),
            None => f.write_str(self.arch.instance()),
        }
    }
}

/// Parses an instance name (`trn1`, `inf2`, `trn2`, `trn3`) or a target name.
impl FromStr for Arch {
    type Err = String;
    fn from_str(s: &str) -> Result<Arch, String> {
        match s {
            "trn1" | "inf2" | "sunda" | "v2" => Ok(Arch::Sunda),
            "trn2" | "cayman" | "v3" => Ok(Arch::Cayman),
            "trn3" | "mariana" | "v4" => Ok(Arch::Mariana),
            _ => Err(format!(
                "unknown architecture '{s}' (expected trn1, trn2 or trn3)"
            )),
        }
    }
}
