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

fn demo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo.neff")
}

/// One of a thing is singular, in every count the command prints.
#[test]
fn counts_of_one_are_singular() {
    let d = demo();
    let d = d.to_str().unwrap();
    let out = text(&neffld(&["verify", d]));
    assert!(out.contains("22 members, 1 subgraph)"), "{out}");
    assert!(out.contains("1 file: 1 ok"), "{out}");
    let dir = scratch("plural");
    let one = dir.join("one.neff");
    std::fs::write(&one, [0u8]).unwrap();
    let out = text(&neffld(&["inspect", one.to_str().unwrap()]));
    assert!(out.contains("1 byte") && !out.contains("1 bytes"), "{out}");
    let tree = dir.join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::write(tree.join("neff.json"), b"{}").unwrap();
    let out = neffld(&[
        "pack",
        tree.to_str().unwrap(),
        "-o",
        dir.join("p.neff").to_str().unwrap(),
    ]);
    assert!(text(&out).contains(": 1 member,"), "{}", text(&out));
    let out = text(&neffld(&["load", "--no-timings", d]));
    for wrong in [
        "1 subgraphs",
        "1 blocks",
        "1 descriptors",
        "1 cores",
        " 1 IO templates",
    ] {
        assert!(!out.contains(wrong), "{wrong}:\n{out}");
    }
}

/// The architecture is named both ways wherever a NEFF's target is shown.
#[test]
fn a_target_is_shown_by_both_its_names() {
    let d = demo();
    let out = text(&neffld(&["inspect", d.to_str().unwrap()]));
    assert!(out.contains("\ntarget      trn1 (sunda)\n"), "{out}");
    let doc = json(&neffld(&["inspect", "--json", d.to_str().unwrap()]));
    assert_eq!(
        (&doc["target"], &doc["arch"]),
        (&"sunda".into(), &"trn1".into())
    );
    let dir = scratch("names");
    let map = dir.join("m.html");
    neffld(&[
        "load",
        "--quiet",
        d.to_str().unwrap(),
        "--map",
        map.to_str().unwrap(),
    ]);
    let html = std::fs::read_to_string(map).unwrap();
    assert!(
        !html.contains("simulated sim"),
        "the device kind is said once"
    );
    assert!(html.contains("simulated trn1 device"), "{html}");
}

/// Usage errors exit 2 and say what was wrong with the command line.
#[test]
fn usage_errors_name_the_argument_and_exit_2() {
    let out = neffld(&["load", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let msg = json(&out)["error"]["message"].as_str().unwrap().to_string();
    assert!(msg.contains("<FILE>"), "{msg}");
    let d = demo();
    let out = neffld(&["load", "--start-core", "99", d.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let t = text(&out);
    assert!(t.contains("--start-core 99") && t.contains("0 to 1"), "{t}");
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/fixtures")
        .join(name)
}

/// One payload byte flipped where the gzip stream does not reach (its zero
/// padding), so every gate but the digest passes.
fn flipped(dir: &Path) -> PathBuf {
    let mut b = std::fs::read(fixture("matmul_small.neff")).unwrap();
    let last = b.len() - 10;
    assert_eq!(b[last], 0, "the padding after the gzip member");
    b[last] ^= 0xff;
    let f = dir.join("flipped.neff");
    std::fs::write(&f, &b).unwrap();
    f
}

/// `verify` is not ok for a corrupt file: a digest that does not match
/// fails it (exit 1) unless the user says to ignore the digest.
#[test]
fn verify_fails_a_digest_mismatch_unless_told_to_ignore_it() {
    let dir = scratch("verify-hash");
    let f = flipped(&dir);
    let f = f.to_str().unwrap();
    let out = neffld(&["verify", f]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("FAIL") && text(&out).contains("MD5 mismatch"),
        "{}",
        text(&out)
    );
    let doc = json(&neffld(&["verify", "--json", f]));
    assert_eq!(doc["files"][0]["integrity"]["checked"], true);
    assert_eq!(doc["files"][0]["status"], "NRT_INVALID");
    let out = neffld(&["verify", "--ignore-hash", f]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("md5 mismatch (ignored)"),
        "{}",
        text(&out)
    );
    // The sound file passes either way.
    let good = fixture("matmul_small.neff");
    assert!(neffld(&["verify", good.to_str().unwrap()]).status.success());
}

/// A stream is read as far as its header says: `verify -` of an endless
/// stream of zeros fails on the header's gates at once instead of reading
/// the stream to its end (it read 8 GB before running out of memory).
#[test]
fn a_stream_is_read_only_as_far_as_its_header_says() {
    use std::io::Write;
    const OFFERED: usize = 512 << 20;
    for args in [&["verify", "-"][..], &["inspect", "-"], &["load", "-"]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_neffld"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let writer = std::thread::spawn(move || {
            let block = vec![0u8; 1 << 20];
            let mut sent = 0;
            while sent < OFFERED && stdin.write_all(&block).is_ok() {
                sent += block.len();
            }
            sent
        });
        let out = child.wait_with_output().unwrap();
        let sent = writer.join().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", text(&out));
        assert!(
            text(&out).contains("Unsupported NEFF packager: 0"),
            "{}",
            text(&out)
        );
        assert!(sent < OFFERED, "{args:?} read all {sent} bytes offered");
    }
    // A character device is a stream too.
    let out = neffld(&["verify", "/dev/zero"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
}

/// A header's logical-core size the chip cannot take gets no advice to
/// configure the runtime for it: the message says what is wrong with the
/// file.
#[test]
fn lnc_advice_only_for_a_size_the_chip_takes() {
    let dir = scratch("lnc");
    let cases = [
        (
            Synth::dynamic_cayman(),
            Producer::V2_21,
            0u32,
            "no chip takes that size",
        ),
        (
            Synth::dynamic_cayman(),
            Producer::V2_21,
            u32::MAX,
            "no chip takes that size",
        ),
        (
            Synth::static_sunda(),
            Producer::V2_18,
            2,
            "recompile it for trn1 with `--lnc=1`",
        ),
    ];
    for (i, (synth, producer, vnc, says)) in cases.into_iter().enumerate() {
        let mut w = NeffWriter::new(producer);
        w.header.feature_bits |= neffld::container::header::FEATURE_VNC;
        w.header.vnc_size = vnc;
        let f = dir.join(format!("lnc{i}.neff"));
        std::fs::write(&f, w.write(&synth.member_list())).unwrap();
        let out = neffld(&["load", "--no-timings", f.to_str().unwrap()]);
        let t = text(&out);
        assert_eq!(out.status.code(), Some(1), "{t}");
        assert!(t.contains(says), "{vnc}: {t}");
        assert!(
            !t.contains(&format!("NEURON_LOGICAL_NC_CONFIG={vnc}")),
            "{t}"
        );
    }
}

/// Writes `s`'s members as a tree under `dir`.
fn write_tree(s: &Synth, dir: &Path) {
    for (name, bytes) in s.member_list() {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
}

/// A trn1 tree whose kelf json lists sg00 twice: `pack` still reads its
/// target (trn1, the 2.18 family) and names the fault; `load` names the
/// fault, not an architecture mismatch.
#[test]
fn a_duplicate_graph_is_named_as_the_first_fault() {
    let dir = scratch("dupgraph");
    let mut s = Synth::static_sunda();
    s.edit("kelf-0.json", |k| {
        let g = k["graphs"][0].clone();
        k["graphs"].as_array_mut().unwrap().push(g);
    });
    let tree = dir.join("tree");
    write_tree(&s, &tree);
    let out_neff = dir.join("dup.neff");
    let o = out_neff.to_str().unwrap();
    let out = neffld(&["pack", tree.to_str().unwrap(), "-o", o]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("Duplicate graph name sg00"), "{t}");
    assert!(!t.contains("could not be read"), "{t}");
    let doc = json(&neffld(&["inspect", "--json", o]));
    assert_eq!(
        doc["header"]["neff_version"], "1.0",
        "the trn1 family's header"
    );
    let out = neffld(&["load", "--no-timings", o]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("Duplicate graph name sg00"), "{t}");
    assert!(!t.contains("different arch"), "{t}");
}
