//! S2+S3 over arbitrary manifest bytes: the input replaces one member of a
//! writer-built NEFF (chosen by the first byte) and the result goes through
//! `neffld::parse`. Skips gzip and staging, so it runs fast.
//!
//! The tar is the base's other members, written once per (base, member),
//! around the input's own entry: writing the whole tar on every execution
//! spent half the time in the writer rather than the parser.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use neffld::container::writer::{NeffWriter, Producer};
use neffld::container::{Archive, Neff};
use neffld::parse::{self, ParseOptions};
use neffld_testkit::{Synth, FUZZ_MANIFEST_MEMBERS as MEMBERS};
use neffld::Arch;

/// The zero blocks that end every tar the writer makes.
const TRAILER: usize = 1024;

/// The tar of `base` with `name` left out, split where `name`'s entry goes:
/// the entries before it (no trailer) and the entries after it (trailer).
struct Around {
    before: Vec<u8>,
    after: Vec<u8>,
}

struct Base {
    arch: Arch,
    lnc: u32,
    around: Vec<Around>,
}

fn writer() -> NeffWriter {
    NeffWriter::new(Producer::Pkg1)
}

fn around(w: &NeffWriter, base: &Synth, name: &str) -> Around {
    let list = base.member_list();
    let others: Vec<_> = list.iter().copied().filter(|(n, _)| *n != name).collect();
    // The writer orders members by name, so the entry goes between these.
    let (lo, hi): (Vec<_>, Vec<_>) = others
        .iter()
        .partition(|(n, _)| n.as_bytes() < name.as_bytes());
    let mut before = w.tar(&lo);
    before.truncate(before.len() - TRAILER);
    Around {
        before,
        after: w.tar(&hi),
    }
}

fn bases() -> &'static [Base; 2] {
    static B: OnceLock<[Base; 2]> = OnceLock::new();
    B.get_or_init(|| {
        let w = writer();
        let make = |s: Synth, arch, lnc| Base {
            arch,
            lnc,
            around: MEMBERS.iter().map(|n| around(&w, &s, n)).collect(),
        };
        [
            make(Synth::static_sunda(), Arch::Sunda, 1),
            make(Synth::dynamic_cayman(), Arch::Cayman, 2),
        ]
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&flag, body)) = data.split_first() else {
        return;
    };
    let base = &bases()[usize::from(flag & 1)];
    let which = usize::from(flag >> 1) % MEMBERS.len();
    let w = writer();
    let entry = w.tar(&[(MEMBERS[which], body)]);
    let Around { before, after } = &base.around[which];
    let mut tar = Vec::with_capacity(before.len() + entry.len() + after.len());
    tar.extend_from_slice(before);
    tar.extend_from_slice(&entry[..entry.len() - TRAILER]);
    tar.extend_from_slice(after);
    let Ok(archive) = Archive::from_tar(tar) else {
        return;
    };
    let neff = Neff::unchecked(w.header.clone(), archive);
    let opts = ParseOptions {
        instance_arch: base.arch,
        allow_legacy_neff: flag & 0x80 != 0,
        runtime_lnc: base.lnc,
    };
    if let Err(e) = parse::parse(&neff, &opts) {
        assert!(!e.to_string().is_empty());
        let _ = e.status();
    }
});
