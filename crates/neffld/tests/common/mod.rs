//! Helpers shared by the acceptance tests: fixtures, runtimes on simulated
//! devices, and writer-built NEFFs with many subgraphs.
#![allow(dead_code)]

use std::sync::Arc;

use serde_json::json;

use neffld::api::Runtime;
use neffld::config::RuntimeConfig;
use neffld::container::writer::{NeffWriter, Producer};
use neffld::container::{self, Neff, OpenOptions};
use neffld::device::{Geometry, SimDevice};
use neffld::parse::{self, ParseOptions, ParsedModel};
use neffld::testkit::{neff_json, Synth};
use neffld::Arch;

pub const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/fixtures");

pub fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("{FIXTURES}/{name}")).expect("fixture")
}

/// Every `.neff` in the shared fixtures, by name.
pub fn all_fixtures() -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(FIXTURES)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "neff"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    v.sort();
    assert!(v.len() >= 12, "the shared fixtures are missing: {}", v.len());
    v
}

/// A checked runtime on a fresh simulated device.
pub fn runtime_on(geometry: Geometry, lnc: Option<u32>) -> (Runtime, Arc<SimDevice>) {
    let arch = geometry.arch();
    let dev = Arc::new(SimDevice::new(geometry));
    let cfg = RuntimeConfig {
        arch,
        lnc,
        check: true,
        ..RuntimeConfig::default()
    };
    (Runtime::with_device(cfg, dev.clone()).unwrap(), dev)
}

pub fn runtime(arch: Arch) -> (Runtime, Arc<SimDevice>) {
    runtime_on(Geometry::for_arch(arch), None)
}

/// Opens and parses a NEFF the way the loader does (for expected values).
pub fn parse(bytes: &[u8], arch: Arch, lnc: u32) -> (Neff, ParsedModel) {
    let neff = container::open(bytes, &OpenOptions::default()).expect("opens");
    let model = parse::parse(&neff, &ParseOptions::new(arch, lnc)).expect("parses");
    (neff, model)
}

/// A trn2 NEFF with `n` subgraphs: `dynamic_cayman`'s active sg00 and
/// `n - 1` copies of its idle sg01, a kelf listing all of them, one output
/// head per graph. Write it with [`write_with_lnc`].
pub fn synth_n(n: usize) -> Synth {
    assert!(n >= 1);
    let mut s = Synth::dynamic_cayman();
    let idle: Vec<(String, Vec<u8>)> = s
        .members
        .iter()
        .filter(|(k, _)| k.starts_with("sg01/"))
        .map(|(k, v)| (k["sg01/".len()..].to_string(), v.clone()))
        .collect();
    s.members.retain(|k, _| !k.starts_with("sg01/"));
    let sg = |i: usize| format!("sg{i:02}");
    for i in 1..n {
        for (rest, v) in &idle {
            s.set(&format!("{}/{rest}", sg(i)), v.clone());
        }
    }
    let graphs: Vec<_> = (0..n)
        .map(|i| json!({"definition": format!("{}/def.json", sg(i)), "name": sg(i)}))
        .collect();
    s.edit("kelf-0.json", |v| v["graphs"] = json!(graphs));
    s.set_json(
        "neff.json",
        &neff_json(
            &[("q", "float32", &[4, 16]), ("k", "float32", &[4, 16])],
            &[("o", "float32", &[4, 16])],
            n,
            "kelf-0.json",
        ),
    );
    s
}

/// Writes a synthetic trn2 NEFF with a header declaring LNC `lnc` (feature
/// bit 0x400 set) or not declaring one.
pub fn write_with_lnc(s: &Synth, lnc: u32, declare_lnc: bool) -> Vec<u8> {
    let mut h = Producer::V2_21.default_header();
    h.vnc_size = lnc;
    if declare_lnc {
        h.feature_bits |= 0x400;
    } else {
        h.feature_bits &= !0x400;
    }
    NeffWriter::with_header(Producer::V2_21, h).write(&s.member_list())
}

/// `n` subgraphs, written with the header declaring (or not) LNC `n`.
pub fn synth_n_bytes(n: usize, declare_lnc: bool) -> Vec<u8> {
    write_with_lnc(&synth_n(n), n as u32, declare_lnc)
}

/// Host resident set size in bytes (`VmRSS` of /proc/self/status).
pub fn rss_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = s
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .expect("VmRSS line");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .expect("VmRSS value");
    kib * 1024
}
