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
//! pairs from five 2^21-run blocks), and members at the JSON value ceiling
//! (`manifest::json::MAX_VALUES`) of what the parse keeps: `dma-blocks` (an
//! engine json of one-descriptor DMA blocks), `dma-descs` (one block of
//! that many descriptors), `def-dma` (def.json's top-level `dma`),
//! `carveouts` (`runtime_statebuffer_reservation` entries), `ucode-functions`
//! (one `ucode_lib` entry's functions), `var-list` (a `list` variable's ids).
//!
//! With `--write DIR`, each case's NEFF is written to `DIR/CASE.neff`
//! instead, for measuring a whole command on it (`/usr/bin/time -v neffld
//! verify DIR/dma-blocks.neff`).

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use flate2::write::GzEncoder;
use flate2::Compression;
use neffld::api::Runtime;
use neffld::config::{Loader, RuntimeConfig, Topology};
use neffld::container::writer::{tar_entry, NeffWriter, Producer, TarEntry, PAYLOAD_BLOCK};
use neffld::device::{Geometry, NullDevice};
use neffld::kbin::isa::encode;
use neffld::manifest::json::MAX_VALUES;
use neffld::Arch;
use neffld_testkit::{beyond_start, status_kib, Synth};
use serde_json::json;

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

/// How many JSON values `v` is, counting every scalar, array and object
/// (as `manifest::json::MAX_VALUES` counts them).
fn values(v: &serde_json::Value) -> u64 {
    1 + match v {
        serde_json::Value::Array(a) => a.iter().map(values).sum(),
        serde_json::Value::Object(o) => o.values().map(values).sum(),
        _ => 0,
    }
}

/// How many elements of `per` values each fit beside `used` values within
/// the value ceiling.
fn fit(used: u64, per: &str) -> usize {
    let per: serde_json::Value = serde_json::from_str(per).expect("JSON");
    ((MAX_VALUES - used) / values(&per)) as usize
}

/// A descriptor moving one byte from `spill_a` to the state buffer: 13
/// values, the fewest a valid descriptor has.
const SMALL_DESC: &str = r#"{"from":"spill_a","from_off":0,"from_sizes":[1],"from_steps":[1],"to":"SB","to_off":0,"to_sizes":[1],"to_steps":[1]}"#;

/// One-descriptor DMA blocks of `qSPSpillReload0` (whose blocks 0 and 1
/// exist already), 17 values each, filling `member`'s `dma` to the
/// ceiling, each triggered once by SP's stream.
fn small_blocks(s: &mut Synth, member: &str) {
    let block = |i: usize| {
        format!(
            r#"{{"queue":"qSPSpillReload0","id":{},"desc":[{SMALL_DESC}]}}"#,
            i + 2
        )
    };
    let n = fit(values(&s.json(member)) + 1, &block(0));
    s.extend_array(member, "dma", n, block);
    trigger(s, 2..n as u64 + 2);
}

/// Appends a trigger of each of `ids` of `qSPSpillReload0` to SP's stream.
fn trigger(s: &mut Synth, ids: std::ops::Range<u64>) {
    let mut sp = s.members["sg00/SP.bin"].clone();
    for id in ids {
        sp.extend_from_slice(&encode::trigger("qSPSpillReload0", id as u32));
    }
    s.set("sg00/SP.bin", sp);
}

fn dma_blocks() -> Vec<u8> {
    let mut s = Synth::static_sunda();
    small_blocks(&mut s, "sg00/SP.json");
    s.write(Producer::V2_18)
}

/// def.json's own `dma` (no real sample has one).
fn def_dma() -> Vec<u8> {
    let mut s = Synth::static_sunda();
    small_blocks(&mut s, "sg00/def.json");
    s.write(Producer::V2_18)
}

/// One block of `qSPSpillReload0` with as many descriptors as fit.
fn dma_descs() -> Vec<u8> {
    let mut s = Synth::static_sunda();
    let n = fit(values(&s.json("sg00/SP.json")) + 4, SMALL_DESC);
    let descs = vec![SMALL_DESC; n].join(",");
    let block = format!(r#"{{"queue":"qSPSpillReload0","id":2,"desc":[{descs}]}}"#);
    s.extend_array("sg00/SP.json", "dma", 1, |_| block.clone());
    trigger(&mut s, 2..3);
    s.write(Producer::V2_18)
}

/// `runtime_statebuffer_reservation` entries (read on every chip, required
/// on trn2).
fn carveouts() -> Vec<u8> {
    let mut s = Synth::static_sunda();
    let entry = r#"{"type":"evtaccel","offset":0,"size":64,"base_partition":0,"partitions":1}"#;
    let n = fit(values(&s.json("sg00/def.json")) + 1, entry);
    s.extend_array(
        "sg00/def.json",
        "runtime_statebuffer_reservation",
        n,
        |_| entry.to_string(),
    );
    s.write(Producer::V2_18)
}

/// One GPSIMD library whose `functions` fill def.json.
fn ucode_functions() -> Vec<u8> {
    let mut s = Synth::static_sunda();
    s.set("sg00/gpsimd.elf", vec![0x7F, b'E', b'L', b'F']);
    let f = |i: usize| format!(r#"{{"name":"f{i}","opcode":1}}"#);
    let n = fit(values(&s.json("sg00/def.json")) + 8, &f(0));
    let functions = (0..n).map(f).collect::<Vec<_>>().join(",");
    let lib = format!(
        r#"{{"library":"gpsimd.elf","ulib_to_ucode_version":"1.21.1.0","cpu_id":0,"total_cpus":8,"functions":[{functions}]}}"#
    );
    s.extend_array("sg00/def.json", "ucode_lib", 1, |_| lib.clone());
    s.write(Producer::V2_18)
}

/// A `list` variable naming variable 0 as often as fits.
fn var_list() -> Vec<u8> {
    let mut s = Synth::static_sunda();
    let n = fit(values(&s.json("sg00/def.json")) + 4, "0");
    let def = String::from_utf8(s.members["sg00/def.json"].clone()).expect("UTF-8");
    let ids = vec!["0"; n].join(",");
    let list = format!(r#""var":{{"l":{{"type":"list","var_id":6,"list":[{ids}]}},"#);
    s.set(
        "sg00/def.json",
        def.replacen("\"var\": {", &list, 1).into_bytes(),
    );
    s.write(Producer::V2_18)
}

const CASES: [Case; 17] = [
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
    Case {
        name: "dma-blocks",
        arch: Arch::Sunda,
        max_inflated: None,
        build: dma_blocks,
    },
    Case {
        name: "dma-descs",
        arch: Arch::Sunda,
        max_inflated: None,
        build: dma_descs,
    },
    Case {
        name: "def-dma",
        arch: Arch::Sunda,
        max_inflated: None,
        build: def_dma,
    },
    Case {
        name: "carveouts",
        arch: Arch::Sunda,
        max_inflated: None,
        build: carveouts,
    },
    Case {
        name: "ucode-functions",
        arch: Arch::Sunda,
        max_inflated: None,
        build: ucode_functions,
    },
    Case {
        name: "var-list",
        arch: Arch::Sunda,
        max_inflated: None,
        build: var_list,
    },
];

fn main() {
    let mut wanted: Vec<String> = std::env::args().skip(1).collect();
    let write = match wanted.iter().position(|a| a == "--write") {
        Some(i) if i + 1 < wanted.len() => {
            let dir = std::path::PathBuf::from(wanted.remove(i + 1));
            wanted.remove(i);
            Some(dir)
        }
        _ => None,
    };
    for case in CASES
        .iter()
        .filter(|c| wanted.is_empty() || wanted.iter().any(|w| w == c.name))
    {
        let t = Instant::now();
        let bytes = (case.build)();
        let build_time = t.elapsed();
        if let Some(dir) = &write {
            let path = dir.join(format!("{}.neff", case.name));
            std::fs::write(&path, &bytes).expect("the NEFF is written");
            println!(
                "{:<14} {} bytes: {}",
                case.name,
                bytes.len(),
                path.display()
            );
            continue;
        }
        let dev = Arc::new(NullDevice::new(Geometry::for_arch(case.arch)));
        let cfg = RuntimeConfig {
            topology: Topology {
                arch: case.arch,
                ..Default::default()
            },
            loader: Loader {
                check: true,
                max_inflated: case.max_inflated,
                ..Default::default()
            },
            ..Default::default()
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
