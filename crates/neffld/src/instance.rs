//! The instance types a runtime can run on: how many chips (devices, `ND
//! n`) each has and what chip. A chip's shape — physical cores, HBMs and
//! their sizes — is its architecture's [`Geometry`]; every chip of one
//! instance is the same. Sources and the judgement calls: docs/decisions.md,
//! "Instances".

use std::fmt;

use crate::arch::Chip;
pub use crate::device::Geometry;
use crate::Arch;

/// One instance type of the catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Instance {
    /// The EC2 name (`trn2.48xlarge`).
    pub name: &'static str,
    /// The family the runtime reports (`trn1n`, `inf2`, `trn2u`, ...).
    pub family: &'static str,
    /// The size part of the name (`48xlarge`).
    pub size: &'static str,
    /// The chip's name in the SDK's pages (`Trainium2`).
    pub chip: &'static str,
    /// The chip, as neffld models it.
    pub arch: Arch,
    /// Chips (devices) of the instance.
    pub chips: u32,
}

/// Every instance type the SDK's architecture pages document, in the
/// order they list them.
pub const INSTANCES: [Instance; 10] = [
    instance("trn1.2xlarge", "trn1", "Trainium", Arch::Sunda, 1),
    instance("trn1.32xlarge", "trn1", "Trainium", Arch::Sunda, 16),
    instance("trn1n.32xlarge", "trn1n", "Trainium", Arch::Sunda, 16),
    instance("inf2.xlarge", "inf2", "Inferentia2", Arch::Sunda, 1),
    instance("inf2.8xlarge", "inf2", "Inferentia2", Arch::Sunda, 1),
    instance("inf2.24xlarge", "inf2", "Inferentia2", Arch::Sunda, 6),
    instance("inf2.48xlarge", "inf2", "Inferentia2", Arch::Sunda, 12),
    instance("trn2.3xlarge", "trn2", "Trainium2", Arch::Cayman, 1),
    instance("trn2.48xlarge", "trn2", "Trainium2", Arch::Cayman, 16),
    instance("trn2u.48xlarge", "trn2u", "Trainium2", Arch::Cayman, 16),
];

const fn instance(
    name: &'static str,
    family: &'static str,
    chip: &'static str,
    arch: Arch,
    chips: u32,
) -> Instance {
    // The size is what follows the family and its dot.
    let (_, size) = name.as_bytes().split_at(family.len() + 1);
    let size = match std::str::from_utf8(size) {
        Ok(s) => s,
        Err(_) => panic!("instance names are ASCII"),
    };
    Instance {
        name,
        family,
        size,
        chip,
        arch,
        chips,
    }
}

impl Instance {
    /// The instance called `name` (case-insensitive), or why there is none,
    /// listing the names known.
    pub fn named(name: &str) -> Result<&'static Instance, String> {
        let wanted = name.trim().to_ascii_lowercase();
        INSTANCES.iter().find(|i| i.name == wanted).ok_or_else(|| {
            let known: Vec<&str> = INSTANCES.iter().map(|i| i.name).collect();
            format!(
                "unknown instance type '{name}' (known: {})",
                known.join(", ")
            )
        })
    }

    /// The geometry of each of its chips.
    pub fn geometry(&self) -> Geometry {
        Geometry::for_arch(self.arch)
    }

    /// Device memory of the whole instance (every HBM of every chip).
    pub fn device_memory(&self) -> u64 {
        let g = self.geometry();
        u64::from(self.chips) * u64::from(g.hbm_channels()) * g.hbm_bytes_per_channel()
    }

    /// Its chip as messages name it, with the compiler's `--target` for
    /// its family (`trn1n` compiles as `trn1`).
    pub fn chip(&self) -> Chip {
        let target = ["inf2", "trn1", "trn2", "trn3"]
            .into_iter()
            .find(|t| self.family.starts_with(t))
            .unwrap_or(self.family);
        Chip::on_instance(self.arch, self.chip, self.name, target)
    }

    /// Physical cores of the whole instance.
    pub fn physical_cores(&self) -> u32 {
        self.chips * self.geometry().cores()
    }
}

impl fmt::Display for Instance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    /// The figures the SDK's instance pages give for each size (chips,
    /// device memory in GiB, and NeuronCores per chip from its chip page),
    /// typed in here from those pages: the catalog's chips times the
    /// architecture's geometry must give them.
    #[test]
    fn the_catalog_gives_the_documented_device_memory_and_cores() {
        let documented: [(&str, u32, u64, u32); 10] = [
            ("trn1.2xlarge", 1, 32, 2),
            ("trn1.32xlarge", 16, 512, 2),
            ("trn1n.32xlarge", 16, 512, 2),
            ("inf2.xlarge", 1, 32, 2),
            ("inf2.8xlarge", 1, 32, 2),
            ("inf2.24xlarge", 6, 192, 2),
            ("inf2.48xlarge", 12, 384, 2),
            ("trn2.3xlarge", 1, 96, 8),
            ("trn2.48xlarge", 16, 1536, 8),
            ("trn2u.48xlarge", 16, 1536, 8),
        ];
        for (name, chips, gib, cores) in documented {
            let i = Instance::named(name).unwrap();
            assert_eq!(i.chips, chips, "{name}");
            assert_eq!(i.device_memory(), gib * GIB, "{name}");
            assert_eq!(i.physical_cores(), chips * cores, "{name}");
            assert_eq!(format!("{}.{}", i.family, i.size), name);
        }
        assert_eq!(INSTANCES.len(), documented.len());
    }

    #[test]
    fn names_are_looked_up_without_case_and_unknown_ones_are_listed() {
        assert_eq!(Instance::named("TRN2.3xlarge").unwrap().chips, 1);
        let e = Instance::named("trn9.large").unwrap_err();
        assert!(
            e.contains("trn9.large") && e.contains("trn2u.48xlarge"),
            "{e}"
        );
    }
}
