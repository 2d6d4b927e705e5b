//! S2+S3 over arbitrary manifest bytes: the input replaces one member of a
//! writer-built NEFF (chosen by the first byte) and the result goes through
//! `neffld::parse`. Skips gzip and staging, so it runs fast.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use neffld::container::writer::{NeffWriter, Producer};
use neffld::container::{Archive, Neff};
use neffld::parse::{self, ParseOptions};
use neffld::testkit::{Synth, FUZZ_MANIFEST_MEMBERS as MEMBERS};
use neffld::Arch;

fn bases() -> &'static [(Synth, Arch, u32); 2] {
    static B: OnceLock<[(Synth, Arch, u32); 2]> = OnceLock::new();
    B.get_or_init(|| {
        [
            (Synth::static_sunda(), Arch::Sunda, 1),
            (Synth::dynamic_cayman(), Arch::Cayman, 2),
        ]
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&flag, body)) = data.split_first() else {
        return;
    };
    let (base, arch, lnc) = &bases()[usize::from(flag & 1)];
    let name = MEMBERS[usize::from(flag >> 1) % MEMBERS.len()];
    let mut s = base.clone();
    s.set(name, body.to_vec());
    let w = NeffWriter::new(Producer::Pkg1);
    let Ok(archive) = Archive::from_tar(w.tar(&s.member_list())) else {
        return;
    };
    let neff = Neff {
        header: w.header.clone(),
        verified: None,
        archive,
    };
    let opts = ParseOptions {
        instance_arch: *arch,
        allow_legacy_neff: flag & 0x80 != 0,
        runtime_lnc: *lnc,
    };
    if let Err(e) = parse::parse(&neff, &opts) {
        assert!(!e.to_string().is_empty());
        let _ = e.status();
    }
});
