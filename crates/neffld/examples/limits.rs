//! Resource limits: loads NEFFs built to stress one limit each and prints,
//! per case, the outcome, the wall time of the load and the peak resident
//! set size during it (VmHWM, reset through `/proc/self/clear_refs` after the
//! input is built, so the figure covers the load alone plus whatever was
//! already resident, shown as `rss before`).
//!
//! ```text
//! cargo run --release -p neffld --example limits [CASE...]
//! ```
//!
//! Cases: `bomb` (a payload inflating to 4 GiB against the default ceiling
//! of its window), `bomb-ceiling` (the same against a 64 MiB ceiling),
//! `var-2^63` (a spill variable declaring 2^63 bytes), `io-2^63` (an
//! input of 2^63 bytes), `members-1e6` (10^6 empty
//! members next to a loadable model), `duplicates-1e6` (10^6 members of one
//! name), `json-100mb` (a def.json of 100 MB),
//! `pairs-115m` (a def.json whose `src_target_pairs` holds 115 million
//! elements, 230 MB inflated),
//! `subgraphs-256` (256 subgraphs naming the same def.json and blobs),
//! `subgraphs-1e5` (10^5 of them), `dma-rings` (10.5 million DMA descriptor
//! pairs from five 2^21-run blocks).

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use flate2::write::GzEncoder;
use flate2::Compression;
use neffld::api::Runtime;
use neffld::config::RuntimeConfig;
use neffld::container::writer::{tar_entry, NeffWriter, Producer, TarEntry, PAYLOAD_BLOCK};
use neffld::device::{Geometry, NullDevice};
use neffld::Arch;
use neffld_testkit::beyond_start;
use neffld_testkit::Synth;
use serde_json::json;

/// A field of `/proc/self/status`, in KiB.
fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            let rest = l.strip_prefix(field)?.strip_prefix(':')?;
            rest.trim().trim_end_matches(" kB").trim().parse().ok()
        })
        .unwrap_or(0)
}

/// Resets VmHWM to the current RSS (Linux ≥ 4.0).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

struct Case {
    name: &'static str,
    arch: Arch,
    max_inflated: Option<u64>,
    build: fn() -> Vec<u8>,
}

/// A gzip member streaming `len` zero bytes as one tar member, without
/// holding them.
fn zero_bomb(len: u64) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::new(9));
    let mut head = TarEntry::file("weights.bin", &[]);
    head.header_size = Some(len);
    let header = tar_entry(&head);
    e.write_all(&header[..512]).expect("vec");
    let chunk = vec![0u8; 1 << 20];
    let mut left = len + 1024;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        e.write_all(&chunk[..n]).expect("vec");
        left -= n as u64;
    }
    let mut payload = e.finish().expect("vec");
    payload.resize(payload.len().div_ceil(PAYLOAD_BLOCK) * PAYLOAD_BLOCK, 0);
    NeffWriter::new(Producer::V2_21).finish(payload)
}

fn bomb() -> Vec<u8> {
    zero_bomb(4 << 30)
}

/// A spill (virtual) variable of 2^63 bytes: the scratchpad it asks for.
fn var_2_63() -> Vec<u8> {
    let mut s = Synth::static_sunda();
    s.edit("sg00/def.json", |d| {
        d["var"]["spill_b"]["size"] = json!(1u64 << 63)
    });
    s.write(Producer::V2_18)
}

/// An input of 2^63 bytes, declared consistently in neff.json and def.json
/// (shape [2^30, 2^30, 4] of float16).
fn io_2_63() -> Vec<u8> {
    let mut s = Synth::static_sunda();
    s.edit("neff.json", |n| {
        n["attrs"]["shape"][1][0] = json!([1u64 << 30, 1u64 << 30, 4]);
    });
    s.edit("sg00/def.json", |d| {
        d["var"]["a"]["size"] = json!(1u64 << 63)
    });
    s.write(Producer::V2_18)
}

fn members_1e6() -> Vec<u8> {
    let s = Synth::static_sunda();
    let names: Vec<String> = (0..1_000_000).map(|i| format!("pad/{i:07}")).collect();
    let mut list: Vec<(&str, &[u8])> = s.member_list();
    list.extend(names.iter().map(|n| (n.as_str(), &[][..])));
    NeffWriter::new(Producer::V2_18).write(&list)
}

/// Every static DMA block of the sunda NEFF expanded into 2^21 descriptor
/// pairs (64-byte runs over one SB row): five blocks on four queues, about
/// 10.5 million descriptor pairs, all within the per-ring limit.
fn dma_rings() -> Vec<u8> {
    let mut s = Synth::static_sunda();
    for engine in ["sg00/SP.json", "sg00/Pool.json"] {
        s.edit(engine, |e| {
            if let Some(blocks) = e["dma"].as_array_mut() {
                for b in blocks {
                    let d = &mut b["desc"][0];
                    for side in ["from", "to"] {
                        d[format!("{side}_sizes")] = json!([64, 1u64 << 21]);
                        d[format!("{side}_steps")] = json!([1, 0]);
                    }
                }
            }
        });
    }
    s.write(Producer::V2_18)
}

/// 10^6 members all named `pad` (each replaces the one before, with a warning).
fn duplicates_1e6() -> Vec<u8> {
    let s = Synth::static_sunda();
    let mut list: Vec<(&str, &[u8])> = s.member_list();
    list.extend(std::iter::repeat_n(("pad", &[][..]), 1_000_000));
    NeffWriter::new(Producer::V2_18).write(&list)
}

fn json_100mb() -> Vec<u8> {
    let mut s = Synth::static_sunda();
    s.edit("sg00/def.json", |d| {
        d["padding"] = json!("x".repeat(100 << 20))
    });
    s.write(Producer::V2_18)
}

fn pairs_115m() -> Vec<u8> {
    let mut s = Synth::static_sunda();
    s.set_long_array("sg00/def.json", "src_target_pairs", "0", 115_000_000);
    s.write(Producer::V2_18)
}

fn subgraphs_256() -> Vec<u8> {
    subgraphs(256)
}

fn subgraphs_100k() -> Vec<u8> {
    subgraphs(100_000)
}

/// `n` subgraphs, all naming `sg00/def.json` (so the same blobs).
fn subgraphs(n: usize) -> Vec<u8> {
    let mut s = Synth::dynamic_cayman();
    let graphs: Vec<_> = (0..n)
        .map(|i| json!({"name": format!("sg{i:03}"), "definition": "sg00/def.json"}))
        .collect();
    s.edit("kelf-0.json", |k| k["graphs"] = json!(graphs));
    s.write(Producer::V2_21)
}

const CASES: [Case; 11] = [
    Case {
        name: "bomb",
        arch: Arch::Cayman,
        max_inflated: None,
        build: bomb,
    },
    Case {
        name: "bomb-ceiling",
        arch: Arch::Cayman,
        max_inflated: Some(64 << 20),
        build: bomb,
    },
    Case {
        name: "var-2^63",
        arch: Arch::Sunda,
        max_inflated: None,
        build: var_2_63,
    },
    Case {
        name: "io-2^63",
        arch: Arch::Sunda,
        max_inflated: None,
        build: io_2_63,
    },
    Case {
        name: "members-1e6",
        arch: Arch::Sunda,
        max_inflated: Some(1 << 30),
        build: members_1e6,
    },
    Case {
        name: "duplicates-1e6",
        arch: Arch::Sunda,
        max_inflated: Some(1 << 30),
        build: duplicates_1e6,
    },
    Case {
        name: "json-100mb",
        arch: Arch::Sunda,
        max_inflated: None,
        build: json_100mb,
    },
    Case {
        name: "pairs-115m",
        arch: Arch::Sunda,
        max_inflated: None,
        build: pairs_115m,
    },
    Case {
        name: "subgraphs-256",
        arch: Arch::Cayman,
        max_inflated: None,
        build: subgraphs_256,
    },
    Case {
        name: "subgraphs-1e5",
        arch: Arch::Cayman,
        max_inflated: None,
        build: subgraphs_100k,
    },
    Case {
        name: "dma-rings",
        arch: Arch::Sunda,
        max_inflated: None,
        build: dma_rings,
    },
];

fn main() {
    let wanted: Vec<String> = std::env::args().skip(1).collect();
    for case in CASES
        .iter()
        .filter(|c| wanted.is_empty() || wanted.iter().any(|w| w == c.name))
    {
        let t = Instant::now();
        let bytes = (case.build)();
        let build_time = t.elapsed();
        let dev = Arc::new(NullDevice::new(Geometry::for_arch(case.arch)));
        let cfg = RuntimeConfig {
            arch: case.arch,
            check: true,
            max_inflated: case.max_inflated,
            ..RuntimeConfig::default()
        };
        let rt = Runtime::with_device(cfg, dev.clone()).expect("runtime");
        let before = status_kib("VmRSS");
        reset_peak();
        let t = Instant::now();
        let outcome = match rt.load(&bytes, None) {
            Ok(m) => {
                let r = rt.unload(&m).map(|()| "loaded and unloaded".to_string());
                r.unwrap_or_else(|e| format!("unload failed: {e}"))
            }
            Err(e) => {
                let mut msg = e.to_string();
                if msg.len() > 140 {
                    msg.truncate(140);
                    msg.push('…');
                }
                format!("rejected, status {}: {msg}", e.status().code())
            }
        };
        let load_time: Duration = t.elapsed();
        let peak = status_kib("VmHWM");
        assert_eq!(
            beyond_start(&*dev).len(),
            0,
            "{}: allocations left",
            case.name
        );
        assert_eq!(rt.loaded_models(), 0);
        println!(
            "{:<14} input {:>10} B  load {:>9.1?}  peak RSS {:>10}  (rss before {}, built in {:.1?})  {outcome}",
            case.name,
            bytes.len(),
            load_time,
            mib(peak),
            mib(before),
            build_time,
        );
    }
}
