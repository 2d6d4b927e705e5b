//! A seeded mutation sweep over the whole load (S0–S5).
//!
//! Bases: every real fixture (trn2), and writer-built NEFFs of each producer
//! family — `Synth::static_sunda` as 2.0.99229, 2.18 and pkg 1 on trn1,
//! `Synth::dynamic_cayman` as 2.21 on trn2, and a rank of a four-rank world
//! whose PE stream carries every kind of collectives record. Mutations: flipped header bytes;
//! flipped payload bytes (re-hashed with `NeffWriter::finish` and loaded with
//! verification on, or left stale and loaded with it off); the inflated tar
//! re-packed with truncated, resized, duplicated, dropped and swapped members
//! or cut short; binary members damaged (instruction opcodes, ADDR8
//! operands, DMA triggers, `.npy` headers, lengths); and JSON members edited (wrong types, huge and negative
//! numbers, dropped keys, names of missing members, manifests naming
//! themselves).
//!
//! Every mutant either loads (with the staged-model validator on) and
//! unloads, or fails with an expected status and a non-empty message; never
//! panics, never hangs (a mutant running past a minute is named on
//! stderr); afterwards the device holds no allocation and the
//! runtime no model. `cargo test --test mutation_sweep -- --nocapture` prints
//! the outcome counts; `NEFFLD_SWEEP=long` runs about twenty times as many
//! mutants (and `NEFFLD_SWEEP_SEED=<n>` picks another seed;
//! `NEFFLD_SWEEP_LOG=<file>` appends every mutant's outcome to a file).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use neffld::api::{Cause, LoadError, Runtime};
use neffld::config::{Libnrt, Loader, RuntimeConfig, Topology};
use neffld::container::writer::{gzip, tar_entry, NeffWriter, Producer, TarEntry, PAYLOAD_BLOCK};
use neffld::container::{self, OpenOptions, HEADER_LEN};
use neffld::device::{Geometry, NullDevice};
use neffld::parse::ParseError;
use neffld::settings::Settings;
use neffld::{Arch, NrtStatus};
use neffld_testkit::beyond_start;
use neffld_testkit::collectives::World;
use neffld_testkit::Synth;
use serde_json::{json, Value};

/// Statuses a rejected mutant may carry (parse.md §9; stage.md §12, §17).
const EXPECTED: [NrtStatus; 4] = [
    NrtStatus::Invalid,
    NrtStatus::Resource,
    NrtStatus::UnsupportedNeffVersion,
    NrtStatus::QueueFull,
];

/// A mutant still running after this is named on stderr, once: a hang
/// then shows which mutant it is when the harness's own timeout stops the
/// run. Nothing is failed or aborted on the clock (a slow shared machine is
/// not a hang, and an abort would take the harness's other tests with it).
const HANG: Duration = Duration::from_secs(60);

/// xorshift64*: small, deterministic, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn nonzero_byte(&mut self) -> u8 {
        (self.next() >> 32) as u8 | 1
    }
}

fn long_mode() -> bool {
    std::env::var("NEFFLD_SWEEP").is_ok_and(|v| v == "long")
}

fn seed() -> u64 {
    std::env::var("NEFFLD_SWEEP_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5EED_2026)
}

/// One NEFF to mutate, with what it is made of.
struct Base {
    name: String,
    bytes: Vec<u8>,
    arch: Arch,
    /// Re-packs edited members in the base's own format and header.
    writer: NeffWriter,
    /// Members in archive order.
    members: Vec<(String, Vec<u8>)>,
}

impl Base {
    fn synth(name: &str, s: &Synth, producer: Producer, arch: Arch) -> Base {
        let members = s
            .members
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Base {
            name: name.to_string(),
            bytes: s.write(producer),
            arch,
            writer: NeffWriter::new(producer),
            members,
        }
    }

    fn fixture(name: &str, bytes: Vec<u8>) -> Base {
        let neff = container::open(&bytes, &OpenOptions::default()).expect("fixture opens");
        let members = neff
            .archive()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_vec()))
            .collect();
        Base {
            name: name.to_string(),
            writer: NeffWriter::with_header(Producer::V2_21, neff.header().clone()),
            bytes,
            arch: Arch::Cayman,
            members,
        }
    }

    fn gzipped(&self) -> bool {
        self.writer.producer != Producer::Pkg1
    }

    /// Members with the writer's dialect and a consistent header.
    fn write(&self, members: &[(String, Vec<u8>)]) -> Vec<u8> {
        let list: Vec<(&str, &[u8])> = members
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_slice()))
            .collect();
        self.writer.write(&list)
    }

    /// A hand-built tar (which may lie) compressed as the base's family does,
    /// padded, and behind a header with a matching digest.
    fn finish_tar(&self, tar: &[u8]) -> Vec<u8> {
        let mut payload = if self.gzipped() {
            gzip(tar, 1)
        } else {
            tar.to_vec()
        };
        payload.resize(payload.len().div_ceil(PAYLOAD_BLOCK) * PAYLOAD_BLOCK, 0);
        self.writer.finish(payload)
    }
}

/// One damaged NEFF and how to load it.
struct Mutant {
    label: String,
    bytes: Vec<u8>,
    /// Load with payload verification on (the digest was recomputed).
    verify: bool,
}

/// How many mutants of each kind per base.
#[derive(Clone, Copy)]
struct Budget {
    header: usize,
    payload_rehashed: usize,
    payload_stale: usize,
    tar: usize,
    json: usize,
    blob: usize,
    /// Every numeric JSON leaf set to each extreme value.
    extremes: bool,
}

impl Budget {
    fn scaled(self, k: usize) -> Budget {
        Budget {
            header: self.header * k,
            payload_rehashed: self.payload_rehashed * k,
            payload_stale: self.payload_stale * k,
            tar: self.tar * k,
            json: self.json * k,
            blob: self.blob * k,
            extremes: self.extremes,
        }
    }
}

fn header_mutant(b: &Base, rng: &mut Rng, i: usize) -> Mutant {
    let mut bytes = b.bytes.clone();
    let flips = 1 + rng.below(3);
    let mut at = Vec::new();
    for _ in 0..flips {
        // Half the flips land in the fixed fields (0x00..0x80: versions,
        // sizes, feature bits, vnc_size), the rest anywhere in the header.
        let pos = if rng.chance(50) {
            rng.below(0x80)
        } else {
            rng.below(HEADER_LEN)
        };
        bytes[pos] ^= rng.nonzero_byte();
        at.push(format!("{pos:#x}"));
    }
    Mutant {
        label: format!("header#{i} flips at {}", at.join(",")),
        bytes,
        verify: rng.chance(50),
    }
}

fn payload_mutant(b: &Base, rng: &mut Rng, i: usize, rehash: bool) -> Mutant {
    let mut window = b.bytes[HEADER_LEN..].to_vec();
    // The part before the zero padding is where the structure lives.
    let used = window.iter().rposition(|&x| x != 0).map_or(0, |p| p + 1);
    let flips = 1 + rng.below(4);
    let mut at = Vec::new();
    for _ in 0..flips {
        let pos = if rng.chance(90) && used > 0 {
            if rng.chance(30) {
                rng.below(used.min(64))
            } else {
                rng.below(used)
            }
        } else {
            rng.below(window.len())
        };
        window[pos] ^= rng.nonzero_byte();
        at.push(format!("{pos:#x}"));
    }
    let bytes = if rehash {
        b.writer.finish(window)
    } else {
        let mut out = b.bytes[..HEADER_LEN].to_vec();
        out.extend_from_slice(&window);
        out
    };
    Mutant {
        label: format!(
            "payload#{i} ({}) flips at {}",
            if rehash { "re-hashed" } else { "stale digest" },
            at.join(",")
        ),
        bytes,
        verify: rehash,
    }
}

/// A tar entry for a member, splitting long names over the ustar prefix.
fn entry(name: &str, data: &[u8]) -> TarEntry {
    if name.len() <= 100 {
        return TarEntry::file(name, data);
    }
    let split = name
        .char_indices()
        .filter(|&(i, c)| c == '/' && i <= 155 && name.len() - i - 1 <= 100)
        .map(|(i, _)| i)
        .next();
    match split {
        Some(i) => {
            let mut e = TarEntry::file(&name[i + 1..], data);
            e.prefix = name[..i].into();
            e
        }
        None => TarEntry::file(&name[..100], data),
    }
}

fn tar_mutant(b: &Base, rng: &mut Rng, i: usize) -> Mutant {
    let mut entries: Vec<TarEntry> = b.members.iter().map(|(n, d)| entry(n, d)).collect();
    let n = entries.len();
    let k = rng.below(n);
    let name = b.members.get(k).map_or("", |m| m.0.as_str()).to_string();
    let mut cut_archive = None;
    let what = match rng.below(8) {
        0 if n > 0 => {
            let len = entries[k].data.len();
            let keep = rng.below(len.max(1));
            entries[k].data.truncate(keep);
            format!("truncated {name} to {keep} of {len} bytes")
        }
        1 if n > 0 => {
            let len = entries[k].data.len() as u64;
            let lie = match rng.below(5) {
                0 => len + 1 + rng.below(4096) as u64,
                1 => len.saturating_sub(1 + rng.below(600) as u64),
                2 => len + 512,
                3 => 0o777_7777_7777,
                _ => u64::MAX >> rng.below(8),
            };
            entries[k].header_size = Some(lie);
            format!("size field of {name} says {lie}, body has {len}")
        }
        2 if n > 0 => {
            let mut dup = entries[k].clone();
            if rng.chance(50) {
                dup.data.truncate(rng.below(dup.data.len().max(1)));
            }
            let at = rng.below(n + 1);
            let len = dup.data.len();
            entries.insert(at, dup);
            format!("duplicated {name} ({len} bytes) at {at}")
        }
        3 if n > 0 => {
            entries.remove(k);
            format!("dropped {name}")
        }
        4 if n > 1 => {
            let j = rng.below(n);
            let (a, c) = (entries[k].data.clone(), entries[j].data.clone());
            entries[k].data = c;
            entries[j].data = a;
            format!("swapped bodies of {name} and {}", b.members[j].0)
        }
        5 if n > 0 => {
            entries[k].data.clear();
            format!("emptied {name}")
        }
        6 if n > 0 => {
            entries[k].typeflag = [b'5', b'1', b'2', b'x', b'g', b'L', b'7', b'Z'][rng.below(8)];
            format!(
                "typeflag of {name} set to {:?}",
                entries[k].typeflag as char
            )
        }
        _ => {
            cut_archive = Some(rng.next());
            "archive cut short".to_string()
        }
    };
    let mut tar: Vec<u8> = entries.iter().flat_map(tar_entry).collect();
    tar.extend_from_slice(&[0u8; 1024]);
    let what = match cut_archive {
        Some(r) => {
            let at = (r % tar.len() as u64) as usize;
            tar.truncate(at);
            format!("{what} at {at} of the tar")
        }
        None => what,
    };
    Mutant {
        label: format!("tar#{i} {what}"),
        bytes: b.finish_tar(&tar),
        verify: true,
    }
}

/// Damage inside a binary member: instruction records (opcodes, ADDR8
/// operands, DMA-trigger names and block ids), `.npy` headers, lengths.
fn blob_mutant(b: &Base, rng: &mut Rng, i: usize) -> Option<Mutant> {
    let blobs: Vec<usize> = (0..b.members.len())
        .filter(|&k| !b.members[k].0.ends_with(".json") && !b.members[k].1.is_empty())
        .collect();
    let k = *blobs.get(rng.below(blobs.len()))?;
    let (name, body) = &b.members[k];
    let mut d = body.clone();
    let records = d.len() / 64;
    let r = 64 * rng.below(records.max(1));
    let what = match rng.below(7) {
        0 if records > 0 => {
            let op = [0xD4, 0xC1, 0xCC, 0xA0, 0xB1, 0xA4, rng.nonzero_byte()][rng.below(7)];
            d[r] = op;
            format!("record at {r} gets opcode {op:#x}")
        }
        1 if records > 0 && d[r] == 0xD4 => {
            // An ADDR8 operand: offset, id, reserved, mode.
            let at = r + [16usize, 40][rng.below(2)] + [0usize, 4, 6, 7][rng.below(4)];
            let v = [0xFF, 0x00, 0x10, 0x20, 0x28, rng.nonzero_byte()][rng.below(6)];
            d[at] = v;
            d[at.saturating_sub(1).max(r + 16)] ^= rng.nonzero_byte() & 0x7f;
            format!("ADDR8 byte {} of the 0xD4 record at {r} = {v:#x}", at - r)
        }
        2 if records > 0 => {
            // A 0xC1 trigger with a damaged queue name or block id.
            d[r] = 0xC1;
            let at = r + if rng.chance(50) {
                12 + rng.below(32)
            } else {
                48 + rng.below(4)
            };
            d[at] = rng.nonzero_byte();
            format!("0xC1 record at {r}, byte {} damaged", at - r)
        }
        3 => {
            let at = rng.below(d.len().min(128));
            d[at] ^= rng.nonzero_byte();
            format!("header byte {at} flipped")
        }
        4 => {
            let keep = rng.below(d.len());
            d.truncate(keep);
            format!("cut to {keep} bytes")
        }
        5 => {
            d.extend(std::iter::repeat_n(0xAB, 1 + rng.below(100)));
            format!("grown to {} bytes", d.len())
        }
        _ => {
            let at = rng.below(d.len());
            d[at] ^= rng.nonzero_byte();
            format!("byte {at} flipped")
        }
    };
    let mut members = b.members.clone();
    members[k].1 = d;
    Some(Mutant {
        label: format!("blob#{i} {name}: {what}"),
        bytes: b.write(&members),
        verify: true,
    })
}

/// One step of a path into a JSON value.
#[derive(Clone, Debug)]
enum Step {
    Key(String),
    Index(usize),
}

fn paths(v: &Value, prefix: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    out.push(prefix.clone());
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                prefix.push(Step::Key(k.clone()));
                paths(c, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                prefix.push(Step::Index(i));
                paths(c, prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

fn at_mut<'v>(v: &'v mut Value, path: &[Step]) -> Option<&'v mut Value> {
    path.iter().try_fold(v, |v, s| match s {
        Step::Key(k) => v.get_mut(k.as_str()),
        Step::Index(i) => v.get_mut(*i),
    })
}

fn show(path: &[Step]) -> String {
    path.iter()
        .map(|s| match s {
            Step::Key(k) => format!(".{k}"),
            Step::Index(i) => format!("[{i}]"),
        })
        .collect()
}

/// The JSON members of a base, parsed, with every path into each.
struct JsonMembers {
    members: Vec<(usize, Value, Vec<Vec<Step>>)>,
}

impl JsonMembers {
    fn of(b: &Base) -> JsonMembers {
        let members = b
            .members
            .iter()
            .enumerate()
            .filter(|(_, (n, _))| n.ends_with(".json"))
            .filter_map(|(i, (_, d))| {
                let v: Value = serde_json::from_slice(d).ok()?;
                let mut p = Vec::new();
                paths(&v, &mut Vec::new(), &mut p);
                Some((i, v, p))
            })
            .collect();
        JsonMembers { members }
    }
}

fn json_mutant(b: &Base, j: &JsonMembers, rng: &mut Rng, i: usize) -> Option<Mutant> {
    // The manifest chain (neff.json, kelf, def.json) gets half the edits.
    let chain: Vec<usize> = (0..j.members.len())
        .filter(|&k| {
            let n = &b.members[j.members[k].0].0;
            n == "neff.json" || n.starts_with("kelf") || n.ends_with("def.json")
        })
        .collect();
    let k = if !chain.is_empty() && rng.chance(50) {
        chain[rng.below(chain.len())]
    } else {
        rng.below(j.members.len())
    };
    let (mi, value, paths) = j.members.get(k)?;
    let member = &b.members[*mi].0;
    let path = &paths[rng.below(paths.len())];
    let mut v = value.clone();
    let target = at_mut(&mut v, path)?;
    let other = &b.members[rng.below(b.members.len())].0;
    let base_name = member.rsplit('/').next().unwrap_or(member).to_string();
    let what = match rng.below(16) {
        0 => {
            *target = json!("x");
            "a string".to_string()
        }
        1 => {
            *target = Value::Null;
            "null".into()
        }
        2 => {
            *target = json!([]);
            "an empty array".into()
        }
        3 => {
            *target = json!({});
            "an empty object".into()
        }
        4 => {
            *target = json!(true);
            "true".into()
        }
        5 => {
            let n = [
                json!(-1),
                json!(i64::MIN),
                json!(u64::MAX),
                json!(1u64 << 63),
                json!(1u64 << 32),
                json!(1e300),
                json!(-0.5),
                json!(4294967295u64),
            ][rng.below(8)]
            .clone();
            let s = n.to_string();
            *target = n;
            s
        }
        6 => match target.as_i64() {
            // Off by a little, or far out of range (a var_id past the table).
            Some(x) => {
                let d = [1i64, -1, 1000, -1000, 1 << 40][rng.below(5)];
                *target = json!(x.saturating_add(d));
                format!("{x}{d:+}")
            }
            None => {
                *target = json!(-4096);
                "-4096".into()
            }
        },
        7 => {
            *target = json!("sg00/missing.json");
            "the name of a missing member".into()
        }
        8 => {
            // A manifest naming itself, by full and by subgraph-relative name.
            let name = if rng.chance(50) {
                member.clone()
            } else {
                base_name.clone()
            };
            *target = json!(name);
            format!("its own name {name:?}")
        }
        9 => {
            *target = json!(other);
            format!("the name {other:?}")
        }
        10 => match target {
            Value::Array(a) if !a.is_empty() => {
                let e = a[rng.below(a.len())].clone();
                a.push(e);
                "an array with a duplicated element".into()
            }
            Value::Array(a) => {
                a.push(json!(0));
                "an array with a 0".into()
            }
            _ => {
                *target = json!([target.clone(), target.clone()]);
                "a pair of itself".into()
            }
        },
        11 => match target {
            Value::Array(a) => {
                a.truncate(rng.below(a.len().max(1)));
                format!("truncated to {}", a.len())
            }
            Value::Object(m) => {
                let keys: Vec<String> = m.keys().cloned().collect();
                let kk = keys.get(rng.below(keys.len())).cloned().unwrap_or_default();
                m.remove(&kk);
                format!("without key {kk:?}")
            }
            Value::String(s) => {
                s.push_str("\u{0}/../x");
                "a string with NUL and dot-dot".into()
            }
            _ => {
                *target = json!("1");
                "a numeric string".into()
            }
        },
        12 => {
            let n = [0u64, 1, 7, 65, 1 << 20][rng.below(5)];
            *target = json!(n);
            format!("{n}")
        }
        13 => {
            *target = json!("a".repeat(300));
            "a 300-character string".into()
        }
        14 => {
            *target = json!(-(rng.below(1 << 20) as i64) - 1);
            "a negative size".into()
        }
        _ => {
            let deep = (0..64).fold(json!(0), |acc, _| json!([acc]));
            *target = deep;
            "a 64-deep array".into()
        }
    };
    let mut members = b.members.clone();
    members[*mi].1 = serde_json::to_vec(&v).ok()?;
    Some(Mutant {
        label: format!("json#{i} {member}{} = {what}", show(path)),
        bytes: b.write(&members),
        verify: true,
    })
}

/// Every numeric leaf of every JSON member set to each extreme value in
/// turn (sizes, alignments, var_ids, counts, offsets, semaphores).
fn extreme_numbers(b: &Base, j: &JsonMembers) -> Vec<Mutant> {
    let values = [
        json!(1u64 << 31),
        json!(1u64 << 32),
        json!(1u64 << 40),
        json!(1u64 << 62),
        json!(1u64 << 63),
        json!(u64::MAX),
    ];
    let mut out = Vec::new();
    for (mi, value, paths) in &j.members {
        let member = &b.members[*mi].0;
        for path in paths {
            let mut probe = value.clone();
            if !at_mut(&mut probe, path).is_some_and(|v| v.is_number()) {
                continue;
            }
            for x in &values {
                let mut v = value.clone();
                if let Some(t) = at_mut(&mut v, path) {
                    *t = x.clone();
                }
                let mut members = b.members.clone();
                members[*mi].1 = serde_json::to_vec(&v).unwrap_or_default();
                out.push(Mutant {
                    label: format!("number {member}{} = {x}", show(path)),
                    bytes: b.write(&members),
                    verify: true,
                });
            }
        }
    }
    out
}

/// Edits that are not random: manifests naming themselves or each other
/// (kelf attr → neff.json, def.json engine keys → def.json, ...), invalid
/// UTF-8 and truncated text in each manifest of the chain.
fn fixed_mutants(b: &Base) -> Vec<Mutant> {
    let mut out = Vec::new();
    let idx = |name: &str| b.members.iter().position(|(n, _)| n == name);
    let json_of = |i: usize| serde_json::from_slice::<Value>(&b.members[i].1).ok();
    let mut push = |label: String, members: Vec<(String, Vec<u8>)>| {
        out.push(Mutant {
            label,
            bytes: b.write(&members),
            verify: true,
        })
    };
    let edit = |i: usize, f: &dyn Fn(&mut Value)| -> Option<Vec<(String, Vec<u8>)>> {
        let mut v = json_of(i)?;
        f(&mut v);
        let mut m = b.members.clone();
        m[i].1 = serde_json::to_vec(&v).ok()?;
        Some(m)
    };
    let Some(nj) = idx("neff.json") else {
        return out;
    };
    let kelf_name = json_of(nj)
        .and_then(|v| {
            v["nodes"].as_array()?.iter().find_map(|n| {
                (n["attrs"]["func_name"] == "__kelf")
                    .then(|| n["attrs"]["kelf"].as_str().map(str::to_string))?
            })
        })
        .unwrap_or_else(|| "kelf-0.json".into());
    for target in ["neff.json", "sg00/def.json", "", "kelf-0.json/"] {
        let set = |v: &mut Value| {
            if let Some(nodes) = v["nodes"].as_array_mut() {
                for n in nodes {
                    if n["attrs"]["func_name"] == "__kelf" {
                        n["attrs"]["kelf"] = json!(target);
                    }
                }
            }
        };
        if let Some(m) = edit(nj, &set) {
            push(format!("fixed: neff.json kelf attr = {target:?}"), m);
        }
    }
    if let Some(ki) = idx(&kelf_name) {
        for target in [kelf_name.as_str(), "neff.json", "sg00/missing.json"] {
            let set = |v: &mut Value| {
                if let Some(gs) = v["graphs"].as_array_mut() {
                    for g in gs {
                        g["definition"] = json!(target);
                    }
                }
            };
            if let Some(m) = edit(ki, &set) {
                push(format!("fixed: kelf graphs[*].definition = {target:?}"), m);
            }
        }
        // Every graph with the same name and definition.
        let dup = |v: &mut Value| {
            if let Some(gs) = v["graphs"].as_array_mut() {
                if let Some(g) = gs.first().cloned() {
                    gs.push(g);
                }
            }
        };
        if let Some(m) = edit(ki, &dup) {
            push("fixed: kelf graph listed twice".into(), m);
        }
    }
    let defs: Vec<usize> = (0..b.members.len())
        .filter(|&i| b.members[i].0.ends_with("/def.json"))
        .collect();
    for &di in &defs {
        let name = b.members[di].0.clone();
        for key in ["pe", "act", "pool", "dve", "sp"] {
            for target in ["def.json", name.as_str(), "../neff.json"] {
                let set = |v: &mut Value| {
                    if v.get(key).is_some() {
                        v[key] = json!(target);
                    }
                };
                if let Some(m) = edit(di, &set) {
                    push(format!("fixed: {name} engine {key} = {target:?}"), m);
                }
                let instr = format!("{key}_instr");
                let set = |v: &mut Value| {
                    if v.get(instr.as_str()).is_some() {
                        v[instr.as_str()] = json!(target);
                    }
                };
                if let Some(m) = edit(di, &set) {
                    push(format!("fixed: {name} {instr} = {target:?}"), m);
                }
            }
        }
        // Every var's id past the table, and every var the same id.
        for (tag, f) in [
            ("var_ids shifted by 1000", 0),
            ("every var_id 0", 1),
            ("var sizes 2^63", 2),
            ("var sizes negative", 3),
        ] {
            let set = |v: &mut Value| {
                if let Some(vars) = v["var"].as_object_mut() {
                    for var in vars.values_mut() {
                        match f {
                            0 => {
                                let id = var["var_id"].as_u64().unwrap_or(0);
                                var["var_id"] = json!(id + 1000);
                            }
                            1 => var["var_id"] = json!(0),
                            2 => var["size"] = json!(1u64 << 63),
                            _ => var["size"] = json!(-8),
                        }
                    }
                }
            };
            if let Some(m) = edit(di, &set) {
                push(format!("fixed: {name} {tag}"), m);
            }
        }
    }
    // Not JSON at all: invalid UTF-8, cut in half, empty.
    let chain: Vec<usize> = [Some(nj), idx(&kelf_name)]
        .into_iter()
        .flatten()
        .chain(defs.iter().copied())
        .collect();
    for i in chain {
        let name = b.members[i].0.clone();
        let mut m = b.members.clone();
        m[i].1.insert(1, 0xFF);
        push(format!("fixed: {name} with invalid UTF-8"), m);
        let mut m = b.members.clone();
        let half = m[i].1.len() / 2;
        m[i].1.truncate(half);
        push(format!("fixed: {name} cut in half"), m);
        let mut m = b.members.clone();
        m[i].1.clear();
        push(format!("fixed: {name} empty"), m);
    }
    out
}

/// Outcome counts, and the mutants that broke a rule.
#[derive(Default)]
struct Tally {
    outcomes: BTreeMap<String, usize>,
    failures: Vec<String>,
    total: usize,
    slowest: (Duration, String),
    /// Time spent building mutants, and loading them.
    making: Duration,
    loading: Duration,
    /// `NEFFLD_SWEEP_LOG=<path>`: every mutant's outcome, one line each.
    log: Option<std::fs::File>,
}

fn stage_of(e: &LoadError) -> &'static str {
    match e {
        LoadError::Container(_) => "container",
        LoadError::Pipeline(e) => match e.cause() {
            Cause::Parse(ParseError::Manifest(_)) => "manifest",
            Cause::Parse(ParseError::Kbin(_)) => "kbin",
            _ => e.stage(),
        },
        LoadError::Validation(_) => "validation",
        LoadError::Config(_) => "config",
        _ => "api",
    }
}

/// The runtime a mutant loads on, and the device it stages onto.
struct Rig {
    rt: Runtime,
    dev: Arc<NullDevice>,
}

impl Rig {
    fn new(arch: Arch, verify: bool) -> Rig {
        let dev = Arc::new(NullDevice::new(Geometry::for_arch(arch)));
        let cfg = RuntimeConfig {
            topology: Topology {
                arch,
                ..Default::default()
            },
            libnrt: Libnrt {
                validate_hash: verify,
                ..Default::default()
            },
            loader: Loader {
                check: true,
                max_inflated: Some(64 << 20),
                ..Default::default()
            },
        };
        Rig {
            rt: Runtime::with_device(cfg, dev.clone()).expect("runtime"),
            dev,
        }
    }
}

/// What the watchdog sees: the mutant in flight and when it started.
struct Watch {
    label: Mutex<String>,
    started_ms: AtomicU64,
    epoch: Instant,
}

fn run(base: &Base, m: &Mutant, rigs: &mut [Option<Rig>; 2], watch: &Watch, tally: &mut Tally) {
    let slot = usize::from(m.verify);
    let rig = rigs[slot].get_or_insert_with(|| Rig::new(base.arch, m.verify));
    let label = format!("{}: {}", base.name, m.label);
    *watch.label.lock().unwrap_or_else(|p| p.into_inner()) = label.clone();
    watch.started_ms.store(
        watch.epoch.elapsed().as_millis() as u64 + 1,
        Ordering::SeqCst,
    );
    let t = Instant::now();
    let outcome = catch_unwind(AssertUnwindSafe(|| match rig.rt.load(&m.bytes, None) {
        Ok(model) => rig
            .rt
            .unload(&model)
            .map(|()| "loaded".to_string())
            .map_err(|e| format!("unload failed: {e}")),
        Err(e) => {
            let status = e.status();
            let msg = e.to_string();
            if matches!(e, LoadError::Validation(_)) {
                Err(format!("staged model failed validation: {msg}"))
            } else if !EXPECTED.contains(&status) {
                Err(format!(
                    "unexpected status {status} ({}): {msg}",
                    stage_of(&e)
                ))
            } else if msg.trim().is_empty() {
                Err(format!("empty message, status {status}"))
            } else {
                Ok(format!("rejected {} by {}", status.code(), stage_of(&e)))
            }
        }
    }));
    let dt = t.elapsed();
    watch.started_ms.store(0, Ordering::SeqCst);
    tally.total += 1;
    tally.loading += dt;
    if dt > tally.slowest.0 {
        tally.slowest = (dt, label.clone());
    }
    match outcome {
        Ok(Ok(o)) => {
            if let Some(log) = &tally.log {
                let _ = writeln!(&*log, "{o}\t{label}");
            }
            *tally.outcomes.entry(o).or_default() += 1
        }
        Ok(Err(why)) => tally.failures.push(format!("{label}: {why}")),
        Err(p) => {
            let what = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            tally.failures.push(format!("{label}: panicked: {what}"));
            // The runtime may be poisoned: start afresh.
            rigs[slot] = None;
            return;
        }
    }
    if !beyond_start(&*rig.dev).is_empty() || rig.rt.loaded_models() != 0 {
        tally.failures.push(format!(
            "{label}: left {} allocations and {} models behind",
            beyond_start(&*rig.dev).len(),
            rig.rt.loaded_models()
        ));
        rigs[slot] = None;
    }
}

/// Every mutant of `base` the budget allows, the unmodified base first.
fn for_each_mutant(base: &Base, budget: Budget, rng: &mut Rng, f: &mut dyn FnMut(Mutant)) {
    f(Mutant {
        label: "unmodified".into(),
        bytes: base.bytes.clone(),
        verify: true,
    });
    for i in 0..budget.header {
        f(header_mutant(base, rng, i));
    }
    for i in 0..budget.payload_rehashed {
        f(payload_mutant(base, rng, i, true));
    }
    for i in 0..budget.payload_stale {
        f(payload_mutant(base, rng, i, false));
    }
    for i in 0..budget.tar {
        f(tar_mutant(base, rng, i));
    }
    for i in 0..budget.blob {
        if let Some(m) = blob_mutant(base, rng, i) {
            f(m);
        }
    }
    if budget.json > 0 {
        let j = JsonMembers::of(base);
        for i in 0..budget.json {
            if let Some(m) = json_mutant(base, &j, rng, i) {
                f(m);
            }
        }
        for m in fixed_mutants(base) {
            f(m);
        }
        if budget.extremes {
            for m in extreme_numbers(base, &j) {
                f(m);
            }
        }
    }
}

fn sweep(title: &str, bases: Vec<(Base, Budget)>) {
    let long = long_mode();
    let watch = Arc::new(Watch {
        label: Mutex::new(String::new()),
        started_ms: AtomicU64::new(0),
        epoch: Instant::now(),
    });
    let done = Arc::new(AtomicBool::new(false));
    let dog = {
        let (watch, done) = (watch.clone(), done.clone());
        std::thread::spawn(move || {
            let mut named = 0;
            while !done.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(200));
                let s = watch.started_ms.load(Ordering::SeqCst);
                let now = watch.epoch.elapsed().as_millis() as u64;
                if s != 0 && s != named && now.saturating_sub(s) > HANG.as_millis() as u64 {
                    let l = watch.label.lock().unwrap_or_else(|p| p.into_inner());
                    eprintln!("mutant still running after {HANG:?}: {l}");
                    named = s;
                }
            }
        })
    };
    let t0 = Instant::now();
    let mut tally = Tally {
        log: std::env::var("NEFFLD_SWEEP_LOG").ok().and_then(|p| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .ok()
        }),
        ..Tally::default()
    };
    for (bi, (base, budget)) in bases.iter().enumerate() {
        let budget = if long { budget.scaled(20) } else { *budget };
        let mut rng = Rng::new(seed() ^ (bi as u64 + 1).wrapping_mul(0xA24B_AED4_963E_E407));
        let mut rigs: [Option<Rig>; 2] = [None, None];
        let mut made = Instant::now();
        let mut go = |m: Mutant, tally: &mut Tally| {
            tally.making += made.elapsed();
            run(base, &m, &mut rigs, &watch, tally);
            made = Instant::now();
        };
        for_each_mutant(base, budget, &mut rng, &mut |m| go(m, &mut tally));
    }
    done.store(true, Ordering::SeqCst);
    let _ = dog.join();
    println!(
        "mutation sweep [{title}]{}: {} mutants over {} bases in {:.1?} ({:.1?} making, {:.1?} loading; seed {:#x}); slowest {:.1?}: {}",
        if long { " (long)" } else { "" },
        tally.total,
        bases.len(),
        t0.elapsed(),
        tally.making,
        tally.loading,
        seed(),
        tally.slowest.0,
        tally.slowest.1
    );
    for (o, n) in &tally.outcomes {
        println!("  {n:>6}  {o}");
    }
    println!("  {:>6}  FAILED", tally.failures.len());
    assert!(
        tally.failures.is_empty(),
        "{} mutants broke the contract:\n{}",
        tally.failures.len(),
        tally.failures.join("\n")
    );
}

#[test]
fn synthetic_families() {
    let budget = Budget {
        header: 120,
        payload_rehashed: 120,
        payload_stale: 60,
        tar: 240,
        json: 600,
        blob: 300,
        extremes: true,
    };
    let sunda = Synth::static_sunda();
    let cayman = Synth::dynamic_cayman();
    // Every kind of collectives record, a rank of four.
    let collectives = World::new(4).rank_synth(2);
    let bases = vec![
        (
            Base::synth("sunda 2.0.99229", &sunda, Producer::V2_0_99229, Arch::Sunda),
            budget,
        ),
        (
            Base::synth("sunda 2.18", &sunda, Producer::V2_18, Arch::Sunda),
            budget,
        ),
        (
            Base::synth("sunda pkg1", &sunda, Producer::Pkg1, Arch::Sunda),
            budget,
        ),
        (
            Base::synth("cayman 2.21", &cayman, Producer::V2_21, Arch::Cayman),
            budget,
        ),
        (
            Base::synth(
                "cayman collectives 2.21",
                &collectives,
                Producer::V2_21,
                Arch::Cayman,
            ),
            budget,
        ),
    ];
    sweep("synthetic", bases);
}

/// Every real fixture, the large ones with the `large` budget.
fn fixture_bases(small: Budget, large: Budget) -> Vec<(Base, Budget)> {
    neffld_testkit::real_fixtures()
        .into_iter()
        .map(|(name, bytes)| {
            let budget = if bytes.len() > 256 << 10 {
                large
            } else {
                small
            };
            (Base::fixture(&name, bytes), budget)
        })
        .collect()
}

#[test]
fn real_fixtures() {
    let small = Budget {
        header: 40,
        payload_rehashed: 40,
        payload_stale: 20,
        tar: 24,
        json: 60,
        blob: 20,
        extremes: false,
    };
    // The 1.5 MB fixture inflates to 9 MB: header and payload damage only
    // unless the long mode runs.
    let large = Budget {
        header: 10,
        payload_rehashed: 5,
        payload_stale: 5,
        tar: if long_mode() { 1 } else { 0 },
        json: if long_mode() { 2 } else { 0 },
        blob: 0,
        extremes: false,
    };
    let bases = fixture_bases(small, large);
    sweep("fixtures", bases);
}

/// Loads `bytes` as `neffld load` does on a fresh runtime: S1 first, then
/// the device of the NEFF's own target (trn2 when it says none), a default
/// configuration otherwise. Returns the status.
fn default_load(bytes: &[u8], validate_hash: bool) -> NrtStatus {
    let config = RuntimeConfig {
        libnrt: Libnrt {
            validate_hash,
            ..Default::default()
        },
        loader: Loader {
            max_inflated: Some(64 << 20),
            ..Default::default()
        },
        ..Default::default()
    };
    let opts = OpenOptions {
        verify_hash: validate_hash,
        compare_hash: false,
        inflate_limit: config.loader.max_inflated,
        max_members: config.loader.max_members,
    };
    let neff = match container::open(bytes, &opts) {
        Ok(n) => n,
        Err(e) => return e.status(),
    };
    let arch = neffld::parse::declared_arch(&neff).unwrap_or(Arch::Cayman);
    let dev = Arc::new(NullDevice::new(Geometry::for_arch(arch)));
    let rt = Runtime::with_device(
        RuntimeConfig {
            topology: Topology {
                arch,
                ..config.topology
            },
            ..config
        },
        dev.clone(),
    )
    .expect("runtime");
    let status = match rt.load_opened(bytes, neff, None) {
        Ok(model) => {
            rt.unload(&model).expect("unload");
            NrtStatus::Success
        }
        Err(e) => e.status(),
    };
    assert_eq!(
        beyond_start(&*dev).len(),
        0,
        "the load left allocations behind"
    );
    status
}

/// `verify` and a default load on the NEFF's own architecture give the same
/// verdict and status on hostile variants of every real fixture and of a
/// trn1 and a trn2 writer-built NEFF (issue 14:
/// a `vnc_size` the runtime cannot serve used to pass `verify`).
#[test]
fn verify_agrees_with_load() {
    let small = Budget {
        header: 24,
        payload_rehashed: 12,
        payload_stale: 12,
        tar: 12,
        json: 30,
        blob: 16,
        extremes: false,
    };
    let large = Budget {
        header: 6,
        payload_rehashed: 2,
        payload_stale: 2,
        tar: 0,
        json: 0,
        blob: 0,
        extremes: false,
    };
    let (mut total, mut agree_ok, mut agree_err, mut resource) = (0, 0, 0, 0);
    let mut disagreements = Vec::new();
    let mut lnc_rejects = 0;
    // The real fixtures are all trn2; writer-built NEFFs add a trn1 target
    // (static DMA, no LNC feature bit) and a synthetic trn2 one.
    let mut bases = fixture_bases(small, large);
    bases.push((
        Base::synth(
            "sunda 2.18",
            &Synth::static_sunda(),
            Producer::V2_18,
            Arch::Sunda,
        ),
        small,
    ));
    bases.push((
        Base::synth(
            "cayman 2.21",
            &Synth::dynamic_cayman(),
            Producer::V2_21,
            Arch::Cayman,
        ),
        small,
    ));
    for (bi, (base, budget)) in bases.into_iter().enumerate() {
        let name = base.name.clone();
        let mut rng = Rng::new(seed() ^ (bi as u64 + 7).wrapping_mul(0xD6E8_FEB8_6659_FD93));
        let mut mutants = Vec::new();
        for_each_mutant(&base, budget, &mut rng, &mut |m| mutants.push(m));
        // The header gate of the issue, on every fixture: an LNC size no
        // runtime of its architecture serves.
        let mut m = base.bytes.clone();
        m[0x228..0x22C].copy_from_slice(&228u32.to_le_bytes());
        mutants.push(Mutant {
            label: "vnc_size 228".into(),
            bytes: m,
            verify: false,
        });
        for m in mutants {
            total += 1;
            let load = default_load(&m.bytes, m.verify);
            let config = RuntimeConfig {
                libnrt: Libnrt {
                    validate_hash: m.verify,
                    ..Default::default()
                },
                loader: Loader {
                    max_inflated: Some(64 << 20),
                    ..Default::default()
                },
                ..Default::default()
            };
            let verdict = match neffld::verify(&m.bytes, &Settings::neff_own(config)) {
                Ok(_) => NrtStatus::Success,
                Err(e) => {
                    if matches!(
                        e,
                        LoadError::Container(
                            neffld::container::ContainerError::LncMismatch { .. }
                                | neffld::container::ContainerError::LncForeign { .. }
                        )
                    ) {
                        lnc_rejects += 1;
                    }
                    e.status()
                }
            };
            if load == NrtStatus::Resource || verdict == NrtStatus::Resource {
                resource += 1;
            } else if load != verdict {
                disagreements.push(format!(
                    "{name}: {}: load {load}, verify {verdict}",
                    m.label
                ));
            } else if load == NrtStatus::Success {
                agree_ok += 1;
            } else {
                agree_err += 1;
            }
        }
    }
    println!(
        "verify vs load: {total} variants, {agree_ok} both load, {agree_err} both reject (same status), {resource} resource failures set aside, {} disagree; {lnc_rejects} rejected by the LNC gate",
        disagreements.len()
    );
    assert!(
        disagreements.is_empty(),
        "verify and load disagree on {} variants:\n{}",
        disagreements.len(),
        disagreements.join("\n")
    );
    assert!(
        agree_ok > 0 && agree_err > 0,
        "the sweep must see both verdicts"
    );
    assert!(
        lnc_rejects >= 12,
        "every fixture's vnc_size 228 variant fails verify"
    );
}
