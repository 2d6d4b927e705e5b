//! The logical-core sizes an architecture's cores can take.

use neffld::Arch;

/// `None` when `lnc` fits `arch`, else why not, naming both.
pub fn lnc_refusal(arch: Arch, lnc: u32, what: &str) -> Option<String> {
    let sizes = arch.lnc_sizes();
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
