//! The command against hostile files and a hostile machine: names that try
//! to forge report lines, trees that hold FIFOs and symlinks, destinations
//! that lead elsewhere, streams that never end (issue 23's reproducers, each
//! a test that failed before its fix).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::{demo, fixture, json, neffld, scratch};
use neffld::container::writer::{NeffWriter, Producer};
use neffld::testkit::Synth;

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

/// `pack` takes regular files and directories: a FIFO (which used to hang
/// it) or a socket is refused by name; a symbolic link (whose target, say
/// /etc/passwd, used to be packed silently) is refused unless
/// `--follow-symlinks` asks for what it points to.
#[test]
fn pack_refuses_special_files_and_symlinks_by_name() {
    use std::os::unix::net::UnixListener;
    let dir = scratch("pack-special");
    let s = Synth::static_sunda();
    let out = |t: &Path| dir.join(format!("{}.neff", t.file_name().unwrap().to_string_lossy()));
    let pack = |tree: &Path, extra: &[&str]| {
        let o = out(tree);
        let mut args = vec!["pack", tree.to_str().unwrap(), "-o", o.to_str().unwrap()];
        args.extend_from_slice(extra);
        neffld(&args)
    };
    // A FIFO: refused at once. A thread stands by as its writer, so that a
    // pack that opened it for reading (it used to, and hang there) reads
    // an empty file instead of blocking this test.
    let fifo_tree = dir.join("fifo");
    write_tree(&s, &fifo_tree);
    let fifo = fifo_tree.join("sg00/pipe");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (fifo, done) = (fifo.clone(), done.clone());
        std::thread::spawn(move || {
            use std::os::unix::fs::OpenOptionsExt;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                // Succeeds only once a reader has the FIFO open.
                let w = std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(&fifo);
                drop(w);
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        })
    };
    let o = pack(&fifo_tree, &[]);
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("sg00/pipe") && text(&o).contains("FIFO"),
        "{}",
        text(&o)
    );
    assert!(!out(&fifo_tree).exists());
    // A socket.
    let sock_tree = dir.join("sock");
    write_tree(&s, &sock_tree);
    let _listener = UnixListener::bind(sock_tree.join("sg00/sock")).unwrap();
    let o = pack(&sock_tree, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("sg00/sock") && text(&o).contains("socket"),
        "{}",
        text(&o)
    );
    // A symbolic link to a file outside the tree.
    let link_tree = dir.join("link");
    write_tree(&s, &link_tree);
    let secret = dir.join("secret.txt");
    std::fs::write(&secret, b"outside").unwrap();
    std::os::unix::fs::symlink(&secret, link_tree.join("sg00/secret.bin")).unwrap();
    let o = pack(&link_tree, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("sg00/secret.bin") && t.contains("symbolic link"),
        "{t}"
    );
    assert!(t.contains("--follow-symlinks"), "{t}");
    let o = pack(&link_tree, &["--follow-symlinks"]);
    assert!(o.status.success(), "{}", text(&o));
    let packed = out(&link_tree);
    let x = dir.join("x-link");
    assert!(neffld(&[
        "extract",
        packed.to_str().unwrap(),
        "-o",
        x.to_str().unwrap()
    ])
    .status
    .success());
    assert_eq!(
        std::fs::read(x.join("sg00/secret.bin")).unwrap(),
        b"outside"
    );
    // A link to a directory above it: followed, it would never end.
    let loop_tree = dir.join("loop");
    write_tree(&s, &loop_tree);
    std::os::unix::fs::symlink("..", loop_tree.join("sg00/up")).unwrap();
    let o = pack(&loop_tree, &["--follow-symlinks"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("sg00/up"), "{}", text(&o));
}

/// `extract` creates files beneath its destination only: a symbolic link
/// in the way (here `sg00`, pointing outside) is refused by name, nothing
/// is written through it, and every other member is still written.
#[test]
fn extract_never_writes_through_a_symlink() {
    let dir = scratch("extract-link");
    let s = Synth::static_sunda();
    let neff = dir.join("demo.neff");
    std::fs::write(&neff, s.write(Producer::V2_18)).unwrap();
    let dest = dir.join("dest");
    let outside = dir.join("outside");
    std::fs::create_dir_all(&dest).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, dest.join("sg00")).unwrap();
    let planted = dir.join("planted.txt");
    std::fs::write(&planted, b"keep").unwrap();
    std::os::unix::fs::symlink(&planted, dest.join("info.json")).unwrap();
    let o = neffld(&[
        "extract",
        neff.to_str().unwrap(),
        "-o",
        dest.to_str().unwrap(),
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("symbolic link"), "{t}");
    assert_eq!(
        std::fs::read_dir(&outside).unwrap().count(),
        0,
        "nothing written outside"
    );
    assert_eq!(
        std::fs::read(&planted).unwrap(),
        b"keep",
        "no write through a link"
    );
    for top in ["neff.json", "kelf-0.json"] {
        assert!(dest.join(top).is_file(), "{top} still written: {t}");
    }
}

/// A member whose path runs through another member's file (`info.json/x`
/// beside `info.json`) is skipped with a warning; every other member is
/// written, before and after it.
#[test]
fn extract_goes_on_past_a_member_it_cannot_place() {
    let dir = scratch("extract-clash");
    let mut s = Synth::static_sunda();
    s.set("info.json/x", b"clash".to_vec());
    s.set("zz-last.bin", b"last".to_vec());
    let neff = dir.join("clash.neff");
    std::fs::write(&neff, s.write(Producer::V2_18)).unwrap();
    let dest = dir.join("dest");
    let o = neffld(&[
        "extract",
        "--json",
        neff.to_str().unwrap(),
        "-o",
        dest.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let doc = json(&o);
    let warnings = doc["warnings"].to_string();
    assert!(warnings.contains("info.json/x"), "{warnings}");
    let written = doc["members"].as_array().unwrap().len();
    assert_eq!(written, s.member_list().len() - 1, "all but the clash");
    assert_eq!(std::fs::read(dest.join("zz-last.bin")).unwrap(), b"last");
    assert!(dest.join("sg00/def.json").is_file());
}

/// Member names that are not UTF-8 are packed and extracted with their
/// exact bytes and shown escaped, never as U+FFFD.
#[test]
fn names_that_are_not_utf8_stay_exact() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let dir = scratch("raw-names");
    let tree = dir.join("tree");
    write_tree(&Synth::static_sunda(), &tree);
    let raw = OsStr::from_bytes(b"sg00/\xff\xferaw.bin");
    std::fs::write(tree.join(raw), b"raw").unwrap();
    let neff = dir.join("raw.neff");
    let o = neffld(&["pack", tree.to_str().unwrap(), "-o", neff.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let t = text(&neffld(&["inspect", neff.to_str().unwrap()]));
    assert!(t.contains("sg00/\\xff\\xferaw.bin"), "{t}");
    assert!(!t.contains('\u{fffd}'), "{t}");
    let doc = json(&neffld(&["inspect", "--json", neff.to_str().unwrap()]));
    let m = doc["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name_bytes"].is_string())
        .expect("the raw member carries its bytes");
    assert_eq!(m["name_bytes"], "736730302ffffe7261772e62696e");
    let x = dir.join("x");
    assert!(
        neffld(&["extract", neff.to_str().unwrap(), "-o", x.to_str().unwrap()])
            .status
            .success()
    );
    assert_eq!(std::fs::read(x.join(raw)).unwrap(), b"raw");
}

/// A `--map` that cannot be written costs the map, not the report: the
/// whole report is printed, the failure named, and the exit status is 2.
#[test]
fn an_unwritable_map_keeps_the_report() {
    let d = demo();
    let bad = "/nonexistent-dir/map.html";
    let out = neffld(&["load", "--no-timings", "--map", bad, d.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("status    NRT_SUCCESS (0)"), "{stdout}");
    assert!(stdout.contains("core nc0"), "{stdout}");
    assert!(String::from_utf8_lossy(&out.stderr).contains(bad));
    let out = neffld(&["load", "--json", "--map", bad, d.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let doc = json(&out);
    assert_eq!(doc["status"], "NRT_SUCCESS", "the load's own verdict");
    assert!(doc["cores"].is_array());
    assert!(doc["warnings"].to_string().contains(bad), "{doc}");
}
