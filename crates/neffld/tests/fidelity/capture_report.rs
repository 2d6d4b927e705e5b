//! The capture reader against the profiler's own reading of the same
//! captures: the JSON reports (trimmed, see testdata/README.md) list each
//! core's memory rows and every executed instruction's `pc` and opcode name.

use std::collections::{BTreeMap, BTreeSet};

use neffld::capture::{self, Capture};
use neffld::kbin::isa::RECORD_LEN;
use neffld::manifest::EngineType;
use neffld_testkit as testkit;
use serde_json::Value;

fn reports() -> Vec<(String, Vec<u8>, Value)> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(testkit::CAPTURES).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "ntff") {
            let json = p.with_extension("profile.json");
            let report = serde_json::from_slice(&std::fs::read(&json).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", json.display()));
            let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
            v.push((stem, std::fs::read(&p).unwrap(), report));
        }
    }
    v.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(v.len(), 10);
    v
}

/// The profiler's engine labels.
fn engine(label: &str) -> EngineType {
    match label {
        "Tensor" | "TensorMatrix" => EngineType::Pe,
        "Scalar" => EngineType::Act,
        "GpSimd" => EngineType::Pool,
        "Vector" => EngineType::Dve,
        "Sync" => EngineType::Sp,
        _ => panic!("unknown label {label}"),
    }
}

fn subgraph<'c>(c: &'c Capture<'_>, name: &str) -> &'c capture::Subgraph<'c> {
    c.subgraphs.iter().find(|s| s.name == name).unwrap()
}

#[test]
fn memory_rows_equal_the_reports_nc_mem_usage() {
    for (stem, bytes, report) in reports() {
        let c = capture::read(&bytes).unwrap();
        let rows = report["nc_mem_usage"].as_array().unwrap();
        let mut n = 0;
        for s in &c.subgraphs {
            let mut theirs: Vec<(&str, u64)> = rows
                .iter()
                .filter(|r| r["nc"].as_u64() == Some(s.pcore))
                .map(|r| {
                    (
                        r["usage_type"].as_str().unwrap(),
                        r["amount_bytes"].as_u64().unwrap(),
                    )
                })
                .collect();
            let ours: Vec<(&str, u64)> =
                s.memory.iter().map(|r| (r.usage_type(), r.bytes)).collect();
            // The profiler appends its own `Total` row: the sum of the others.
            let total = theirs.pop().unwrap();
            assert_eq!(total, ("Total", ours.iter().map(|r| r.1).sum()), "{stem}");
            assert_eq!(ours, theirs, "{stem} {}", s.name);
            n += ours.len() + 1;
        }
        assert_eq!(n, rows.len(), "{stem}: every reported row is a core's");
    }
}

#[test]
fn traced_pcs_are_slots_of_the_captured_images_with_one_opcode_byte_per_name() {
    // pc is a slot index into the engine's image; the opcode the profiler
    // names there must be one opcode byte, the same in every capture.
    let mut names: BTreeMap<String, BTreeSet<u8>> = BTreeMap::new();
    let mut traced = 0;
    for (stem, bytes, report) in reports() {
        let c = capture::read(&bytes).unwrap();
        let mut pcores = BTreeMap::new();
        for m in report["model_info"].as_array().unwrap() {
            pcores.insert(
                m["sg_name"].as_str().unwrap().to_string(),
                m["nc_idx"].as_u64().unwrap(),
            );
        }
        for s in &c.subgraphs {
            assert_eq!(pcores.get(&s.name), Some(&s.pcore), "{stem}");
        }
        for i in report["instruction"].as_array().unwrap() {
            let sg = subgraph(&c, i["subgraph"].as_str().unwrap());
            let e = engine(i["label"].as_str().unwrap());
            let pc = i["pc"].as_u64().unwrap() as usize;
            let img = &sg.image(e).unwrap().bytes;
            let slots = img.len() / RECORD_LEN;
            assert!(
                pc < slots,
                "{stem} {} {e:?}: pc {pc} of {slots} slots",
                sg.name
            );
            names
                .entry(i["opcode"].as_str().unwrap().to_string())
                .or_default()
                .insert(img[pc * RECORD_LEN]);
            traced += 1;
        }
    }
    assert!(traced > 5000, "{traced}");
    let ambiguous: Vec<_> = names.iter().filter(|(_, b)| b.len() != 1).collect();
    assert!(ambiguous.is_empty(), "{ambiguous:?}");
    // And no byte stands for two names.
    let mut by_byte: BTreeMap<u8, &str> = BTreeMap::new();
    for (n, b) in &names {
        let b = *b.iter().next().unwrap();
        if let Some(other) = by_byte.insert(b, n) {
            panic!("byte {b:#x} is both {other} and {n}");
        }
    }
}
