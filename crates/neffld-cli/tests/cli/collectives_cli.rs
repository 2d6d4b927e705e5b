//! A tensor-parallel NEFF through the command: it verifies and loads, and
//! `inspect`, `load` (text, `--json`, `--map`) list its collectives.

use crate::common::{json, neffld, scratch};
use neffld_testkit::collectives::{Step, World};
use serde_json::Value;

fn write(dir: &std::path::Path, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.to_str().unwrap().to_string()
}

/// The README's example: the runtime's sample NEFF, vendored (a pipeline
/// test holds it equal to the writer's `collectives::sample_neff`).
#[test]
fn a_neff_with_one_all_reduce_verifies_loads_and_is_listed() {
    let sample = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/written/collectives_sample.neff"
    )
    .to_string();
    for cmd in [vec!["verify", &sample], vec!["load", "--quiet", &sample]] {
        let out = neffld(&cmd);
        assert!(
            out.status.success(),
            "{cmd:?}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    let doc = json(&neffld(&["load", "--json", "--quiet", &sample]));
    let list = doc["collectives"].as_array().unwrap();
    assert_eq!(list.len(), 1);
    let c = &list[0];
    for (key, want) in [
        ("operation", "all-reduce"),
        ("reduce", "add"),
        ("dtype", "float32"),
        ("engine", "pe"),
        ("input", "gradient_in"),
        ("output", "gradient_out"),
    ] {
        assert_eq!(c[key], want, "{key}");
    }
    assert_eq!(
        (c["index"].as_u64(), c["elements_in"].as_u64()),
        (Some(0), Some(32))
    );
    // The record the all-reduce became is in the PE image.
    let pe = &doc["cores"][0]["images"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["engine"] == "pe")
        .cloned()
        .unwrap();
    let (addr, base) = (
        c["record_address"].as_u64().unwrap(),
        pe["address"].as_u64().unwrap(),
    );
    assert!(addr >= base && addr < base + pe["bytes"].as_u64().unwrap());
    assert_eq!(
        doc["collectives_memory"],
        "collectives memory not counted: 1 collective in 1 replica group"
    );
}

#[test]
fn inspect_load_and_the_map_list_each_collective() {
    let dir = scratch("cc-world");
    let w = World::new(8).with_steps(&[
        Step::AllReduce(512),
        Step::ReduceScatter(64),
        Step::SendRecvRing(256),
    ]);
    let rank = write(&dir, "rank3.neff", &w.rank(3));
    let out = neffld(&["inspect", &rank]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    for want in [
        "collective ptc pe#1 all-reduce add float32: 512 in, 512 out (2.0 KiB out); group 0: [0-7]; cc_in -> cc_out",
        "collective ptc pe#2 reduce-scatter max float32: 512 in, 64 out (256 B out); group 0: [0-7]",
        "collective psr pe#3 send: 256 B; peer rank 4; cc_in -> -",
        "collective psr pe#4 receive: 256 B; peer rank 2; - -> cc_out",
    ] {
        assert!(text.contains(want), "{text}\nlacks: {want}");
    }
    let inspected = json(&neffld(&["inspect", "--json", &rank]));
    let listed = &inspected["subgraphs"][0]["collectives"];
    assert_eq!(listed.as_array().unwrap().len(), 4);
    assert_eq!(listed[3]["peer"], 2);
    assert_eq!(
        listed[0]["groups"],
        serde_json::json!([[0, 1, 2, 3, 4, 5, 6, 7]])
    );

    let map = dir.join("map.html");
    let out = neffld(&[
        "load",
        "--no-timings",
        "--map",
        map.to_str().unwrap(),
        &rank,
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("note      collectives memory not counted: 4 collectives in 1 replica group"),
        "{text}"
    );
    assert_eq!(
        text.matches(" ptc pe#").count() + text.matches(" psr pe#").count(),
        4,
        "{text}"
    );
    let html = std::fs::read_to_string(&map).unwrap();
    assert!(html.contains("<h2>collectives</h2>"));
    assert_eq!(html.matches("<tr><td>sg00</td>").count(), 4, "{html}");
    let doc: Value = json(&neffld(&["load", "--json", "--quiet", &rank]));
    let addrs: Vec<u64> = doc["collectives"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["record_address"].as_u64().unwrap())
        .collect();
    assert!(
        addrs.windows(2).all(|p| p[1] == p[0] + 64),
        "consecutive records, one slot each: {addrs:x?}"
    );
}

#[test]
fn a_malformed_collective_is_refused_naming_its_record() {
    let dir = scratch("cc-bad");
    let mut s = World::new(2)
        .with_steps(&[Step::AllReduce(64)])
        .shared_synth();
    s.edit("sg00/def.json", |d| {
        d["replica_groups"] = serde_json::json!([])
    });
    let bad = write(
        &dir,
        "bad.neff",
        &s.write(neffld::container::writer::Producer::V2_21),
    );
    let out = neffld(&["verify", "--json", &bad]);
    assert_eq!(out.status.code(), Some(1));
    let f = &json(&out)["files"][0];
    assert_eq!(f["status"], "NRT_INVALID");
    let msg = f["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("instruction 1 (opcode 0xc8) of sg00/PE.bin: Failed to build cc context"),
        "{msg}"
    );
}
