//! `neffld load --dump` and `neffld compare` end to end on the real
//! fixtures and captures.

use std::path::PathBuf;
use std::process::{Command, Output};

use neffld::capture;
use neffld::container::{self, OpenOptions};
use neffld::kbin::isa::is_pseudo;
use neffld::manifest::{EngineType, ParseOptions};
use neffld::{parse, Arch};
use serde_json::Value;

use crate::common::{scratch, Scratch};

const STEM: &str = "kfusion__baseline_attention__baseline";

fn data(dir: &str, name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../../testdata/{dir}/{name}"))
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neffld"))
        .args(args)
        .output()
        .expect("run neffld")
}

fn stdout_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    k.sort_unstable();
    k
}

#[test]
fn dump_writes_each_image_and_a_device_json_that_describes_them() {
    let neff_path = data("fixtures", &format!("{STEM}.neff"));
    let dir = std::env::temp_dir().join(format!("neffld-dump-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // The capture's own line (2.30.51); the default, the newest, is checked below.
    let out = run(&[
        "load",
        neff_path.to_str().unwrap(),
        "--runtime",
        "2.30",
        "--start-core",
        "2",
        "--dump",
        dir.to_str().unwrap(),
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = stdout_json(&out);
    let dev: Value =
        serde_json::from_slice(&std::fs::read(dir.join("device.json")).unwrap()).unwrap();
    assert_eq!(
        keys(&dev),
        ["arch", "cores", "device", "runtime", "runtime_line"]
    );
    assert_eq!(dev["arch"], "trn2");
    assert_eq!(dev["runtime_line"], "2.30", "the line asked for");

    // The NEFF's own records, to check the main part of each image against.
    let bytes = std::fs::read(&neff_path).unwrap();
    let neff = container::open(&bytes, &OpenOptions::default()).unwrap();
    let parsed = parse::parse(&neff, &ParseOptions::new(Arch::Cayman, 2)).unwrap();

    // The real runtime's addresses for the same NEFF on the same cores.
    let ntff = std::fs::read(data("captures", &format!("{STEM}.ntff"))).unwrap();
    let real = capture::read(&ntff).unwrap();
    let real_addresses = |engine: EngineType| -> Vec<u64> {
        real.subgraphs
            .iter()
            .flat_map(|s| &s.images)
            .filter(|i| i.engine == engine)
            .map(|i| i.address)
            .collect()
    };

    let cores = dev["cores"].as_array().unwrap();
    assert_eq!(cores.len(), 2);
    for (i, core) in cores.iter().enumerate() {
        assert_eq!(
            keys(core),
            ["images", "memory", "pcore", "subgraph", "variables"]
        );
        // The same cores and images as the load report.
        assert_eq!(core["pcore"], report["cores"][i]["pcore"]);
        let sg = core["subgraph"].as_str().unwrap();
        let kbin = parsed.kbins.iter().find(|k| k.name() == sg).unwrap();
        let images = core["images"].as_array().unwrap();
        assert_eq!(images.len(), 5);
        for (j, img) in images.iter().enumerate() {
            assert_eq!(
                keys(img),
                [
                    "address",
                    "approximate_records",
                    "bytes",
                    "engine",
                    "exact",
                    "file",
                    "filler_slots",
                    "main_slots",
                    "postamble_slots",
                    "preamble_slots"
                ]
            );
            // 2.30's code is the runtime's bytes: nothing filler, nothing
            // approximate.
            assert_eq!(img["exact"], true);
            assert_eq!(img["filler_slots"], serde_json::json!([]));
            // One address form: the load report's, and the capture's — on
            // the captured core, or for pool and sp (the runtime's own race
            // between the two cores' builds, docs/decisions.md) on one of
            // the two.
            let address = img["address"].as_u64().unwrap();
            assert_eq!(report["cores"][i]["images"][j]["address"], address);
            let e = EngineType::from_key(img["engine"].as_str().unwrap()).unwrap();
            let captured = real
                .subgraphs
                .iter()
                .find(|s| s.name == core["subgraph"])
                .and_then(|s| s.images.iter().find(|im| im.engine == e))
                .unwrap()
                .address;
            if neffld::line::RACING_ENGINES.contains(&e) {
                assert!(real_addresses(e).contains(&address), "{e:?} {address:#x}");
            } else {
                assert_eq!(address, captured, "{e:?}");
            }
            let file = std::fs::read(dir.join(img["file"].as_str().unwrap())).unwrap();
            assert_eq!(file.len() as u64, img["bytes"].as_u64().unwrap());
            let slots = |k: &str| img[k].as_u64().unwrap() as usize;
            assert_eq!(
                (slots("preamble_slots") + slots("main_slots") + slots("postamble_slots")) * 64,
                file.len()
            );
            // Main part: every real NEFF record verbatim, in order; a label
            // gone; other pseudo records rewritten in place.
            let stream = kbin.engine(e).stream(neff.archive());
            let main = &file[slots("preamble_slots") * 64..][..slots("main_slots") * 64];
            let mut at = 0;
            for rec in stream.chunks(64) {
                if rec[0] == 0xCC {
                    continue;
                }
                if !is_pseudo(rec[0]) {
                    assert_eq!(&main[at..at + 64], rec, "{sg} {e:?} slot {}", at / 64);
                }
                at += 64;
            }
            assert_eq!(at, main.len(), "{sg} {e:?}");
        }
        let memory = core["memory"].as_array().unwrap();
        assert_eq!(memory.len(), 22);
        assert_eq!(keys(&memory[0]), ["bytes", "usage_type"]);
        assert_eq!(memory[1]["usage_type"], "Tensor Instructions");
        let weights = memory
            .iter()
            .find(|r| r["usage_type"] == "Weights")
            .unwrap();
        assert_eq!(weights["bytes"], 65536, "the capture's Weights row");
        let vars = core["variables"].as_array().unwrap();
        assert!(!vars.is_empty());
        assert_eq!(keys(&vars[0]), ["address", "kind", "name", "size"]);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The dump is the staged view of the load, whatever the device keeps: on
/// the null device, which keeps no bytes, it is the same files.
#[test]
fn dump_is_the_same_on_a_device_that_keeps_no_bytes() {
    let neff_path = data("fixtures", &format!("{STEM}.neff"));
    let dump = |device: &str| {
        let dir = std::env::temp_dir().join(format!("neffld-dump-{device}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let out = run(&[
            "load",
            neff_path.to_str().unwrap(),
            "--device",
            device,
            "--dump",
            dir.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect();
        files.sort();
        let _ = std::fs::remove_dir_all(&dir);
        files
    };
    let sim = dump("sim");
    assert_eq!(sim.len(), 11, "ten images and device.json");
    assert!(dump("null") == sim);
}

/// The shipped capture with sg00's pe image moved up one 32 KiB slot: a
/// disagreement the runtime's race cannot explain.
/// The capture with its PE image moved, written into a scratch directory
/// (returned with it, so that it lives as long as the path is used).
fn moved_capture() -> (Scratch, PathBuf) {
    let bytes = std::fs::read(data("captures", &format!("{STEM}.ntff"))).unwrap();
    let mut c = neffld::capture::read(&bytes).unwrap().into_owned();
    let pe = c.subgraphs[0]
        .images
        .iter_mut()
        .find(|i| i.engine == EngineType::Pe)
        .unwrap();
    pe.address += 0x8000;
    let dir = scratch("moved");
    let path = dir.join("moved.ntff");
    std::fs::write(&path, neffld::capture::writer::write(&c).unwrap()).unwrap();
    (dir, path)
}

#[test]
fn compare_reports_each_core_and_engine_and_exits_1_on_disagreement() {
    let neff = data("fixtures", &format!("{STEM}.neff"));
    let (_dir, cap) = moved_capture();
    let out = run(&[
        "compare",
        neff.to_str().unwrap(),
        cap.to_str().unwrap(),
        "--json",
    ]);
    let v = stdout_json(&out);
    assert_eq!(
        keys(&v),
        [
            "agrees",
            "capture",
            "command",
            "cores",
            "error",
            "file",
            "runtime_line",
            "schema_version",
            "status",
            "status_code",
            "summary"
        ]
    );
    assert_eq!(v["error"]["stage"], "compare");
    // The capture's runtime (field 8) is 2.30.51.
    assert_eq!(v["runtime_line"], "2.30");
    let summary = &v["summary"];
    assert_eq!(summary["images"], 10);
    assert_eq!(summary["records_equal"], 10);
    assert_eq!(summary["sizes_equal"], 10);
    assert_eq!(v["agrees"], false);
    let addresses: Vec<(&str, &str)> = v["cores"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["images"].as_array().unwrap())
        .map(|i| {
            (
                i["engine"].as_str().unwrap(),
                i["address"].as_str().unwrap(),
            )
        })
        .filter(|(_, a)| *a == "differs")
        .collect();
    assert_eq!(addresses, [("pe", "differs")], "the one moved image");
    assert_eq!(out.status.code(), Some(1));
    for core in v["cores"].as_array().unwrap() {
        assert_eq!(core["pcore_ours"], core["pcore_capture"]);
        for img in core["images"].as_array().unwrap() {
            let (o, c) = (&img["ours"], &img["capture"]);
            // The capture's sizes are the captured images'.
            assert_eq!(c["bytes"].as_u64().unwrap() % 64, 0);
            let n = |s: &Value, k: &str| s[k].as_u64().unwrap();
            assert_eq!(
                n(o, "rewritten") + n(o, "deleted"),
                n(c, "rewritten") + n(c, "deleted")
            );
            assert_eq!(
                n(c, "kept") + n(c, "rewritten") + n(c, "deleted"),
                img["records"].as_u64().unwrap()
            );
        }
        let rows = core["memory"].as_array().unwrap();
        let w = rows.iter().find(|r| r["usage_type"] == "Weights").unwrap();
        assert_eq!(w["equal"], true);
        let p = rows
            .iter()
            .find(|r| r["usage_type"] == "Profiler Buffers")
            .unwrap();
        assert_eq!(p["counted"], false);
    }
    let human = run(&["compare", neff.to_str().unwrap(), cap.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("sg00: physical core 4 (capture 4)"), "{text}");
    assert!(text.starts_with("runtime line 2.30\n"), "{text}");
    assert!(
        text.contains("images: records 10/10, sizes 10/10"),
        "{text}"
    );
    assert!(text.contains("Scalar Table"));
    assert_eq!(human.status.code(), Some(1));
    // The legend and the rows agree: the one differing row carries the `*`
    // the closing line explains.
    let differing: Vec<&str> = text.lines().filter(|l| l.ends_with("differs")).collect();
    assert_eq!(differing.len(), 1, "{text}");
    assert!(differing[0].trim_start().starts_with("pe") && differing[0].contains(" *"));
    assert!(text.contains("* marks"), "{text}");
}

/// A load under a line whose runtime bytes are partly unknown: `--dump`
/// says, image by image, which slots are filler, and the filler slots are
/// the marked ones.
#[test]
fn dump_names_the_filler_slots_of_an_older_line() {
    let demo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo.neff");
    let dir = std::env::temp_dir().join(format!("neffld-dump-2.27-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // demo.neff is a trn1 NEFF: its default line is 2.23.
    let out = run(&[
        "load",
        demo.to_str().unwrap(),
        "--runtime",
        "2.23.27",
        "--dump",
        dir.to_str().unwrap(),
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout_json(&out)["runtime"], "2.23");
    let dev: Value =
        serde_json::from_slice(&std::fs::read(dir.join("device.json")).unwrap()).unwrap();
    assert_eq!(dev["runtime_line"], "2.23");
    for img in dev["cores"][0]["images"].as_array().unwrap() {
        assert_eq!(img["exact"], false);
        let file = std::fs::read(dir.join(img["file"].as_str().unwrap())).unwrap();
        let mut listed = Vec::new();
        for r in img["filler_slots"].as_array().unwrap() {
            let (a, b) = (r[0].as_u64().unwrap(), r[1].as_u64().unwrap());
            listed.extend(a..b);
        }
        let marked: Vec<u64> = (0..file.len() as u64 / 64)
            .filter(|&s| file[s as usize * 64..].starts_with(b"\xffneffld?"))
            .collect();
        assert!(!listed.is_empty());
        assert_eq!(listed, marked, "{}", img["engine"]);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn compare_refuses_a_damaged_capture_with_its_status() {
    let neff = data("fixtures", &format!("{STEM}.neff"));
    let bad = std::env::temp_dir().join(format!("neffld-bad-{}.ntff", std::process::id()));
    let mut bytes = std::fs::read(data("captures", &format!("{STEM}.ntff"))).unwrap();
    bytes.truncate(0x90);
    std::fs::write(&bad, &bytes).unwrap();
    let out = run(&["compare", neff.to_str().unwrap(), bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("metadata") && err.contains("NRT_INVALID"),
        "{err}"
    );
    let _ = std::fs::remove_file(&bad);
}

/// `compare` on the ten shipped pairs exits 0: the five whose pool and sp
/// images came second core first say "raced" on those rows, and the
/// closing line says what that means; no row of an agreeing comparison says
/// "differs" or carries a `*`.
#[test]
fn compare_reports_the_documented_race_as_such_on_all_ten_pairs() {
    let mut raced = 0;
    for entry in std::fs::read_dir(data("captures", "")).unwrap() {
        let cap = entry.unwrap().path();
        if cap.extension().is_none_or(|e| e != "ntff") {
            continue;
        }
        let stem = cap.file_stem().unwrap().to_str().unwrap().to_string();
        let neff = data("fixtures", &format!("{stem}.neff"));
        let out = run(&["compare", neff.to_str().unwrap(), cap.to_str().unwrap()]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert_eq!(out.status.code(), Some(0), "{stem}:\n{text}");
        assert!(
            !text.contains("differs") && !text.contains(" *"),
            "{stem}:\n{text}"
        );
        let rows = text.lines().filter(|l| l.ends_with("  raced")).count();
        if rows > 0 {
            raced += 1;
            assert_eq!(rows, 4, "{stem}: pool and sp of both cores\n{text}");
            assert!(text.contains("raced:"), "the legend explains it:\n{text}");
        }
        let doc = stdout_json(&run(&[
            "compare",
            "--json",
            neff.to_str().unwrap(),
            cap.to_str().unwrap(),
        ]));
        let addresses: Vec<&str> = doc["cores"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| c["images"].as_array().unwrap())
            .map(|i| i["address"].as_str().unwrap())
            .collect();
        assert_eq!(
            addresses.iter().filter(|a| **a == "raced").count(),
            rows,
            "{stem}"
        );
    }
    assert_eq!(raced, 5);
}

/// A capture of another NEFF is refused before anything is compared.
#[test]
fn compare_refuses_a_capture_of_another_neff() {
    let neff = data("fixtures", "matmul_small.neff");
    let cap = data("captures", "kfusion__fused_attention__fused.ntff");
    let out = run(&["compare", neff.to_str().unwrap(), cap.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("the capture is of another NEFF"), "{err}");
    assert!(out.stdout.is_empty(), "no comparison is shown");
}
