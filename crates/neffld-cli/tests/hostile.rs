//! The command against hostile files and a hostile machine: names that try
//! to forge report lines, trees that hold FIFOs and symlinks, destinations
//! that lead elsewhere, streams that never end (issue 23's reproducers, each
//! a test that failed before its fix).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use neffld::container::writer::{NeffWriter, Producer};
use neffld::testkit::Synth;
use serde_json::Value;

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
    let d = std::env::temp_dir().join(format!("neffld-hostile-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The header name of the reproducer: a newline, a forged status
/// line and a colour escape.
const FORGED: &str = "evil\nstatus    NRT_SUCCESS (0)\x1b[32m";

/// The demo-like trn1 NEFF with [`FORGED`] as its header name and two more
/// members whose names carry a newline and an escape.
fn forged_neff(dir: &Path) -> PathBuf {
    let mut s = Synth::static_sunda();
    s.set("sg00/evil\nstatus    NRT_SUCCESS (0)", b"x".to_vec());
    s.set("sg00/\x1b[31mred\x1b[0m", b"y".to_vec());
    let mut w = NeffWriter::new(Producer::V2_18);
    w.header.set_name(FORGED);
    let path = dir.join("forged.neff");
    std::fs::write(&path, w.write(&s.member_list())).unwrap();
    path
}

/// No control character reaches a person: each line of every human output
/// is plain text, a name with a newline shows as `\n`, and no report gains
/// a second status line.
#[test]
fn control_characters_in_names_are_escaped_in_every_human_output() {
    let dir = scratch("escape");
    let f = forged_neff(&dir);
    let p = f.to_str().unwrap();
    let x = dir.join("x");
    let runs = [
        neffld(&["--color", "never", "inspect", p]),
        neffld(&["--color", "never", "load", "--no-timings", p]),
        neffld(&["--color", "never", "verify", p]),
        neffld(&["--color", "never", "extract", p, "-o", x.to_str().unwrap()]),
    ];
    for out in &runs {
        let t = text(out);
        assert!(
            !t.chars().any(|c| c.is_control() && c != '\n'),
            "a control character in:\n{t}"
        );
        assert!(
            t.lines().filter(|l| l.starts_with("status")).count() <= 1,
            "a forged status line:\n{t}"
        );
    }
    assert!(text(&runs[0]).contains("name        evil\\nstatus    NRT_SUCCESS (0)\\x1b[32m"));
    assert!(text(&runs[0]).contains("sg00/\\x1b[31mred\\x1b[0m"));
    assert!(text(&runs[1]).contains("\"evil\\nstatus    NRT_SUCCESS (0)\\x1b[32m\""));
    // JSON keeps the exact characters.
    let doc = json(&neffld(&["inspect", "--json", p]));
    assert_eq!(doc["header"]["name"], FORGED);
    let names: Vec<&str> = doc["members"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["name"].as_str())
        .collect();
    assert!(names.contains(&"sg00/evil\nstatus    NRT_SUCCESS (0)"));
}
