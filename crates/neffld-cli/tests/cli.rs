//! The `neffld` binary end to end on the real fixtures.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// The real fixtures, vendored under `testdata/fixtures`.
fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/fixtures")
}

fn fixture(name: &str) -> PathBuf {
    fixtures_dir().join(name)
}

fn neffld(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neffld"))
        .args(args)
        .output()
        .expect("run neffld")
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("neffld-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn verify_json_reports_the_real_file() {
    let f = fixture("matmul_small.neff");
    let out = neffld(&["verify", "--json", f.to_str().unwrap()]);
    assert!(out.status.success());
    let v = &json(&out)[0];
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
    let v = &json(&out)[0];
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
    assert_eq!(lines.len(), 2, "{text}");
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
    let a = json(&neffld(&["verify", "--json", src.to_str().unwrap()]))[0].clone();
    let b = json(&neffld(&["verify", "--json", out_file.to_str().unwrap()]))[0].clone();
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
        let v = json(&neffld(&["verify", "--json", f.to_str().unwrap()]))[0].clone();
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

fn demo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo.neff")
}

/// Compares with a committed snapshot; `NEFFLD_UPDATE_SNAPSHOTS=1` rewrites it.
fn snapshot(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(name);
    if std::env::var_os("NEFFLD_UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        expected == actual,
        "{name} differs from its snapshot:\n--- expected\n{expected}\n--- actual\n{actual}"
    );
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
            "hbm_bytes",
            "instructions",
            "descriptors",
            "templates",
            "scratchpad_pages",
        ] {
            assert!(c[k].is_u64(), "cores[].{k}: {c}");
        }
        assert!(c["hbm_bytes"].as_u64().unwrap() > 32768);
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
}

#[test]
fn load_for_the_wrong_arch_says_why() {
    let f = fixture("matmul_small.neff");
    let out = neffld(&["load", "--json", "--arch", "trn1", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let v = json(&out);
    assert_eq!(v["status_code"], 2);
    assert_eq!(v["status"], "NRT_INVALID");
    assert!(v["message"].as_str().unwrap().contains("--lnc=2"), "{v}");
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

#[test]
fn human_output_snapshots() {
    let d = demo();
    let out = neffld(&[
        "load",
        "--check",
        "--no-timings",
        "--quiet",
        d.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout)
        .unwrap()
        .replace(d.to_str().unwrap(), "examples/demo.neff");
    snapshot("load_demo.txt", &text);
    let out = neffld(&["inspect", d.to_str().unwrap()]);
    let text = String::from_utf8(out.stdout)
        .unwrap()
        .replace(d.to_str().unwrap(), "examples/demo.neff");
    snapshot("inspect_demo.txt", &text);
}

#[test]
fn map_writes_one_svg_per_core() {
    let dir = scratch("map");
    let html = dir.join("map.html");
    let f = fixture("matmul_small.neff");
    let out = neffld(&[
        "load",
        "--quiet",
        "--map",
        html.to_str().unwrap(),
        f.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert_eq!(page.matches("<svg").count(), 2);
    assert!(
        page.contains("<title>var identity_82_sg0000 (file) — address 0x"),
        "hover text"
    );
    assert!(page.matches("<rect").count() > 20);
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
    let (l, v) = (json(&load), json(&verify)[0].clone());
    assert_eq!(l["status"], "NRT_INVALID");
    assert_eq!(v["status"], l["status"]);
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("compiled with `--lnc=228`"),
        "{}",
        v["error"]
    );
}
