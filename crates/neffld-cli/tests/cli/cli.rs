//! The `neffld` binary end to end on the real fixtures.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{demo, fixture, fixtures_dir, json, neffld, scratch};
use neffld::RuntimeLine;
use serde_json::{json, Value};

/// The one-line summary takes its subgraph count from the load, the JSON
/// report from a parse of its own: on every fixture both equal the number of
/// `sgNN/def.json` members the tar holds, and the member counts agree.
#[test]
fn verify_summary_line_counts_what_the_report_lists() {
    for entry in std::fs::read_dir(fixtures_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "neff") {
            continue;
        }
        let p = path.to_str().unwrap();
        let report = json(&neffld(&["verify", "--json", p]));
        let v = &report["files"][0];
        let defs = v["members"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| {
                let name = m["name"].as_str().unwrap();
                name.starts_with("sg") && name.ends_with("/def.json")
            })
            .count();
        assert!(defs > 0, "{p}");
        assert_eq!(v["subgraphs"].as_array().unwrap().len(), defs, "{p}");
        let line = neffld(&["verify", p]);
        assert!(line.status.success(), "{p}");
        let text = String::from_utf8_lossy(&line.stdout);
        let counts = format!(
            "{} members, {defs} subgraphs)",
            v["archive"]["member_count"]
        );
        assert!(text.contains(&counts), "{p}: {text} lacks {counts}");
    }
}

#[test]
fn verify_json_reports_the_real_file() {
    let f = fixture("matmul_small.neff");
    let out = neffld(&["verify", "--json", f.to_str().unwrap()]);
    assert!(out.status.success());
    let v = &json(&out)["files"][0];
    assert_eq!(v["status_code"], 0);
    assert_eq!(v["header"]["uuid"], "00a04c535fd94f07bffdd5eacdefc852");
    assert_eq!(v["header"]["vnc_size"], 2);
    assert_eq!(v["header"]["neff_version"], "2.0");
    assert_eq!(v["header"]["pkg_version"], 2);
    assert_eq!(v["header"]["feature_bits"], "0x209c00");
    assert_eq!(v["header"]["name"], "file.neff");
    assert_eq!(v["integrity"]["algorithm"], "md5");
    assert_eq!(v["integrity"]["result"], "word-swapped");
    assert_eq!(v["archive"]["member_count"], 72);
    assert_eq!(v["members"].as_array().unwrap().len(), 72);
    assert_eq!(v["archive"]["inflated_bytes"], 356864);
    assert_eq!(v["error"], Value::Null);
    // The parse side: target, IO in neff.json order with the NEFF's dtype names, subgraphs.
    assert_eq!(v["target"], "cayman");
    let io: Vec<(String, String, u64)> = v["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .chain(v["outputs"].as_array().unwrap())
        .map(|t| {
            (
                t["name"].as_str().unwrap().into(),
                t["dtype"].as_str().unwrap().into(),
                t["size"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        io,
        [
            ("x".into(), "float16".into(), 65536),
            ("y".into(), "float16".into(), 65536),
            ("output0".into(), "float16".into(), 32768)
        ]
    );
    let sg = &v["subgraphs"][0];
    assert_eq!(sg["name"], "sg00");
    assert_eq!(sg["engines"][0]["engine"], "pe");
    assert_eq!(sg["engines"][0]["records"], 12);
    assert_eq!(sg["engines"][0]["opcodes"]["0x02"], 4, "MATMUL census");
    assert_eq!(sg["variables"]["dge-table"], 1);
    assert_eq!(v["subgraphs"].as_array().unwrap().len(), 2);
}

#[test]
fn a_damaged_file_fails_with_its_status() {
    let dir = scratch("damaged");
    let mut b = std::fs::read(fixture("matmul_small.neff")).unwrap();
    b[0x18] = 9; // NEFF major 9
    let f = dir.join("bad.neff");
    std::fs::write(&f, &b).unwrap();
    let out = neffld(&["verify", "--json", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let v = &json(&out)["files"][0];
    assert_eq!(v["status_code"], 10);
    assert_eq!(v["status"], "NRT_UNSUPPORTED_NEFF_VERSION");
    assert!(v["error"]["message"]
        .as_str()
        .unwrap()
        .contains("NEFF version: 9.0 is not supported"));
    // The human form names the failure on stderr.
    let out = neffld(&["verify", f.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("NRT_UNSUPPORTED_NEFF_VERSION"));
    // Several files: one line each, non-zero exit when any fails.
    let good = fixture("matmul_small.neff");
    let out = neffld(&["verify", good.to_str().unwrap(), f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert_eq!(lines[2], "2 files: 1 ok, 1 failed, 0 unreadable");
    assert!(
        lines[0].starts_with("ok    ") && lines[1].starts_with("FAIL  "),
        "{text}"
    );
    assert!(
        lines[1].contains("bad.neff") && lines[1].contains("NEFF version: 9.0"),
        "{text}"
    );
}

#[test]
fn extract_then_pack_rebuilds_an_equivalent_neff() {
    let dir = scratch("roundtrip");
    let src = fixture("kfusion__fused_attention__fused.neff");
    let tree = dir.join("tree");
    assert!(neffld(&[
        "extract",
        src.to_str().unwrap(),
        "-o",
        tree.to_str().unwrap()
    ])
    .status
    .success());
    assert!(Path::new(&tree).join("sg00/def.json").exists());
    let out_file = dir.join("re.neff");
    let out = neffld(&[
        "pack",
        tree.to_str().unwrap(),
        "-o",
        out_file.to_str().unwrap(),
        "--producer",
        "2.21",
        "--header-from",
        src.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let a = json(&neffld(&["verify", "--json", src.to_str().unwrap()]))["files"][0].clone();
    let b = json(&neffld(&["verify", "--json", out_file.to_str().unwrap()]))["files"][0].clone();
    assert_eq!(b["status_code"], 0);
    assert_eq!(a["header"]["uuid"], b["header"]["uuid"]);
    assert_eq!(
        a["archive"]["inflated_bytes"],
        b["archive"]["inflated_bytes"]
    );
    assert_eq!(a["archive"]["members"], b["archive"]["members"]);
    // Other families pack from the same members; they verify, with their digest form.
    let mut sorted_members = a["members"].as_array().unwrap().clone();
    sorted_members.sort_by_key(|x| x["name"].as_str().unwrap().to_string());
    for (p, result) in [
        ("2.18", "word-swapped"),
        ("2.0", "plain"),
        ("pkg1", "plain"),
    ] {
        let f = dir.join(format!("{p}.neff"));
        let args = [
            "pack",
            tree.to_str().unwrap(),
            "-o",
            f.to_str().unwrap(),
            "--producer",
            p,
            "--header-from",
            src.to_str().unwrap(),
        ];
        assert!(neffld(&args).status.success(), "{p}");
        let v = json(&neffld(&["verify", "--json", f.to_str().unwrap()]))["files"][0].clone();
        assert_eq!(v["status_code"], 0, "{p}: {}", v["error"]);
        assert_eq!(v["integrity"]["result"], result, "{p}");
        let names = |m: &Value| {
            m.as_array()
                .unwrap()
                .iter()
                .map(|x| (x["name"].clone(), x["size"].clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(&v["members"]),
            names(&Value::Array(sorted_members.clone())),
            "{p}: same members, in that family's order"
        );
    }
    // --header sets fields; an unknown field is refused.
    let f = dir.join("hdr.neff");
    let args = [
        "pack",
        tree.to_str().unwrap(),
        "-o",
        f.to_str().unwrap(),
        "--header",
        "name=renamed",
        "--header",
        "feature_bits=0xC00",
    ];
    assert!(neffld(&args).status.success());
    let v = json(&neffld(&["inspect", "--json", f.to_str().unwrap()]));
    assert_eq!(v["header"]["name"], "renamed");
    assert_eq!(v["header"]["feature_bits"], "0xc00");
    assert!(!neffld(&[
        "pack",
        tree.to_str().unwrap(),
        "-o",
        f.to_str().unwrap(),
        "--header",
        "colour=blue"
    ])
    .status
    .success());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The integrity line agrees with `verify`, which requires the hash: every
/// real fixture and the demo pass it, so inspect must say "matches".
#[test]
fn inspect_integrity_line_agrees_with_verify() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(fixtures_dir())
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "neff"))
        .collect();
    files.push(demo());
    for f in files {
        let v = json(&neffld(&["verify", "--json", f.to_str().unwrap()]));
        let entry = &v["files"][0];
        assert_eq!(entry["status_code"], 0, "{}: {v}", f.display());
        let form = entry["integrity"]["result"].as_str().unwrap();
        let alg = entry["integrity"]["algorithm"].as_str().unwrap();
        let out = neffld(&["inspect", f.to_str().unwrap()]);
        let text = String::from_utf8_lossy(&out.stdout);
        let want = format!("integrity   {alg} computed, not required: matches ({form})");
        assert!(text.contains(&want), "{}: {text}", f.display());
    }
    // And a damaged payload reads as one.
    let dir = scratch("integrity");
    let mut b = std::fs::read(demo()).unwrap();
    let last = b.len() - 1;
    b[last] ^= 0xff;
    let f = dir.join("flipped.neff");
    std::fs::write(&f, &b).unwrap();
    let text =
        String::from_utf8_lossy(&neffld(&["inspect", f.to_str().unwrap()]).stdout).to_string();
    assert!(text.contains("does NOT match"), "{text}");
}

#[test]
fn extract_refuses_paths_that_leave_the_directory() {
    use neffld::container::writer::{NeffWriter, Producer};
    let dir = scratch("traversal");
    let members: Vec<(&str, &[u8])> = vec![("../evil.txt", b"x"), ("ok.txt", b"y")];
    let f = dir.join("t.neff");
    std::fs::write(&f, NeffWriter::new(Producer::V2_21).write(&members)).unwrap();
    let out_dir = dir.join("out");
    let out = neffld(&[
        "extract",
        f.to_str().unwrap(),
        "-o",
        out_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    assert!(out_dir.join("ok.txt").exists());
    assert!(!dir.join("evil.txt").exists());
    assert!(String::from_utf8_lossy(&out.stderr).contains("../evil.txt"));
}

#[test]
fn load_every_fixture_with_check_exits_0() {
    let dir = fixtures_dir();
    for e in std::fs::read_dir(dir).unwrap().filter_map(Result::ok) {
        let p = e.path();
        if p.extension().is_none_or(|x| x != "neff") {
            continue;
        }
        let out = neffld(&["load", "--check", "--json", "--quiet", p.to_str().unwrap()]);
        let v = json(&out);
        assert!(out.status.success(), "{}: {v}", p.display());
        assert_eq!(v["status_code"], 0);
        assert_eq!(v["arch"], "trn2", "the NEFF's own target");
        assert_eq!(v["cores"].as_array().unwrap().len(), 2);
    }
}

#[test]
fn load_json_schema() {
    let f = fixture("matmul_small.neff");
    let out = neffld(&["load", "--json", "--device", "null", f.to_str().unwrap()]);
    assert!(out.status.success());
    let v = json(&out);
    assert_eq!(v["status"], "NRT_SUCCESS");
    assert_eq!(v["status_code"], 0);
    assert_eq!(v["device"], "null");
    assert!(v["h_nn"].as_u64().unwrap() >= 1);
    for k in [
        "guard",
        "container",
        "parse",
        "cache_wait",
        "stage",
        "relocate",
        "unload",
        "total",
    ] {
        assert!(v["timings_us"][k].is_u64(), "timings_us.{k}");
    }
    let cores = v["cores"].as_array().unwrap();
    let pcores: Vec<u64> = cores.iter().map(|c| c["pcore"].as_u64().unwrap()).collect();
    assert_eq!(pcores, [0, 1]);
    for c in cores {
        for k in [
            "hbm",
            "instructions",
            "descriptors",
            "templates",
            "scratchpad_pages",
        ] {
            assert!(c[k].is_u64(), "cores[].{k}: {c}");
        }
        assert_eq!(c["variables"].as_array().unwrap().len(), 6);
        assert_eq!(c["images"].as_array().unwrap().len(), 5);
        let pool = &c["images"][2];
        assert_eq!(pool["engine"], "pool");
        assert_eq!(pool["io_templates"], 4, "four 0xD4 DGE operands");
    }
    let names: Vec<&str> = v["tensors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["x", "y", "output0"]);
    // Both cores share HBM 0 (trn2: two cores per HBM). One answer: the
    // HBM's use is its cores' columns summed and the requested bytes of
    // every allocation on it; what the allocator holds is their 4 KiB
    // granules; the NEFF's constants are its weights.
    let m = &v["memory"];
    assert_eq!(m["fits"], true);
    assert_eq!(m["hbm"].as_array().unwrap().len(), 1, "{m}");
    let hbm = &m["hbm"][0];
    assert_eq!(hbm["cores"], serde_json::json!([0, 1]));
    assert_eq!(hbm["size"], 24u64 << 30);
    let on_hbm0: Vec<&Value> = m["allocations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["hbm"] == 0)
        .collect();
    let sum = |k: &str| on_hbm0.iter().map(|a| a[k].as_u64().unwrap()).sum::<u64>();
    assert_eq!(hbm["used"], sum("size"));
    assert_eq!(hbm["held"], sum("charged"));
    let cols = |o: &Value| {
        o["columns"]
            .as_object()
            .unwrap()
            .values()
            .map(|b| b.as_u64().unwrap())
            .sum::<u64>()
    };
    assert_eq!(cols(hbm), hbm["used"].as_u64().unwrap());
    let mut cores_used = 0;
    for c in m["cores"].as_array().unwrap() {
        assert_eq!(cols(c), c["used"].as_u64().unwrap());
        cores_used += c["used"].as_u64().unwrap();
        let neff = &c["neffs"][0];
        assert_eq!(neff["name"], v["model"]["name"]);
        let weights: u64 = c_weights(&v, c["pcore"].as_u64().unwrap());
        assert_eq!(neff["columns"]["model constants"], weights, "{c}");
    }
    assert_eq!(cores_used, hbm["used"].as_u64().unwrap());
}

/// The bytes of the `file` variables the load placed on physical core `pcore`.
fn c_weights(v: &Value, pcore: u64) -> u64 {
    v["cores"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["pcore"] == pcore)
        .flat_map(|c| c["variables"].as_array().unwrap())
        .filter(|var| var["type"] == "file")
        .map(|var| var["size"].as_u64().unwrap())
        .sum()
}

#[test]
fn load_for_the_wrong_arch_says_why() {
    let f = fixture("matmul_small.neff");
    let out = neffld(&["load", "--json", "--arch", "trn1", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let v = json(&out);
    assert_eq!(v["status_code"], 2);
    assert_eq!(v["status"], "NRT_INVALID");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("declares logical-core size 2"),
        "{v}"
    );
    assert_eq!(v["error"]["stage"], "container");
    let out = neffld(&["load", f.to_str().unwrap(), "--arch", "trn1"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("NRT_INVALID"));
}

#[test]
fn the_demo_neff_is_packed_from_its_source_tree() {
    let dir = scratch("demo");
    let out_file = dir.join("demo.neff");
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo");
    let out = neffld(&[
        "pack",
        src.to_str().unwrap(),
        "-o",
        out_file.to_str().unwrap(),
        "--producer",
        "2.18",
        "--name",
        "demo",
        "--uuid",
        "6e6566666c642d64656d6f2d6e656666",
    ]);
    assert!(out.status.success());
    assert!(
        std::fs::read(&out_file).unwrap() == std::fs::read(demo()).unwrap(),
        "examples/demo.neff is stale"
    );
}

/// The human reports of `inspect` and `load` show what the NEFF holds,
/// checked against its source tree (examples/demo, which packs byte for
/// byte into examples/demo.neff): every member and its size, the IO tensors
/// of neff.json, each engine's records, the queues and variables of
/// def.json, and the runtime's usage table of the load.
#[test]
fn human_reports_show_what_the_neff_holds() {
    let d = demo();
    let tree = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo");
    let size = |p: &Path| std::fs::metadata(p).unwrap().len();
    let def: Value =
        serde_json::from_slice(&std::fs::read(tree.join("sg00/def.json")).unwrap()).unwrap();
    let out = neffld(&["inspect", d.to_str().unwrap()]);
    assert!(out.status.success());
    let inspect = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = inspect.lines().collect();
    assert!(
        lines[0].ends_with(&format!(": {} bytes (11.0 KiB)", size(&d))),
        "{}",
        lines[0]
    );
    assert!(lines.contains(&"name        demo"));
    assert!(lines.contains(&"uuid        6e6566666c642d64656d6f2d6e656666"));
    assert!(lines.contains(&"target      trn1 (sunda)"));
    // Every member of the tree, with its size, in name order.
    let mut members = Vec::new();
    for dir in ["", "sg00"] {
        for e in std::fs::read_dir(tree.join(dir))
            .unwrap()
            .filter_map(Result::ok)
        {
            if e.path().is_file() {
                let name = if dir.is_empty() {
                    e.file_name().to_string_lossy().into_owned()
                } else {
                    format!("{dir}/{}", e.file_name().to_string_lossy())
                };
                members.push((name, size(&e.path())));
            }
        }
    }
    members.sort();
    let listed: Vec<String> = members
        .iter()
        .map(|(n, b)| format!("{b:>12}  {n}"))
        .collect();
    let at = lines.iter().position(|l| l.starts_with("archive")).unwrap();
    assert!(
        lines[at].contains(&format!("{} members", members.len())),
        "{}",
        lines[at]
    );
    assert_eq!(lines[at + 1..at + 1 + listed.len()], listed[..]);
    // Each engine's records: its stream's length in 64-byte records.
    let records: Vec<String> = [
        ("pe", "PE"),
        ("act", "Activation"),
        ("pool", "Pool"),
        ("dve", "DVE"),
        ("sp", "SP"),
    ]
    .iter()
    .map(|(k, f)| format!("{k} {}", size(&tree.join(format!("sg00/{f}.bin"))) / 64))
    .collect();
    let sg = lines
        .iter()
        .find(|l| l.starts_with("subgraph    sg00:"))
        .unwrap();
    assert!(
        sg.contains(&format!("records {}", records.join(", "))),
        "{sg}"
    );
    for q in def["dma_queue"].as_object().unwrap().keys() {
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with(&format!("  queue {q} "))),
            "{q}"
        );
    }
    // The IO tensors of neff.json.
    for (usage, name) in [("input", "a"), ("output", "out")] {
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with(&format!("  {usage:<7} {name:<24} float16   [128,64]"))),
            "{usage} {name}: {inspect}"
        );
    }

    let out = neffld(&[
        "load",
        "--check",
        "--no-timings",
        "--quiet",
        d.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let load = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = load.lines().collect();
    assert!(lines.contains(&"status    NRT_SUCCESS (0)"));
    assert!(lines.contains(&"model     nn1 \"demo\" uuid 6e6566666c642d64656d6f2d6e656666"));
    assert!(lines.contains(&"placed    logical core 0 -> physical nc0"));
    assert!(lines
        .iter()
        .any(|l| l.starts_with("memory    fits: yes; HBM 0 ")));
    // Every variable of def.json, with its type and size.
    for (name, var) in def["var"].as_object().unwrap() {
        let kind = var["type"].as_str().unwrap();
        let row = lines
            .iter()
            .find(|l| l.split_whitespace().nth(1) == Some(name.as_str()))
            .unwrap_or_else(|| panic!("{name}: {load}"));
        assert_eq!(row.split_whitespace().nth(2), Some(kind), "{row}");
        if let (Some(bytes), "file" | "virtual") = (var["size"].as_u64(), kind) {
            assert!(row.contains(&format!(" {bytes} (")), "{row}");
        }
    }
    // The runtime's usage table, one row for the HBM, the core and the NEFF,
    // its id mapped to the NEFF's name; model constants are the weights.
    let weights = def["var"]["identity_1"]["size"].as_u64().unwrap();
    let neff_row = lines
        .iter()
        .find(|l| l.starts_with("  \\_NEFF 1    |"))
        .unwrap();
    let cells: Vec<&str> = neff_row.split('|').map(str::trim).collect();
    assert_eq!(cells[3], format!("{}.000KB", weights / 1024), "{neff_row}");
    assert!(lines.iter().any(|l| l.starts_with("ND 0 HBM 0    |")));
    assert!(lines.iter().any(|l| l.starts_with("\\_NC 0        |")));
    let mapping = lines
        .iter()
        .position(|l| *l == "NEFF id to name mapping:")
        .unwrap();
    assert_eq!(lines[mapping + 1], "1: \"demo\"");
}

#[test]
fn map_draws_every_allocation_on_one_axis_per_hbm() {
    let dir = scratch("map");
    let html = dir.join("map.html");
    let load = |neff: &Path| {
        let out = neffld(&[
            "load",
            "--quiet",
            "--json",
            "--map",
            html.to_str().unwrap(),
            neff.to_str().unwrap(),
        ]);
        assert!(out.status.success());
        (json(&out), std::fs::read_to_string(&html).unwrap())
    };
    let (v, page) = load(&fixture("matmul_small.neff"));
    assert!(page.starts_with("<!DOCTYPE html>"));
    // nc0 and nc1 share HBM 0: one picture.
    assert_eq!(page.matches("<svg").count(), 1);
    assert!(page.contains("<h2>HBM 0 — cores nc0, nc1 — "), "{page}");
    // Every allocation is a labelled row.
    let rows = |v: &Value, page: &str| {
        let shown: Vec<&Value> = v["memory"]["hbm"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| &h["hbm"])
            .collect();
        let allocs: Vec<Value> = v["memory"]["allocations"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| shown.contains(&&a["hbm"]))
            .cloned()
            .collect();
        assert_eq!(page.matches("<g class=\"alloc\">").count(), allocs.len());
        for a in &allocs {
            let addr = format!("@ {:#x}</text>", a["address"].as_u64().unwrap());
            assert!(page.contains(&addr), "no label for {a}");
        }
        allocs
    };
    rows(&v, &page);
    // The demo: its scratchpad is drawn, and the two spill variables that
    // share 2 KiB of it are drawn on one zoomed axis, overlapping.
    let (v, page) = load(&demo());
    let allocs = rows(&v, &page);
    assert!(
        allocs.iter().any(|a| a["category"] == "SCRATCHPAD"),
        "{allocs:?}"
    );
    let vars: Vec<(u64, u64)> = v["cores"][0]["variables"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["name"] == "spill_a" || x["name"] == "spill_b")
        .map(|x| (x["address"].as_u64().unwrap(), x["size"].as_u64().unwrap()))
        .collect();
    assert!(
        vars[0].0 < vars[1].0 && vars[1].0 < vars[0].0 + vars[0].1,
        "the NEFF aliases them: {vars:?}"
    );
    let bar = |name: &str| -> (f64, f64) {
        let i = page.find(&format!("var {name} (virtual)")).unwrap();
        let rect = &page[i..][page[i..].find("<rect x=\"").unwrap() + 9..];
        let x: f64 = rect[..rect.find('"').unwrap()].parse().unwrap();
        let w = &rect[rect.find("width=\"").unwrap() + 7..];
        (x, w[..w.find('"').unwrap()].parse().unwrap())
    };
    let (a, b) = (bar("spill_a"), bar("spill_b"));
    assert!(
        b.0 > a.0 && b.0 < a.0 + a.1,
        "drawn overlapping: {a:?} {b:?}"
    );
}

/// Member lists equal what GNU tar lists from the same payload.
#[test]
fn member_lists_match_gnu_tar() {
    if std::process::Command::new("tar")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipping: no tar on this machine");
        return;
    }
    let dir = scratch("tar");
    for name in ["matmul_small.neff", "kfusion__fused_attention__fused.neff"] {
        let bytes = std::fs::read(fixture(name)).unwrap();
        let payload = dir.join("payload.tgz");
        std::fs::write(&payload, &bytes[1024..]).unwrap();
        let out = Command::new("tar")
            .arg("-tzf")
            .arg(&payload)
            .output()
            .unwrap();
        let mut tar_names: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect();
        tar_names.sort();
        let v = json(&neffld(&[
            "inspect",
            "--json",
            fixture(name).to_str().unwrap(),
        ]));
        let mut ours: Vec<String> = v["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["name"].as_str().unwrap().to_string())
            .collect();
        ours.sort();
        assert_eq!(ours, tar_names, "{name}");
    }
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A trn1 tree packed with defaults loads on trn1; a header the tree's
/// target cannot take is refused, naming both.
#[test]
fn pack_follows_the_trees_target() {
    let dir = scratch("pack-target");
    let tree = dir.join("tree");
    let d = demo();
    assert!(
        neffld(&["extract", d.to_str().unwrap(), "-o", tree.to_str().unwrap()])
            .status
            .success()
    );
    let inspect = json(&neffld(&["inspect", "--json", d.to_str().unwrap()]));
    assert_eq!(inspect["target"], "sunda", "the demo is a trn1 NEFF");
    let packed = dir.join("p.neff");
    let out = neffld(&[
        "pack",
        tree.to_str().unwrap(),
        "-o",
        packed.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&neffld(&["verify", "--json", packed.to_str().unwrap()]));
    assert_eq!(v["status_code"], 0, "{v}");
    assert_eq!(v["files"][0]["header"]["vnc_size"], 1);
    let out = neffld(&["load", "--json", "--quiet", packed.to_str().unwrap()]);
    let v = json(&out);
    assert!(out.status.success(), "{v}");
    assert_eq!(v["arch"], "trn1");
    // Forcing the trn2 family on a trn1 tree: refused, not a NEFF that only verify passes.
    let bad = dir.join("bad.neff");
    let out = neffld(&[
        "pack",
        tree.to_str().unwrap(),
        "-o",
        bad.to_str().unwrap(),
        "--producer",
        "2.21",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let v = json(&out);
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains("vnc_size 2") && msg.contains("trn1"), "{msg}");
    assert!(!bad.exists());
    // ...unless the header is set to fit.
    let out = neffld(&[
        "pack",
        tree.to_str().unwrap(),
        "-o",
        bad.to_str().unwrap(),
        "--producer",
        "2.21",
        "--header",
        "vnc_size=1",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// `--runtime` takes a line or a version of one, NEFFLD_RUNTIME is its
/// default, and anything else is a usage error naming the value.
#[test]
fn the_runtime_line_is_chosen_and_reported() {
    let f = fixture("matmul_small.neff");
    let line = |args: &[&str]| {
        let mut all = vec!["load", "--json", "--device", "null"];
        all.extend_from_slice(args);
        all.push(f.to_str().unwrap());
        let out = neffld(&all);
        assert!(out.status.success(), "{}", stderr(&out));
        json(&out)["runtime"].as_str().unwrap().to_string()
    };
    let newest = RuntimeLine::NEWEST.to_string();
    assert_eq!(line(&[]), newest, "the default on every chip: the newest");
    assert_eq!(line(&["--runtime", "2.31"]), "2.31");
    assert_eq!(line(&["--runtime", "2.35"]), "2.35");
    assert_eq!(line(&["--runtime", "2.35.33"]), "2.35");
    assert_eq!(line(&["--runtime", "2.33.10"]), "2.33");
    // What a line without captures takes from where, said once.
    let human = |args: &[&str]| {
        let mut all = vec!["load", "--quiet", "--device", "null"];
        all.extend_from_slice(args);
        all.push(f.to_str().unwrap());
        stdout(&neffld(&all))
    };
    let h = human(&[]);
    assert!(
        h.contains(&format!(
            "{newest} has no capture of its own: as documented, "
        )) && h.contains("contiguous shared scratchpad")
            && h.contains("2.30's captures (of trn2) carry over (instruction image layout"),
        "{h}"
    );
    // On trn1, 2.31 differs from the 2.23 it carries over by the usage
    // table with a row per NEFF (from 2.26.42).
    let h = human(&["--arch", "trn1", "--runtime", "2.31"]);
    assert!(
        h.contains("2.31 has no capture of its own: as documented, a usage table with a row per NEFF in a refused allocation's report; 2.23's captures (of trn1) carry over"),
        "{h}"
    );
    assert!(!human(&["--runtime", "2.30"]).contains("no capture"));
    assert_eq!(line(&["--runtime", "2.27.23"]), "2.27");
    let out = Command::new(env!("CARGO_BIN_EXE_neffld"))
        .env("NEFFLD_RUNTIME", "2.25")
        .args(["load", "--json", "--device", "null", f.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(json(&out)["runtime"], "2.25");
    let out = neffld(&["load", "--runtime", "2.26", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    assert!(
        e.contains("'2.26'") && e.contains("2.27") && e.contains(&newest),
        "{e}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_neffld"))
        .env("NEFFLD_RUNTIME", "3.1")
        .args(["load", "--json", "--device", "null", f.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "a variable's value: a usage error"
    );
    let v = json(&out);
    assert_eq!(v["error"]["stage"], "config");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("NEFFLD_RUNTIME"),
        "{v}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_neffld"))
        .env("NEURON_RT_CONTIGUOUS_SCRATCHPAD", "maybe")
        .args(["load", "--json", "--device", "null", f.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let m = json(&out)["error"]["message"].as_str().unwrap().to_string();
    assert!(
        m.contains("NEURON_RT_CONTIGUOUS_SCRATCHPAD")
            && m.contains("\"maybe\"")
            && m.contains("0/1"),
        "{m}"
    );
}

#[test]
fn lnc_a_core_cannot_take_is_refused() {
    let d = demo();
    let out = neffld(&["load", "--lnc", "2", d.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    assert!(e.contains("--lnc 2") && e.contains("trn1"), "{e}");
    let out = neffld(&["load", "--json", "--lnc", "2", d.to_str().unwrap()]);
    let v = json(&out);
    assert_eq!(v["error"]["stage"], "usage");
    // A size the core takes still loads.
    assert!(
        neffld(&["load", "--quiet", "--lnc", "1", d.to_str().unwrap()])
            .status
            .success()
    );
    let f = fixture("matmul_small.neff");
    assert!(
        neffld(&["load", "--quiet", "--lnc", "2", f.to_str().unwrap()])
            .status
            .success()
    );
}

#[test]
fn verify_goes_on_past_an_unreadable_file() {
    let good = fixture("matmul_small.neff");
    let d = demo();
    let out = neffld(&[
        "verify",
        good.to_str().unwrap(),
        "/nonexistent/missing.neff",
        d.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "an unreadable file is an I/O error"
    );
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(lines[0].starts_with("ok    "), "{text}");
    assert!(
        lines[1].starts_with("FAIL  /nonexistent/missing.neff: cannot read"),
        "{text}"
    );
    assert!(lines[2].starts_with("ok    "), "{text}");
    assert_eq!(lines[3], "3 files: 2 ok, 0 failed, 1 unreadable");
    let v = json(&neffld(&[
        "verify",
        "--json",
        good.to_str().unwrap(),
        "/nonexistent/missing.neff",
    ]));
    assert_eq!(v["summary"]["unreadable"], 1);
    assert_eq!(v["files"][1]["error"]["stage"], "io");
    assert_eq!(v["error"]["stage"], "io");
}

/// Not-a-NEFF inputs are named; numbers are decimal with units, hex marked.
#[test]
fn errors_say_what_the_file_is() {
    let dir = scratch("notneff");
    let cases: [(&str, Vec<u8>, &str); 4] = [
        ("empty.neff", vec![], "the file is empty"),
        (
            "r100.neff",
            vec![7u8; 100],
            "received 0x64: the file is 100 bytes",
        ),
        (
            "text.neff",
            b"just some notes\n".repeat(200),
            "this is a text file, not a NEFF",
        ),
        (
            "gz.neff",
            {
                let mut g = vec![0x1f, 0x8b, 8, 0];
                g.resize(4000, 0x55);
                g
            },
            "this is a gzip stream, not a NEFF",
        ),
    ];
    for (name, body, want) in cases {
        let f = dir.join(name);
        std::fs::write(&f, body).unwrap();
        let out = neffld(&["inspect", "--json", f.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1));
        let msg = json(&out)["error"]["message"].as_str().unwrap().to_string();
        assert!(msg.contains(want), "{name}: {msg}");
        assert!(
            msg.starts_with("Invalid "),
            "the runtime's words first: {msg}"
        );
    }
    let tar = dir.join("t.tar");
    let ok = Command::new("tar")
        .arg("-cf")
        .arg(&tar)
        .arg("-C")
        .arg(fixtures_dir())
        .arg("LICENSE-kfusion-MIT.txt")
        .status();
    if ok.is_ok_and(|s| s.success()) {
        let msg = json(&neffld(&["inspect", "--json", tar.to_str().unwrap()]))["error"]["message"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(msg.contains("this is a tar archive"), "{msg}");
        assert!(msg.contains("hdr sz: 0x"), "hex is marked: {msg}");
    }
}

/// A NEFF whose spill variable needs 15 GiB on a 16 GiB trn1 HBM, after a
/// 15.5 GiB scratchpad, under the paged scratchpad of 2.30: the error names
/// it all, and the report and map show what was placed. The contiguous
/// region of 2.34 holds the variable inside the region, with no private
/// copy, so the same NEFF loads there.
#[test]
fn out_of_memory_is_explained_and_still_reported() {
    let dir = scratch("oom");
    let tree = dir.join("tree");
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo");
    copy_tree(&src, &tree);
    let def = tree.join("sg00/def.json");
    let mut j: Value = serde_json::from_slice(&std::fs::read(&def).unwrap()).unwrap();
    // 14.5 GiB: its 29 scratchpad pages fit (the small pool, less what the
    // runtime took for itself, holds one), its private allocation does not.
    j["var"]["spill_b"]["size"] = serde_json::json!(29u64 << 29);
    std::fs::write(&def, serde_json::to_vec(&j).unwrap()).unwrap();
    let f = dir.join("oom.neff");
    assert!(
        neffld(&["pack", tree.to_str().unwrap(), "-o", f.to_str().unwrap()])
            .status
            .success()
    );
    let html = dir.join("oom.html");
    let out = neffld(&[
        "load",
        "--json",
        "--quiet",
        "--runtime",
        "2.30",
        "--map",
        html.to_str().unwrap(),
        f.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let v = json(&out);
    assert_eq!(v["status"], "NRT_RESOURCE");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("Failed to allocate 15569256448 bytes"),
        "the runtime's words first: {msg}"
    );
    for want in [
        "\"spill_b\"",
        "15569256448 bytes (14.5 GiB)",
        "on nc0",
        "HBM 0 holds 16.0 GiB",
        "shared scratchpad 15.0 GiB",
    ] {
        assert!(msg.contains(want), "{want}: {msg}");
    }
    let m = &v["memory"];
    assert_eq!(m["fits"], false);
    assert_eq!(m["refused"]["name"], "spill_b");
    assert_eq!(m["refused"]["size"], 29u64 << 29);
    assert_eq!(m["refused"]["column"], "scratchpad");
    assert!(!m["allocations"].as_array().unwrap().is_empty());
    // As the refusal found it: the shared pages holding the arena (its
    // 14.5 GiB and 2 KiB, thirty 512 MiB pages) were held.
    assert_eq!(
        m["cores"][0]["columns"]["shared scratchpad"],
        30u64 << 29,
        "{m}"
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("did not fit: nc0 SCRATCHPAD_NOT_SHARED spill_b needs 14.5 GiB"),
        "{page}"
    );
    let human = stdout(&neffld(&[
        "load",
        "--quiet",
        "--runtime",
        "2.30",
        f.to_str().unwrap(),
    ]));
    assert!(human.contains("memory    fits: no; HBM 0 "), "{human}");
    assert!(human.contains("\\_NC 0        |"), "{human}");
    let v = json(&neffld(&["load", "--json", "--quiet", f.to_str().unwrap()]));
    assert_eq!(
        (&v["status"], &v["runtime"]),
        (
            &json!("NRT_SUCCESS"),
            &json!(RuntimeLine::NEWEST.to_string())
        )
    );
    assert_eq!(v["memory"]["cores"][0]["columns"]["scratchpad"], 0, "{v}");
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().filter_map(Result::ok) {
        let p = e.path();
        if p.is_dir() {
            copy_tree(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn dtype_names_agree_across_commands() {
    let f = fixture("matmul_small.neff");
    let load = json(&neffld(&["load", "--json", "--quiet", f.to_str().unwrap()]));
    let inspect = json(&neffld(&["inspect", "--json", f.to_str().unwrap()]));
    for t in load["tensors"].as_array().unwrap() {
        let same = inspect["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .chain(inspect["outputs"].as_array().unwrap())
            .find(|x| x["name"] == t["name"])
            .unwrap();
        assert_eq!(t["dtype"], same["dtype"]);
        assert_eq!(t["dtype_code"], same["dtype_code"]);
        assert_eq!(t["dtype"], "float16");
        assert_eq!(t["dtype_code"], 7, "nrt.h NRT_DTYPE_FLOAT16");
    }
}

#[test]
fn stdin_color_and_version() {
    use std::io::Write;
    use std::process::Stdio;
    let d = demo();
    let mut child = Command::new(env!("CARGO_BIN_EXE_neffld"))
        .args(["inspect", "--json", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&std::fs::read(&d).unwrap())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let v = json(&out);
    assert_eq!(v["file"], "<stdin>");
    assert_eq!(v["header"]["name"], "demo");
    // FAIL lines in colour when asked, plain when not; NO_COLOR only affects auto.
    let missing = "/nonexistent/x.neff";
    let coloured = stdout(&neffld(&["verify", "--color", "always", missing]));
    assert!(coloured.contains("\x1b[1;31mFAIL"), "{coloured:?}");
    let plain = stdout(&neffld(&["verify", "--color", "never", missing]));
    assert!(!plain.contains('\x1b'), "{plain:?}");
    let out = Command::new(env!("CARGO_BIN_EXE_neffld"))
        .args(["verify", missing])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(!stdout(&out).contains('\x1b'));
    let version = stdout(&neffld(&["--version"]));
    assert!(
        version.starts_with(&format!("neffld {} (commit ", env!("CARGO_PKG_VERSION"))),
        "{version}"
    );
    let help = stdout(&neffld(&["load", "--help"]));
    for want in [
        "Example:",
        "Exit status:",
        "--map <FILE.html>",
        "`-`: standard input",
    ] {
        assert!(help.contains(want), "{want}: {help}");
    }
}

/// Issue 14: a header whose `vnc_size` no runtime of the NEFF's
/// architecture serves passed `verify` and failed every `load`; both now
/// reject it, with the load's status.
#[test]
fn verify_rejects_what_load_rejects() {
    let dir = scratch("lnc228");
    let mut b = std::fs::read(fixture("matmul_small.neff")).unwrap();
    b[0x228..0x22C].copy_from_slice(&228u32.to_le_bytes());
    let f = dir.join("lnc228.neff");
    std::fs::write(&f, &b).unwrap();
    let load = neffld(&["load", "--json", f.to_str().unwrap()]);
    let verify = neffld(&["verify", "--json", f.to_str().unwrap()]);
    assert_eq!(load.status.code(), Some(1));
    assert_eq!(
        verify.status.code(),
        Some(1),
        "verify must fail as load does"
    );
    let (l, v) = (json(&load), json(&verify)["files"][0].clone());
    assert_eq!(l["status"], "NRT_INVALID");
    assert_eq!(v["status"], l["status"]);
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("vnc_size 228), which trn2 cannot take"),
        "{}",
        v["error"]
    );
}

/// `inspect` and `verify` show the payload's own MD5 (computed here from the
/// file's bytes), whether the header holds it plain, word-swapped (the real
/// fixtures) or not at all.
#[test]
fn integrity_shows_the_payloads_digest_in_every_outcome() {
    use neffld::container::integrity::{digest, HashAlgorithm};
    let d = scratch("digest");
    let real = std::fs::read(fixture("matmul_small.neff")).unwrap();
    let mut bad = real.clone();
    bad[0xAC] ^= 0xff; // the stored hash, so it matches in no form
    let plain = {
        let s = neffld_testkit::Synth::static_sunda();
        let mut w =
            neffld::container::writer::NeffWriter::new(neffld::container::writer::Producer::V2_21);
        w.digest_form = Some(neffld::container::integrity::DigestForm::Plain);
        w.write(&s.member_list())
    };
    for (name, bytes, result) in [
        ("real", &real, "word-swapped"),
        ("bad", &bad, "mismatch"),
        ("plain", &plain, "plain"),
    ] {
        let f = d.join(format!("{name}.neff"));
        std::fs::write(&f, bytes).unwrap();
        let size = u64::from_le_bytes(bytes[0x10..0x18].try_into().unwrap()) as usize;
        let want: String = digest(HashAlgorithm::Md5, &bytes[1024..1024 + size])[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        for cmd in ["inspect", "verify"] {
            let v = json(&neffld(&[cmd, "--json", f.to_str().unwrap()]));
            let i = if cmd == "verify" {
                &v["files"][0]["integrity"]
            } else {
                &v["integrity"]
            };
            assert_eq!(i["digest"], want.as_str(), "{cmd} {name}");
            assert_eq!(i["result"], result, "{cmd} {name}");
        }
    }
}

/// Issue 27: an architecture named by the environment is the instance's
/// for every command, as a real runtime's is (parse.md §3, the arch gate):
/// `load`, `verify` and `plan` give one verdict on a trn2 NEFF under
/// `NEFFLD_ARCH` — the same exit status, status and error — and a NEFF of
/// another architecture is refused unless `NEURON_RT_ALLOW_LEGACY_NEFF`.
#[test]
fn an_architecture_named_by_the_environment_gives_one_verdict_everywhere() {
    let f = fixture("matmul_small.neff");
    let f = f.to_str().unwrap();
    let run = |env: &[(&str, &str)], args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_neffld"))
            .env_remove("NEFFLD_INSTANCE")
            .envs(env.iter().copied())
            .args(args)
            .arg(f)
            .output()
            .expect("run neffld");
        let v = json(&out);
        (out.status.code(), v["status"].clone(), v["error"].clone())
    };
    type Env<'a> = &'a [(&'a str, &'a str)];
    let cases: [(Env, Option<i32>, &str); 4] = [
        // The header's vnc_size 2 is refused before the manifests are read:
        // trn1 takes logical-core size 1 only.
        (&[("NEFFLD_ARCH", "trn1")], Some(1), "NRT_INVALID"),
        (&[("NEFFLD_ARCH", "trn3")], Some(1), "NRT_INVALID"),
        (
            &[
                ("NEFFLD_ARCH", "trn3"),
                ("NEURON_RT_ALLOW_LEGACY_NEFF", "1"),
            ],
            Some(0),
            "NRT_SUCCESS",
        ),
        (&[("NEFFLD_ARCH", "trn2")], Some(0), "NRT_SUCCESS"),
    ];
    for (env, code, status) in cases {
        let load = run(env, &["load", "--json", "--quiet", "--device", "null"]);
        let verify = run(env, &["verify", "--json"]);
        let plan = run(env, &["plan", "--json"]);
        assert_eq!(
            (load.0, &load.1),
            (code, &json!(status)),
            "{env:?}: {load:?}"
        );
        assert_eq!(load, verify, "{env:?}: load and verify");
        assert_eq!(load, plan, "{env:?}: load and plan");
    }
    // The trn1 refusal names the size trn1 takes; the trn3 one is the
    // runtime's arch gate, naming both architectures by their ids.
    let (_, _, e) = run(&[("NEFFLD_ARCH", "trn1")], &["verify", "--json"]);
    let msg = e["message"].as_str().unwrap();
    assert!(
        msg.contains("which trn1 cannot take (it takes logical-core size 1)"),
        "{msg}"
    );
    let (_, _, e) = run(&[("NEFFLD_ARCH", "trn3")], &["plan", "--json"]);
    assert_eq!(e["stage"], "parse");
    let msg = e["message"].as_str().unwrap();
    assert!(
        msg.contains("NEFF arch: v3, instance arch: v4")
            && msg.contains("NEURON_RT_ALLOW_LEGACY_NEFF=1"),
        "{msg}"
    );
    // A flag still beats the variable.
    let out = Command::new(env!("CARGO_BIN_EXE_neffld"))
        .env("NEFFLD_ARCH", "trn3")
        .args([
            "load", "--json", "--quiet", "--device", "null", "--arch", "trn2", f,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(json(&out)["arch"], "trn2");
}

/// `pack` reads a tree as a load of its target reads it: a trn2 tree of
/// two subgraphs (one per physical core of a logical core of size 2, as
/// its `def.json` members say) packs without a warning that it does not
/// load, and the NEFF it writes verifies.
#[test]
fn a_tree_of_two_subgraphs_packs_without_a_false_warning() {
    let dir = scratch("pack-two");
    let f = fixture("kfusion__fused_attention__fused.neff");
    let tree = dir.join("tree");
    let out = neffld(&["extract", f.to_str().unwrap(), "-o", tree.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let defs = std::fs::read_dir(&tree)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().join("def.json").is_file())
        .count();
    assert_eq!(defs, 2, "the fixture has two subgraphs");
    let packed = dir.join("p.neff");
    let pack = |extra: &[&str]| {
        let mut args = vec!["pack", "--json", tree.to_str().unwrap(), "-o"];
        args.push(packed.to_str().unwrap());
        args.extend(extra);
        let v = json(&neffld(&args));
        assert_eq!(v["status_code"], 0, "{v}");
        v
    };
    let v = pack(&[]);
    assert_eq!(v["warnings"], json!([]), "{v}");
    let v = json(&neffld(&["verify", "--json", packed.to_str().unwrap()]));
    assert_eq!(v["status_code"], 0, "{v}");

    // A header that makes the tree unloadable at every logical-core size
    // (two subgraphs a core under vnc_size 1) is packed with a warning
    // naming the fault a load at that size meets; it was packed silently
    // and every load refused it.
    let v = pack(&["--header", "vnc_size=1"]);
    let w = v["warnings"].to_string();
    assert!(
        w.contains("the NEFF as packed does not load") && w.contains("2 subgraphs"),
        "{v}"
    );
    let v = json(&neffld(&["verify", "--json", packed.to_str().unwrap()]));
    assert_ne!(v["status_code"], 0, "{v}");
}

/// What the runtime warns of when it starts is in the load's report (the
/// CLI has no log subscriber, so a warning sent only to the log was
/// lost): `NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS` is deprecated on
/// 2.32 and without effect from 2.33, and no warning before 2.32.
#[test]
fn a_warning_of_the_runtime_start_is_in_the_load_report() {
    let run = |line: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_neffld"))
            .args([
                "load",
                "--json",
                "--runtime",
                line,
                demo().to_str().unwrap(),
            ])
            .env("NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS", "4")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        json(&out)["warnings"].to_string()
    };
    assert!(run("2.32").contains("implicit async mode is deprecated in runtime 2.32"));
    assert!(run("2.34").contains("no longer supported and the variable has no effect"));
    assert!(!run("2.31").contains("ASYNC"));
}

/// A captured line on a chip it was not captured on says so: 2.30 was
/// captured on trn2 only, so a trn1 load under it carries trn2's captures
/// over (its report claimed 2.30's own captures, nothing carried); 2.23 on
/// trn1, where it was captured, carries nothing over.
#[test]
fn a_line_captured_on_another_chip_says_so() {
    let demo = demo();
    let d = demo.to_str().unwrap();
    let text = String::from_utf8(neffld(&["load", "--runtime", "2.30", d]).stdout).unwrap();
    assert!(
        text.contains("2.30 has no capture on trn1: 2.30's captures (of trn2) carry over"),
        "{text}"
    );
    let v = json(&neffld(&["load", "--json", "--runtime", "2.30", d]));
    let p = &v["runtime_provenance"];
    assert_eq!(
        (p["captured_by"].as_str(), p["captured_on"].as_str()),
        (Some("2.30"), Some("trn2")),
        "{p}"
    );
    assert_ne!(p["carried_over"], json!([]), "{p}");
    let v = json(&neffld(&["load", "--json", "--runtime", "2.23", d]));
    let p = &v["runtime_provenance"];
    assert_eq!(
        (p["captured_on"].as_str(), &p["carried_over"]),
        (Some("trn1"), &json!([])),
        "{p}"
    );
}

/// A packed NEFF gets a uuid of its own (the runtime keys its parse cache
/// by it; every packed NEFF had the zero uuid): version 4 in form, the
/// same for the same tree, another for another tree; `--uuid` and
/// `--header uuid=` still set it.
#[test]
fn a_packed_neff_has_a_uuid_of_its_own() {
    let dir = scratch("pack-uuid");
    let tree = dir.join("tree");
    let f = fixture("matmul_small.neff");
    assert!(
        neffld(&["extract", f.to_str().unwrap(), "-o", tree.to_str().unwrap()])
            .status
            .success()
    );
    let uuid_of = |extra: &[&str]| {
        let out = dir.join("p.neff");
        let mut args = vec!["pack", tree.to_str().unwrap(), "-o", out.to_str().unwrap()];
        args.extend(extra);
        assert!(neffld(&args).status.success());
        let v = json(&neffld(&["inspect", "--json", out.to_str().unwrap()]));
        v["header"]["uuid"].as_str().unwrap().to_string()
    };
    let a = uuid_of(&[]);
    assert_ne!(a, "0".repeat(32));
    assert_eq!(&a[12..13], "4", "version 4: {a}");
    assert!("89ab".contains(&a[16..17]), "RFC 4122 variant: {a}");
    assert_eq!(uuid_of(&[]), a, "the same tree, the same uuid");
    std::fs::write(tree.join("extra.txt"), b"one more member").unwrap();
    assert_ne!(uuid_of(&[]), a, "another tree, another uuid");
    let given = "00112233445566778899aabbccddeeff";
    assert_eq!(uuid_of(&["--uuid", given]), given);
    let zero = "0".repeat(32);
    assert_eq!(uuid_of(&["--header", &format!("uuid={zero}")]), zero);
}

/// `load` under the newest line holds its row's start-up reservation (2.35's
/// 64 MiB per NeuronCore for DMA profiling) on the first physical core of
/// its logical core, under Profiler Buffers, beyond what 2.34 holds, and
/// its notes (text and `--json`) say why; `NEFFLD_DMA_PROFILING=0` leaves it
/// out. A line neffld does not model, such as SDK 2.34's unconfirmed 2.36,
/// is refused.
#[test]
fn load_notes_and_shows_the_newest_lines_start_up_reservation() {
    let f = fixture("matmul_large.neff");
    let reserved = neffld_testkit::reserved_per_logical_core(RuntimeLine::NEWEST)
        - neffld_testkit::reserved_per_logical_core(RuntimeLine::V2_34);
    let load = |args: &[&str], env: &[(&str, &str)]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_neffld"));
        c.args(["load", "--json", "--device", "null"])
            .args(args)
            .arg(&f);
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        json(&out)
    };
    let cores = |doc: &Value| -> Vec<(u64, u64, u64)> {
        doc["memory"]["cores"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let profiler = c["columns"]["profiler buffers"].as_u64().unwrap_or(0);
                (
                    c["pcore"].as_u64().unwrap(),
                    c["used"].as_u64().unwrap(),
                    profiler,
                )
            })
            .collect()
    };
    let (new, old) = (load(&[], &[]), load(&["--runtime", "2.34"], &[]));
    let (n, o) = (cores(&new), cores(&old));
    assert_eq!(n.len(), 2, "matmul_large at LNC 2: one logical core");
    assert_eq!((n[0].1 - o[0].1, n[1].1 - o[1].1), (reserved, 0));
    assert_eq!((n[0].2 - o[0].2, n[1].2 - o[1].2), (reserved, 0));
    let note = new["notes"][0].as_str().unwrap().to_string();
    assert!(note.contains("host-device DMA profiling"), "{note}");
    assert_eq!(old["notes"], json!([]));
    let text = stdout(&neffld(&["load", "--device", "null", f.to_str().unwrap()]));
    assert!(text.contains(&note), "{text}");
    let off = load(&[], &[("NEFFLD_DMA_PROFILING", "0")]);
    assert_eq!(cores(&off), o);
    assert!(off["notes"][0]
        .as_str()
        .unwrap()
        .contains("NEFFLD_DMA_PROFILING=0 leaves it out here"));
    let out = neffld(&["load", "--runtime", "2.36", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("'2.36'"), "{}", stderr(&out));
}

/// `NEURON_RT_VISIBLE_CORES=2`: the runtime numbers that core 0, and so do
/// `--start-core`, the report and its JSON; the report also says which
/// core of the device it is. On trn2 at LNC 2, logical core 2 is the
/// physical pair nc4, nc5 (logical core k pairs cores 2k and 2k + 1). The
/// report said "logical core 2" where `--start-core 2` was refused.
#[test]
fn visible_cores_are_numbered_from_0_and_named_on_the_device() {
    let small = fixture("matmul_small.neff");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_neffld"))
            .arg("load")
            .arg(&small)
            .args(args)
            .env("NEURON_RT_VISIBLE_CORES", "2")
            .env_remove("NEURON_RT_NUM_CORES")
            .env_remove("NEFFLD_ARCH")
            .env_remove("NEFFLD_INSTANCE")
            .output()
            .expect("run neffld")
    };
    for start in [None, Some("0")] {
        let args: Vec<&str> = start.map_or(vec![], |s| vec!["--start-core", s]);
        let mut with_json = args.clone();
        with_json.push("--json");
        let doc = json(&run(&with_json));
        assert_eq!(doc["status_code"], 0, "{doc}");
        assert_eq!(doc["model"]["vnc"], 0);
        assert_eq!(doc["model"]["instance_vnc"], 2);
        assert_eq!(doc["model"]["pcores"], json!([4, 5]));
        let mut text_args = args.clone();
        text_args.push("--no-timings");
        let text = stdout(&run(&text_args));
        let placed = text.lines().find(|l| l.starts_with("placed")).unwrap();
        assert!(
            placed.starts_with(
                "placed    logical core 0 -> physical nc4, nc5 (the device's logical core 2"
            ),
            "{placed}"
        );
    }
    // The device's number is not the runtime's: there is one visible core.
    let out = run(&["--start-core", "2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--start-core 2"), "{}", stderr(&out));
}

/// `neffld load` says what a load does not hold — the input and output
/// tensors a framework binds at execute — and the memory with them, the
/// figure `neffld plan` gives for the same NEFF. matmul_large's 4 GiB of
/// inputs and outputs went unsaid beside "fits: yes; 135.4 MiB used". The
/// tensors are checked against the compiler's own subgraph definitions
/// (each `sg*/def.json`'s input and output variables, by name).
#[test]
fn load_says_what_it_does_not_hold_and_the_figure_with_it() {
    let large = fixture("matmul_large.neff");
    let large = large.to_str().unwrap();
    let dir = scratch("io-tensors");
    let x = dir.join("x");
    assert!(neffld(&["extract", large, "-o", x.to_str().unwrap()])
        .status
        .success());
    let mut io_vars = std::collections::BTreeMap::new();
    for sg in std::fs::read_dir(&x).unwrap() {
        let def = sg.unwrap().path().join("def.json");
        let Ok(bytes) = std::fs::read(&def) else {
            continue;
        };
        let def: Value = serde_json::from_slice(&bytes).unwrap();
        for (name, v) in def["var"].as_object().unwrap() {
            if v["type"] == "input" || v["type"] == "output" {
                io_vars.insert(name.clone(), v["size"].as_u64().unwrap());
            }
        }
    }
    let expected = (io_vars.len(), io_vars.values().sum::<u64>());

    let load = json(&neffld(&["load", large, "--json"]));
    let io = &load["io_tensors"];
    assert_eq!(
        (
            io["count"].as_u64().unwrap() as usize,
            io["bytes"].as_u64().unwrap()
        ),
        expected
    );
    assert_eq!(
        (io["fits"].as_bool(), &io["error"]),
        (Some(true), &Value::Null)
    );
    let plan = json(&neffld(&["plan", large, "--json"]));
    let planned = &plan["memory"]["devices"][0]["hbms"][0];
    let with_io = &io["hbm"][0];
    assert_eq!(with_io["hbm"], 0);
    assert_eq!(
        (&with_io["used"], &with_io["free"]),
        (&planned["used"], &planned["free"]),
        "the load's figure with its inputs and outputs is the plan's"
    );
    let loaded_alone = load["memory"]["hbm"][0]["used"].as_u64().unwrap();
    assert!(with_io["used"].as_u64().unwrap() >= loaded_alone + expected.1);

    // In words, the plan's own words for that HBM.
    let text = String::from_utf8(neffld(&["load", "--no-timings", large]).stdout).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("io "))
        .expect("an io line");
    let plan_text = String::from_utf8(neffld(&["plan", large]).stdout).unwrap();
    let planned = plan_text
        .lines()
        .find_map(|l| l.strip_prefix("memory    ND 0 "))
        .expect("the plan's memory line");
    assert!(
        line.starts_with("io        not held by a load: 3 input and output tensors (4.0 GiB), bound at execute; with them ")
            && line.contains(planned),
        "{line}\n{planned}"
    );

    // Inputs larger than the HBM: the load fits, its inputs do not, and
    // the report says so with the runtime's refusal.
    let huge = dir.join("huge.neff");
    let mut synth = neffld_testkit::Synth::dynamic_cayman_n(1);
    synth.edit("sg00/def.json", |v| {
        v["var"]["q"]["size"] = json!(40u64 << 30)
    });
    // 10 Gi float32 elements.
    synth.edit("neff.json", |v| {
        v["attrs"]["shape"][1][0] = json!([10, 1u64 << 30])
    });
    let producer = neffld::container::writer::Producer::V2_21;
    let mut header = producer.default_header();
    header.feature_bits &= !neffld::container::header::FEATURE_VNC;
    let writer = neffld::container::writer::NeffWriter::with_header(producer, header);
    std::fs::write(&huge, writer.write(&synth.member_list())).unwrap();
    let huge = huge.to_str().unwrap();
    let doc = json(&neffld(&["load", huge, "--json"]));
    assert_eq!(doc["status_code"], 0, "{doc}");
    let io = &doc["io_tensors"];
    assert_eq!(
        (io["fits"].as_bool(), io["hbm"].as_array().map(Vec::len)),
        (Some(false), Some(0))
    );
    assert_eq!(io["error"]["status"], "NRT_RESOURCE", "{io}");
    let text = String::from_utf8(neffld(&["load", "--no-timings", huge]).stdout).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("io "))
        .expect("an io line");
    assert!(
        line.contains("(40.0 GiB), bound at execute, do not fit beside it: "),
        "{line}"
    );
}
