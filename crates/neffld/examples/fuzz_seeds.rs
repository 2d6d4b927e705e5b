//! Writes seed corpora for the fuzz targets:
//!
//! ```text
//! cargo run -p neffld --example fuzz_seeds -- fuzz/corpus
//! ```
//!
//! `load` seeds are a flag byte (bit 0: trn1) followed by a whole NEFF: the
//! small real fixtures, and the synthetic NEFFs of every producer family
//! (raw-tar `Pkg1` forms too, whose manifests the fuzzer can edit in place),
//! and NEFFs with collectives — the runtime's own sample on both chips, a
//! rank of a world whose PE stream holds every kind of collectives record
//! (raw-tar too, so the fuzzer mutates the records in place).
//! `manifest` seeds are a flag byte (bit 0: cayman base; bits 1..: which
//! member) followed by that member's bytes. `capture` seeds are the real
//! NTFF captures, and each again as versions 4 and 5 (inline images, id-only
//! rows), with no flag byte; `compare` seeds are the same captures. `tree`
//! seeds describe a synthetic NEFF's members as a tree (a flag byte, then
//! for each entry a kind, a name and its bytes, see
//! `neffld_testkit::fuzz_tree`), with a link, a loop and a FIFO added.
//! `deployment` seeds are deployment files (the documented example, one
//! that expands past the step ceiling) and short forms; `dump_names` seeds
//! are graph names, plain and hostile (`../../x`, an absolute path, 300
//! bytes).

use std::path::{Path, PathBuf};

use neffld::capture;
use neffld::container::writer::Producer;
use neffld_testkit::collectives::{self as cc, World};
use neffld_testkit::{Synth, CAPTURES, FIXTURES, FUZZ_MANIFEST_MEMBERS as MEMBERS};

fn put(dir: &Path, name: &str, flag: u8, bytes: &[u8]) -> std::io::Result<()> {
    let mut out = Vec::with_capacity(bytes.len() + 1);
    out.push(flag);
    out.extend_from_slice(bytes);
    std::fs::write(dir.join(name), out)
}

fn main() -> std::io::Result<()> {
    let root = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "fuzz/corpus".into()),
    );
    let load = root.join("load");
    let manifest = root.join("manifest");
    std::fs::create_dir_all(&load)?;
    std::fs::create_dir_all(&manifest)?;

    let mut n = 0;
    for e in std::fs::read_dir(FIXTURES)? {
        let p = e?.path();
        let len = std::fs::metadata(&p)?.len();
        // The 1.5 MB fixture would make every execution slow; the others are < 64 KiB.
        if p.extension().is_some_and(|x| x == "neff") && len < 256 << 10 {
            let name = p
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            put(&load, &name, 0, &std::fs::read(&p)?)?;
            n += 1;
        }
    }
    let sunda = Synth::static_sunda();
    for (p, tag) in [
        (Producer::V2_0_99229, "v2_0_99229"),
        (Producer::V2_18, "v2_18"),
        (Producer::Pkg1, "pkg1"),
    ] {
        put(&load, &format!("sunda_{tag}.neff"), 1, &sunda.write(p))?;
        n += 1;
    }
    let cayman = Synth::dynamic_cayman();
    for (p, tag) in [(Producer::V2_21, "v2_21"), (Producer::Pkg1, "pkg1")] {
        put(&load, &format!("cayman_{tag}.neff"), 0, &cayman.write(p))?;
        n += 1;
    }
    let sample = cc::sample_neff();
    put(&load, "collectives_sample_trn2.neff", 0, &sample)?;
    put(&load, "collectives_sample_trn1.neff", 1, &sample)?;
    let rank = World::new(4).rank_synth(1);
    for (p, tag) in [(Producer::V2_21, "v2_21"), (Producer::Pkg1, "pkg1")] {
        put(
            &load,
            &format!("collectives_rank_{tag}.neff"),
            0,
            &rank.write(p),
        )?;
    }
    n += 4;
    println!("{n} load seeds in {}", load.display());

    let mut m = 0;
    for (base, s) in [(0u8, &sunda), (1u8, &cayman)] {
        for (i, name) in MEMBERS.iter().enumerate() {
            if let Some(bytes) = s.members.get(*name) {
                let flag = base | ((i as u8) << 1);
                put(
                    &manifest,
                    &format!("{base}_{}", name.replace('/', "_")),
                    flag,
                    bytes,
                )?;
                m += 1;
            }
        }
    }
    println!("{m} manifest seeds in {}", manifest.display());

    let captures = root.join("capture");
    std::fs::create_dir_all(&captures)?;
    let mut k = 0;
    for e in std::fs::read_dir(CAPTURES)? {
        let p = e?.path();
        if p.extension().is_none_or(|x| x != "ntff") {
            continue;
        }
        let stem = p
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let bytes = std::fs::read(&p)?;
        std::fs::write(captures.join(format!("{stem}.v6.ntff")), &bytes)?;
        k += 1;
        if let Ok(c) = capture::read(&bytes) {
            for version in [4, 5] {
                let mut old = c.clone();
                old.version = version;
                if let Ok(b) = capture::writer::write(&old) {
                    std::fs::write(captures.join(format!("{stem}.v{version}.ntff")), b)?;
                    k += 1;
                }
            }
        }
    }
    println!("{k} capture seeds in {}", captures.display());
    let compare = root.join("compare");
    std::fs::create_dir_all(&compare)?;
    for e in std::fs::read_dir(&captures)? {
        let p = e?.path();
        std::fs::copy(&p, compare.join(p.file_name().unwrap_or_default()))?;
    }

    let tree = root.join("tree");
    std::fs::create_dir_all(&tree)?;
    // Members short enough for one length byte each; a member's bytes cut
    // to 255.
    let entry = |kind: u8, name: &[u8], data: &[u8]| -> Vec<u8> {
        let data = &data[..data.len().min(255)];
        [
            &[kind, name.len() as u8][..],
            name,
            &[data.len() as u8],
            data,
        ]
        .concat()
    };
    let s = Synth::static_sunda();
    let files: Vec<u8> = s
        .member_list()
        .iter()
        .filter(|(n, _)| n.len() < 256)
        .flat_map(|(n, b)| entry(0, n.as_bytes(), b))
        .collect();
    let extras: [(&str, Vec<u8>); 4] = [
        ("plain", Vec::new()),
        ("link", entry(2, b"sg00/link.bin", b"def.json")),
        ("loop", entry(2, b"sg00/up", b".")),
        ("fifo", entry(3, b"sg00/pipe", b"")),
    ];
    for (name, extra) in &extras {
        for flag in [0u8, 1] {
            put(
                &tree,
                &format!("{name}.{flag}"),
                flag,
                &[&files[..], extra].concat(),
            )?;
        }
    }
    println!("{} tree seeds in {}", 2 * extras.len(), tree.display());

    let deployment = root.join("deployment");
    std::fs::create_dir_all(&deployment)?;
    let wide = "[[step]]\nload = \"a.neff\"\ncores = \"0-65535\"\nrepeat = 16\n".repeat(40);
    let deployments: [(&str, String); 4] = [
        (
            "example.toml",
            "instance = \"trn2.3xlarge\"\nlnc = 1\n[env]\nNEURON_SCRATCHPAD_PAGE_SIZE = 2048\n\
             [[step]]\nload = \"dense.neff\"\ncores = \"0-3\"\nrepeat = 2\n\
             [[step]]\ntensor = \"kv\"\nsize = \"2GiB\"\ncores = [0, 1]\n\
             [[step]]\nunload = \"dense.neff\"\ncores = 3\n[[step]]\nfree = \"kv\"\ncores = 1\n"
                .to_string(),
        ),
        ("wide.toml", wide),
        (
            "short_forms.txt",
            "a.neff@0-3,8\nkv=1.5GiB@0\nb.neff@4294967295\nNEURON_RT_PROFILE_BUF_EVENT_MB=17592186044416\n"
                .to_string(),
        ),
        (
            "size.toml",
            "[[step]]\ntensor = \"kv\"\nsize = \"15.99GiB\"\ncores = 0\n".to_string(),
        ),
    ];
    for (name, text) in &deployments {
        std::fs::write(deployment.join(name), text)?;
    }
    println!(
        "{} deployment seeds in {}",
        deployments.len(),
        deployment.display()
    );

    let dump = root.join("dump_names");
    std::fs::create_dir_all(&dump)?;
    let long = "g".repeat(300);
    let names: [(&str, &[u8]); 6] = [
        ("plain", b"sg00"),
        ("up", b"../../ESCAPED"),
        ("absolute", b"/tmp/victim"),
        ("inner", b"a/b"),
        ("long", long.as_bytes()),
        ("not_utf8", b"sg\xff\x00"),
    ];
    for (name, bytes) in &names {
        std::fs::write(dump.join(name), bytes)?;
    }
    println!("{} dump_names seeds in {}", names.len(), dump.display());
    Ok(())
}
