//! The `neffld` binary end to end on the real fixtures.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures")
        .join(name)
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
    let v = json(&out);
    assert_eq!(v["status_code"], 0);
    assert_eq!(v["header"]["uuid"], "00a04c53-5fd9-4f07-bffd-d5eacdefc852");
    assert_eq!(v["header"]["vnc_size"], 2);
    assert_eq!(v["integrity"]["matches"], "word-swapped");
    assert_eq!(v["archive"]["member_count"], 72);
    assert_eq!(v["archive"]["inflated_bytes"], 356864);
    assert_eq!(v["error"], Value::Null);
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
    let v = json(&out);
    assert_eq!(v["status_code"], 10);
    assert_eq!(v["status"], "NRT_UNSUPPORTED_NEFF_VERSION");
    assert!(v["error"]["message"]
        .as_str()
        .unwrap()
        .contains("NEFF version: 9.0 is not supported"));
    // The human form names the failure on stderr.
    let out = neffld(&["verify", f.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("NRT_UNSUPPORTED_NEFF_VERSION"));
}

#[test]
fn extract_then_pack_rebuilds_an_equivalent_neff() {
    let dir = scratch("roundtrip");
    let src = fixture("kfusion__fused_attention__fused.neff");
    let tree = dir.join("tree");
    assert!(
        neffld(&["extract", src.to_str().unwrap(), tree.to_str().unwrap()])
            .status
            .success()
    );
    assert!(Path::new(&tree).join("sg00/def.json").exists());
    let out_file = dir.join("re.neff");
    let out = neffld(&[
        "pack",
        tree.to_str().unwrap(),
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
    let a = json(&neffld(&["verify", "--json", src.to_str().unwrap()]));
    let b = json(&neffld(&["verify", "--json", out_file.to_str().unwrap()]));
    assert_eq!(b["status_code"], 0);
    assert_eq!(a["header"]["uuid"], b["header"]["uuid"]);
    assert_eq!(
        a["archive"]["inflated_bytes"],
        b["archive"]["inflated_bytes"]
    );
    assert_eq!(a["archive"]["members"], b["archive"]["members"]);
    // Other families pack too, and verify.
    for p in ["2.18", "2.0.99229", "pkg1"] {
        let f = dir.join(format!("{p}.neff"));
        assert!(neffld(&[
            "pack",
            tree.to_str().unwrap(),
            f.to_str().unwrap(),
            "--producer",
            p
        ])
        .status
        .success());
        let v = json(&neffld(&["verify", "--json", f.to_str().unwrap()]));
        assert_eq!(v["status_code"], 0, "{p}");
        assert_eq!(
            v["archive"]["member_count"], a["archive"]["member_count"],
            "{p}"
        );
    }
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
    let out = neffld(&["extract", f.to_str().unwrap(), out_dir.to_str().unwrap()]);
    assert!(out.status.success());
    assert!(out_dir.join("ok.txt").exists());
    assert!(!dir.join("evil.txt").exists());
    assert!(String::from_utf8_lossy(&out.stderr).contains("../evil.txt"));
}
