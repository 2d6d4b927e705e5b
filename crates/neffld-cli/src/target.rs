//! The logical-core sizes an architecture's cores can take.

use neffld::Arch;

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
