//! The architecture a NEFF (or a tree of members) was compiled for, and the
//! logical-core sizes that architecture's cores can take.

use neffld::container::Neff;
use neffld::Arch;

/// The architecture the NEFF was compiled for (`neff.json` → kelf json
/// `target`); `None` if the chain is broken (a load or parse will then say
/// why). The library's reading, so that `verify` and `load` pick the same.
pub fn declared_arch(neff: &Neff) -> Option<Arch> {
    neffld::parse::declared_arch(neff)
}

/// Logical-core sizes the runtime accepts on this architecture: trn1 cores
/// are never fused (the runtime forces LNC 1), later ones pair up.
pub fn lnc_sizes(arch: Arch) -> &'static [u32] {
    match arch {
        Arch::Sunda => &[1],
        Arch::Cayman | Arch::Mariana => &[1, 2],
    }
}

/// `None` when `lnc` fits `arch`, else why not, naming both.
pub fn lnc_refusal(arch: Arch, lnc: u32, what: &str) -> Option<String> {
    let sizes = lnc_sizes(arch);
    (!sizes.contains(&lnc)).then(|| {
        let list: Vec<String> = sizes.iter().map(u32::to_string).collect();
        format!(
            "{what} {lnc} does not fit a {} core: {} takes logical-core size {}",
            arch.instance(),
            arch,
            list.join(" or ")
        )
    })
}
