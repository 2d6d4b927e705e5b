//! Logical-core sizes given on the command line, against what an
//! architecture's cores can take ([`Arch::lnc_sizes`]).

use neffld::Arch;

/// `None` when `lnc` fits `arch`, else why not, naming both.
pub fn lnc_refusal(arch: Arch, lnc: u32, what: &str) -> Option<String> {
    (!arch.lnc_sizes().contains(&lnc)).then(|| {
        format!(
            "{what} {lnc} does not fit a {} core: {} takes logical-core size {}",
            arch.instance(),
            arch,
            arch.lnc_sizes_text()
        )
    })
}
