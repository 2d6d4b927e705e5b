//! The command against hostile files and a hostile machine: names that try
//! to forge report lines, trees that hold FIFOs and symlinks, destinations
//! that lead elsewhere, streams that never end (issue 23's reproducers, each
//! a test that failed before its fix).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::common::{demo, fixture, json, neffld, scratch};
use neffld::container::writer::{NeffWriter, Producer};
use neffld_testkit::Synth;

/// A FIFO at `path`.
fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: `c` is a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
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
    // Below -1 (the first free core) names no core either.
    let out = neffld(&["load", "--start-core", "-5", d.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let t = text(&out);
    assert!(t.contains("--start-core -5") && t.contains("0 to 1"), "{t}");
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
            "recompile it for trn1 with `neuronx-cc --target=trn1`",
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
    mkfifo(&fifo);
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

/// The static demo NEFF in `dir`, and a destination whose `sg00` is a
/// symbolic link to a folder outside it: (NEFF, destination, outside).
fn sg00_linked_outside(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let neff = dir.join("demo.neff");
    std::fs::write(&neff, Synth::static_sunda().write(Producer::V2_18)).unwrap();
    let dest = dir.join("dest");
    let outside = dir.join("outside");
    std::fs::create_dir_all(&dest).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, dest.join("sg00")).unwrap();
    (neff, dest, outside)
}

/// `extract` creates files beneath its destination only: a symbolic link
/// in the way (here `sg00`, pointing outside) is refused by name, nothing
/// is written through it, and every other member is still written.
#[test]
fn extract_never_writes_through_a_symlink() {
    let dir = scratch("extract-link");
    let (neff, dest, outside) = sg00_linked_outside(&dir);
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

/// A destination that refuses many members (every `sg00/` member, through
/// a link in the way) is one error naming how many and the first in full,
/// and at most five lines and a count on stderr: a read-only destination
/// gave one 9 KB message of 72 refusals.
#[test]
fn many_refused_members_are_counted_not_listed() {
    let dir = scratch("extract-many");
    let s = Synth::static_sunda();
    let in_sg00 = s
        .member_list()
        .iter()
        .filter(|(n, _)| n.starts_with("sg00/"))
        .count();
    assert!(in_sg00 > 6, "{in_sg00}");
    let (neff, dest, _) = sg00_linked_outside(&dir);
    let (n, d) = (neff.to_str().unwrap(), dest.to_str().unwrap());
    let o = neffld(&["extract", "--json", n, "-o", d]);
    assert_eq!(o.status.code(), Some(2));
    let doc = json(&o);
    let message = doc["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!(
            "{in_sg00} members not written; the first: member sg00/"
        )) && message.matches("not written under").count() == 1,
        "{message}"
    );
    let o = neffld(&["extract", n, "-o", d]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        err.lines()
            .filter(|l| l.contains("not written under"))
            .count(),
        5,
        "{err}"
    );
    assert!(
        err.contains(&format!("... and {} more members not written", in_sg00 - 5)),
        "{err}"
    );
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

// Issue 29: hostile inputs, round two.

/// The demo-like trn1 NEFF whose graph is named `graph`, written to `path`.
fn graph_named(graph: &str, path: &Path) -> PathBuf {
    let mut s = Synth::static_sunda();
    s.edit("kelf-0.json", |k| k["graphs"][0]["name"] = graph.into());
    std::fs::write(path, s.write(Producer::V2_18)).unwrap();
    path.to_path_buf()
}

/// Every file below `dir`, as paths.
fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() && !p.is_symlink() {
            out.extend(files_below(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Row 1: a graph named `../../ESCAPED` (or an absolute path) loads — the
/// runtime takes any label — but `--dump` refuses it before writing
/// anything, so nothing lands outside DIR and no file is overwritten.
#[test]
fn a_graph_name_never_leads_the_dump_outside_its_folder() {
    let dir = scratch("dump-escape");
    let dump = dir.join("out/dumpdir");
    let victim = dir.join("victim");
    std::fs::write(dir.join("victim_pe.bin"), b"keep").unwrap();
    for graph in ["../../ESCAPED", victim.to_str().unwrap()] {
        let f = graph_named(graph, &dir.join("escape.neff"));
        let f = f.to_str().unwrap();
        let out = neffld(&["verify", f]);
        assert!(out.status.success(), "{}", text(&out));
        for as_json in [false, true] {
            let mut args = vec!["load", "--no-timings", f, "--dump", dump.to_str().unwrap()];
            if as_json {
                args.push("--json");
            }
            let out = neffld(&args);
            let t = text(&out);
            assert_eq!(out.status.code(), Some(2), "{t}");
            assert!(t.contains("not a plain file name"), "{t}");
            if as_json {
                let doc = json(&out);
                assert_eq!(doc["error"]["stage"], "io", "{doc}");
            }
        }
    }
    let mut all = files_below(&dir);
    all.sort();
    assert_eq!(
        all,
        vec![dir.join("escape.neff"), dir.join("victim_pe.bin")],
        "nothing written beside or above the dump folder"
    );
    assert_eq!(std::fs::read(dir.join("victim_pe.bin")).unwrap(), b"keep");
    // A file of the dump that is a link to a victim is not written through.
    let f = graph_named("sg00", &dir.join("plain.neff"));
    std::fs::create_dir_all(&dump).unwrap();
    std::os::unix::fs::symlink(&victim, dump.join("sg00_pe.bin")).unwrap();
    std::fs::write(&victim, b"keep").unwrap();
    let out = neffld(&[
        "load",
        f.to_str().unwrap(),
        "--dump",
        dump.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
    // A dump folder that is a file is named as one (it said "File exists").
    let out = neffld(&["load", f.to_str().unwrap(), "--dump", "/dev/full", "--json"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let doc = json(&out);
    assert!(
        doc["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not a directory"),
        "{doc}"
    );
}

/// A NEFF whose raw tar (pkg_version 1) holds exactly `entries`.
fn raw_tar_neff(entries: &[neffld::container::writer::TarEntry], path: &Path) -> PathBuf {
    let mut tar = neffld::container::writer::tar_of(entries);
    tar.resize(tar.len().div_ceil(10240) * 10240, 0);
    std::fs::write(path, NeffWriter::new(Producer::Pkg1).finish(tar)).unwrap();
    path.to_path_buf()
}

/// A pax header naming the entry after it `name`, then that entry.
fn long_named(name: &[u8], body: &[u8]) -> [neffld::container::writer::TarEntry; 2] {
    use neffld::container::writer::{pax_record, TarEntry};
    let mut pax = TarEntry::file("PaxHeader/x", &pax_record("path", name));
    pax.typeflag = b'x';
    [pax, TarEntry::file("placeholder", body)]
}

/// Row 7: members named `d/` × 100,000 + `fN` (a 100,000-level tree, 45 s
/// each) and one 300 directories deep are skipped at once with a warning
/// each; the others are written.
#[test]
fn extract_bounds_member_paths() {
    use neffld::container::writer::TarEntry;
    let dir = scratch("deep");
    let mut entries = vec![TarEntry::file("ok.txt", b"fine")];
    for n in 0..3 {
        let name = format!("{}f{n}", "d/".repeat(100_000));
        entries.extend(long_named(name.as_bytes(), b"deep"));
    }
    entries.extend(long_named(
        format!("{}f", "a/".repeat(300)).as_bytes(),
        b"x",
    ));
    let f = raw_tar_neff(&entries, &dir.join("deep.neff"));
    let out_dir = dir.join("out");
    let out = neffld(&[
        "extract",
        f.to_str().unwrap(),
        "-o",
        out_dir.to_str().unwrap(),
        "--json",
    ]);
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(0), "{doc}");
    let warnings = doc["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 4, "{doc}");
    let says = |what: &str| {
        warnings
            .iter()
            .filter(|w| w.as_str().unwrap().contains(what))
            .count()
    };
    let long = "bytes, more than the 4096 (PATH_MAX) extract creates";
    assert_eq!(says(long), 3, "{doc}");
    let deep = "has 301 components, more than the 256 extract creates";
    assert_eq!(says(deep), 1, "{doc}");
    // A long name is shown by its start and length, not whole.
    assert!(warnings[0].as_str().unwrap().len() < 400, "{doc}");
    assert_eq!(doc["members"], serde_json::json!(["ok.txt"]));
    assert!(!out_dir.join("d").exists() && !out_dir.join("a").exists());
}

/// Row 12: link, hard-link, device and FIFO members are skipped with a
/// warning naming each, not written as empty regular files.
#[test]
fn extract_skips_special_members_by_name() {
    use neffld::container::writer::TarEntry;
    let dir = scratch("special-members");
    let mut entries = vec![TarEntry::file("ok.txt", b"fine")];
    for (name, flag) in [
        ("hard", b'1'),
        ("link", b'2'),
        ("chr", b'3'),
        ("blk", b'4'),
        ("fifo", b'6'),
    ] {
        let mut e = TarEntry::file(name, b"");
        e.typeflag = flag;
        entries.push(e);
    }
    let f = raw_tar_neff(&entries, &dir.join("special.neff"));
    let out_dir = dir.join("out");
    let out = neffld(&[
        "extract",
        f.to_str().unwrap(),
        "-o",
        out_dir.to_str().unwrap(),
        "--json",
    ]);
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(0), "{doc}");
    assert_eq!(doc["members"], serde_json::json!(["ok.txt"]));
    let warnings: Vec<&str> = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    for (name, kind) in [
        ("hard", "a hard link"),
        ("link", "a symbolic link"),
        ("chr", "a character device"),
        ("blk", "a block device"),
        ("fifo", "a FIFO"),
    ] {
        assert!(
            warnings
                .iter()
                .any(|w| w.contains(&format!("member {name}: it is {kind}"))),
            "{name}: {warnings:?}"
        );
        assert!(!out_dir.join(name).exists(), "{name} was written");
    }
    // The human report names them on stderr too.
    let out = neffld(&[
        "extract",
        f.to_str().unwrap(),
        "-o",
        out_dir.to_str().unwrap(),
    ]);
    assert!(
        text(&out).contains("member fifo: it is a FIFO"),
        "{}",
        text(&out)
    );
}

/// A trn2 tree whose one weight is `bytes` of noise: a payload that does
/// not compress.
fn noise_synth(bytes: usize) -> Synth {
    use neffld_testkit::{noise, npy_v1};
    let mut synth = Synth::cayman_weights(1, 4);
    synth.set(
        "sg00/value_sg0000_w_CRSM.npy",
        npy_v1("<f4", &[bytes as u64 / 4], &noise(bytes)),
    );
    synth
}

/// Row 2: a large NEFF cut short by another process while `inspect`,
/// `extract`, `plan` (and `compare`, `load`, `verify`) have it mapped ends
/// the command with exit status 2 and its one JSON error, never a kill by
/// SIGBUS. The cut races the command, so each command is tried with a few
/// delays until one lands while the file is mapped.
#[test]
fn a_file_shortened_while_mapped_is_an_io_failure_for_every_command() {
    use neffld_testkit::lnc_writer;
    let dir = scratch("shortened");
    let synth = noise_synth(256 << 20);
    let mut w = lnc_writer(1);
    w = NeffWriter::with_header(Producer::Pkg1, w.header.clone());
    let bytes = w.write(&synth.member_list());
    drop(synth);
    let f = dir.join("big.neff");
    let p = f.to_str().unwrap().to_string();
    let x = dir.join("x");
    let plan_arg = format!("{p}@0");
    let runs: [Vec<&str>; 3] = [
        vec!["inspect", "--json", &p],
        vec!["extract", "--json", &p, "-o", x.to_str().unwrap()],
        vec!["plan", "--json", "--lnc", "1", &plan_arg],
    ];
    for args in &runs {
        let mut hit = false;
        for delay_ms in [20u64, 60, 150, 300, 600, 1000] {
            std::fs::write(&f, &bytes).unwrap();
            let child = Command::new(env!("CARGO_BIN_EXE_neffld"))
                .args(args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            std::thread::sleep(std::time::Duration::from_millis(delay_ms));
            std::fs::OpenOptions::new()
                .write(true)
                .open(&f)
                .unwrap()
                .set_len(8192)
                .unwrap();
            let out = child.wait_with_output().unwrap();
            let code = out.status.code();
            assert!(
                code.is_some(),
                "{args:?} killed by a signal: {:?}",
                out.status
            );
            let doc = json(&out);
            let message = doc["error"]["message"].as_str().unwrap_or_default();
            if message.contains("shortened by another process") {
                assert_eq!(code, Some(2), "{args:?}: {doc}");
                assert_eq!(doc["error"]["stage"], "io", "{doc}");
                hit = true;
                break;
            }
        }
        assert!(hit, "{args:?}: no attempt cut the file while it was mapped");
        let _ = std::fs::remove_dir_all(&x);
    }
}

/// `neffld ARGS` with `vars` set.
fn neffld_env(args: &[&str], vars: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neffld"))
        .args(args)
        .envs(vars.iter().copied())
        .output()
        .unwrap()
}

/// Row 10: `NEFFLD_MAX_MEMBERS` is one limit for every command (`inspect`
/// and `extract` ignored it), and `pack` keeps the format of the tree's
/// target whatever the ceiling, saying when a load would refuse the file.
#[test]
fn the_member_ceiling_is_one_limit_for_every_command() {
    let dir = scratch("members");
    let s = Synth::static_sunda();
    let count = s.member_list().len();
    let f = dir.join("m.neff");
    std::fs::write(&f, s.write(Producer::V2_18)).unwrap();
    let p = f.to_str().unwrap();
    let low = [("NEFFLD_MAX_MEMBERS", "3")];
    let x = dir.join("x");
    for args in [
        vec!["inspect", "--json", p],
        vec!["verify", "--json", p],
        vec!["extract", "--json", p, "-o", x.to_str().unwrap()],
    ] {
        let out = neffld_env(&args, &low);
        let doc = json(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {doc}");
        assert!(
            doc["error"]["message"].as_str().unwrap().contains('3'),
            "{doc}"
        );
        let out = neffld_env(&args, &[("NEFFLD_MAX_MEMBERS", "300000")]);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out));
    }
    assert!(!x.join("neff.json").exists() || x.join("neff.json").is_file());
    let tree = dir.join("tree");
    write_tree(&s, &tree);
    let o = dir.join("packed.neff");
    let out = neffld_env(
        &[
            "pack",
            tree.to_str().unwrap(),
            "-o",
            o.to_str().unwrap(),
            "--json",
        ],
        &low,
    );
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(0), "{doc}");
    assert_eq!(doc["target"], "sunda", "{doc}");
    assert!(
        doc["warnings"]
            .to_string()
            .contains(&format!("holds {count} members, more than the 3")),
        "{doc}"
    );
    let doc = json(&neffld(&["inspect", "--json", o.to_str().unwrap()]));
    assert_eq!(
        doc["header"]["neff_version"], "1.0",
        "the trn1 family: {doc}"
    );
}

/// `neffld ARGS` under a 2 GiB address-space limit, killed after `secs`
/// (exit status 124: it did not end by itself).
fn bounded(args: &[&str], secs: u64) -> Output {
    limited(2_097_152, args, secs)
}

/// `neffld ARGS` under an address-space limit of `kib` KiB, killed after
/// `secs` (exit status 124).
fn limited(kib: u64, args: &[&str], secs: u64) -> Output {
    let script = format!("ulimit -v {kib}; exec \"$@\"");
    Command::new("timeout")
        .arg(secs.to_string())
        .args(["sh", "-c", &script, "sh", env!("CARGO_BIN_EXE_neffld")])
        .args(args)
        .output()
        .unwrap()
}

/// Issue 40 row 2: an 82-byte deployment file of 64 cores × `repeat =
/// 16384` (1,048,576 steps, the default ceiling then) planned for 149 s in
/// 9.8 GB and aborted under a 1.5 GB limit, with nothing on stdout. The
/// default ceiling is now 262,144 steps, which a 16 GiB host plans within
/// (docs/performance.md), so that file is refused before anything runs;
/// and a plan that outgrows the host stops between two steps with
/// `NRT_FAIL_HOST_MEM_ALLOC`, saying how far it got.
#[test]
fn a_plan_that_outgrows_the_host_is_a_clean_error() {
    let dir = scratch("plan-memory");
    let neff = fixture("matmul_small.neff");
    let toml = dir.join("d.toml");
    let write = |repeat: u32| {
        let text = format!(
            "instance = \"trn2.48xlarge\"\n[[step]]\nload = \"{}\"\ncores = \"0-63\"\nrepeat = {repeat}\n",
            neff.display()
        );
        std::fs::write(&toml, text).unwrap();
    };
    write(16_384);
    let out = limited(1_500_000, &["plan", "--json", toml.to_str().unwrap()], 60);
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(2), "{doc}");
    let message = doc["error"]["message"].as_str().unwrap();
    assert!(message.contains("more than 262144 steps"), "{message}");
    // Within the ceiling, on a host of 600 MB: a plan the host cannot hold.
    write(4_096);
    let out = limited(600_000, &["plan", "--json", toml.to_str().unwrap()], 600);
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(1), "{doc}");
    assert_eq!(doc["error"]["status"], "NRT_FAIL_HOST_MEM_ALLOC", "{doc}");
    assert_eq!(doc["error"]["stage"], "neffld", "{doc}");
    let message = doc["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("of 262144 steps") && message.contains("host memory"),
        "{message}"
    );
}

/// Issue 40 row 1: a def.json whose `src_target_pairs` holds 64 million
/// elements (128 MB inflated; the had 115 million) made `inspect`,
/// `verify` and `load` hold every element as a JSON value and abort under
/// the 2 GiB limit (exit 134, no JSON); each now refuses it cleanly, naming
/// the member and neffld's ceiling, with `NRT_INVALID`.
#[test]
fn a_manifest_of_millions_of_values_is_refused_under_a_memory_limit() {
    let dir = scratch("values");
    let mut s = Synth::static_sunda();
    s.set_long_array("sg00/def.json", "src_target_pairs", "0", 64 << 20);
    let f = dir.join("pairs.neff");
    std::fs::write(&f, s.write(Producer::V2_18)).unwrap();
    drop(s);
    for command in ["inspect", "verify", "load"] {
        let out = bounded(&[command, "--json", f.to_str().unwrap()], 120);
        let doc = json(&out);
        assert_eq!(out.status.code(), Some(1), "{command}: {doc}");
        let problem = &doc["error"];
        assert_eq!(problem["status"], "NRT_INVALID", "{command}: {doc}");
        let message = problem["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with("sg00/def.json holds more than 2097152 JSON values")
                && message.contains("neffld's own ceiling"),
            "{command}: {message}"
        );
    }
}

/// Row 3: a 2.3 KB deployment file of forty `cores = "0-65535"`,
/// `repeat = 16` steps (27 s and 3 GB, then a late failure) is refused
/// before anything is expanded, naming the ceiling and its variable;
/// command-line loads count against the same ceiling.
#[test]
fn a_deployment_is_refused_before_it_expands_past_the_ceiling() {
    let dir = scratch("expand");
    let demo = demo();
    let step = format!(
        "[[step]]\nload = \"{}\"\ncores = \"0-65535\"\nrepeat = 4\n",
        demo.display()
    );
    let toml = dir.join("big.toml");
    std::fs::write(&toml, step.repeat(80)).unwrap();
    let out = bounded(&["plan", "--json", toml.to_str().unwrap()], 60);
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(2), "{doc}");
    let message = doc["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("more than 262144 steps") && message.contains("NEFFLD_MAX_STEPS"),
        "{message}"
    );
    assert!(
        message.contains("(step 2)"),
        "the first step fits alone: {message}"
    );
    // The command line's loads and tensors count too.
    let load = format!("{}@0-65535", demo.display());
    let mut args = vec!["plan", "--json"];
    args.extend(std::iter::repeat_n(load.as_str(), 17));
    let out = bounded(&args, 60);
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(2), "{doc}");
    assert!(doc["error"]["message"]
        .as_str()
        .unwrap()
        .contains("NEFFLD_MAX_STEPS"));
    // A lower ceiling by the variable.
    let out = neffld_env(
        &["plan", "--json", &format!("{}@0-3", demo.display())],
        &[("NEFFLD_MAX_STEPS", "2")],
    );
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(2), "{doc}");
    assert!(doc["error"]["message"]
        .as_str()
        .unwrap()
        .contains("more than 2 steps"));
}

/// Row 4: a stream whose header declares 2^40 payload bytes, followed by
/// zeros, is refused at once by the stream ceiling (it grew without end).
#[test]
fn a_stream_declaring_a_huge_payload_is_refused_at_once() {
    use std::io::Write;
    let neff = NeffWriter::new(Producer::V2_18).write(&Synth::static_sunda().member_list());
    let mut header = neff[..1024].to_vec();
    // data_size: the u64 at offset 16 of the header.
    header[16..24].copy_from_slice(&(1u64 << 40).to_le_bytes());
    for vars in [vec![], vec![("NEFFLD_MAX_NEFF_SIZE", "1048576")]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_neffld"))
            .args(["inspect", "-", "--json"])
            .envs(vars.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let h = header.clone();
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(&h);
            let block = vec![0u8; 1 << 20];
            let mut sent = 0usize;
            while sent < (256 << 20) && stdin.write_all(&block).is_ok() {
                sent += block.len();
            }
            sent
        });
        let out = child.wait_with_output().unwrap();
        let sent = writer.join().unwrap();
        let doc = json(&out);
        assert_eq!(out.status.code(), Some(2), "{doc}");
        let message = doc["error"]["message"].as_str().unwrap();
        assert!(message.contains("NEFFLD_MAX_NEFF_SIZE"), "{message}");
        assert!(message.contains("1099511627776"), "{message}");
        assert!(sent < 256 << 20, "read {sent} bytes");
    }
}

/// Row 5: `plan` refuses a NEFF or a deployment file that is not a
/// regular file (a device or a pipe that never ends) before reading it
/// (issue 40 row 7: naming what it is); `-` is named.
#[test]
fn plan_reads_every_file_through_the_bounded_reader() {
    let dir = scratch("plan-streams");
    let zero_link = dir.join("dep.toml");
    std::os::unix::fs::symlink("/dev/zero", &zero_link).unwrap();
    let device = "not a regular file: this is a device";
    for (args, says) in [
        (vec!["plan", "--json", "/dev/urandom@0"], device),
        (vec!["plan", "--json", "/dev/zero@0"], device),
        (vec!["plan", "--json", "/dev/full@0"], device),
        (vec!["plan", "--json", zero_link.to_str().unwrap()], device),
        (vec!["plan", "--json", "-"], "standard input"),
    ] {
        let out = bounded(&args, 60);
        assert!(out.status.code().is_some(), "{args:?}: {:?}", out.status);
        let doc = json(&out);
        assert_ne!(out.status.code(), Some(0), "{args:?}: {doc}");
        assert_ne!(out.status.code(), Some(124), "{args:?}: timed out");
        assert!(
            doc["error"]["message"].as_str().unwrap().contains(says),
            "{doc}"
        );
    }
    // A pipe that never ends (`<(yes)`).
    let mut yes = Command::new("yes").stdout(Stdio::piped()).spawn().unwrap();
    let fd = {
        use std::os::fd::AsRawFd;
        yes.stdout.as_ref().unwrap().as_raw_fd()
    };
    let arg = format!("/proc/{}/fd/{fd}@0", std::process::id());
    let out = bounded(&["plan", "--json", &arg], 60);
    let _ = yes.kill();
    let _ = yes.wait();
    assert!(out.status.code().is_some(), "{:?}", out.status);
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(2), "{doc}");
    assert!(
        doc["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not a regular file: this is a FIFO"),
        "{doc}"
    );
}

/// Row 9: a profiler buffer whose MiB overflow 64 bits is refused naming
/// the variable (17592186044416 MiB wrapped to 0 bytes and "fitted").
#[test]
fn a_profiler_buffer_that_wraps_is_refused() {
    let load = format!("{}@0", demo().display());
    for big in ["17592186044416", "17592186044417"] {
        let env = format!("NEURON_RT_PROFILE_BUF_EVENT_MB={big}");
        let out = neffld(&["plan", "--json", "--env", &env, &load]);
        let doc = json(&out);
        assert_eq!(out.status.code(), Some(2), "{doc}");
        let m = doc["error"]["message"].as_str().unwrap();
        assert!(
            m.contains("NEURON_RT_PROFILE_BUF_EVENT_MB") && m.contains(big),
            "{m}"
        );
        let out = neffld_env(
            &["load", "--json", "--no-timings", demo().to_str().unwrap()],
            &[("NEURON_RT_PROFILE_BUF_EVENT_MB", big)],
        );
        // A load refuses a bad variable as it refuses any (stage config).
        let doc = json(&out);
        assert_eq!(doc["error"]["stage"], "config", "{doc}");
        let m = doc["error"]["message"].as_str().unwrap();
        assert!(
            m.contains("NEURON_RT_PROFILE_BUF_EVENT_MB") && m.contains(big),
            "{m}"
        );
    }
}

/// Row 14: small items, each naming the value given and the rule.
#[test]
fn small_mistakes_name_the_value_and_the_rule() {
    let demo = demo();
    let d = demo.to_str().unwrap();
    // A core beyond nrt_load's int32 is named as given.
    let doc = json(&neffld(&["plan", "--json", &format!("{d}@4294967295")]));
    let m = doc["error"]["message"].as_str().unwrap();
    assert!(
        m.contains("4294967295") && !m.contains("2147483647 "),
        "{m}"
    );
    assert!(m.contains("beyond the largest"), "{m}");
    // A page size is echoed as given (2^63 MiB was shown as 2^64-1 bytes).
    let out = neffld(&[
        "plan",
        "--json",
        "--env",
        "NEURON_SCRATCHPAD_PAGE_SIZE=9223372036854775808",
        &format!("{d}@0"),
    ]);
    let m = json(&out)["error"]["message"].as_str().unwrap().to_string();
    assert!(m.contains("9223372036854775808 MiB"), "{m}");
    assert!(!m.contains("18446744073709551615"), "{m}");
    // A deployment file's size keeps the reason the command line gives.
    let dir = scratch("small-items");
    let toml = dir.join("size.toml");
    std::fs::write(
        &toml,
        format!("[[step]]\nload = \"{d}\"\ncores = 0\n[[step]]\ntensor = \"kv\"\nsize = \"15.99GiB\"\ncores = 0\n"),
    )
    .unwrap();
    let cli = json(&neffld(&[
        "plan",
        "--json",
        &format!("{d}@0"),
        "--tensor",
        "kv=15.99GiB@0",
    ]));
    let file = json(&neffld(&["plan", "--json", toml.to_str().unwrap()]));
    let (cli, file) = (
        cli["error"]["message"].as_str().unwrap().to_string(),
        file["error"]["message"].as_str().unwrap().to_string(),
    );
    let reason = cli.rsplit(": ").next().unwrap();
    assert!(file.contains(reason), "{file} / {cli}");
    // `--json=true` still gets its one JSON document.
    let out = neffld(&["inspect", d, "--json=true"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(json(&out)["error"]["stage"], "usage");
}

/// Row 11: `pack D -o D/self.neff` twice: the second NEFF does not hold
/// the first (the output is left out of the walk, with a warning).
#[test]
fn pack_leaves_its_own_output_out_of_the_walk() {
    let dir = scratch("pack-self");
    let s = Synth::static_sunda();
    let tree = dir.join("tree");
    write_tree(&s, &tree);
    let out = tree.join("self.neff");
    let o = out.to_str().unwrap();
    let t = tree.to_str().unwrap();
    for round in 0..2 {
        let run = neffld(&["pack", t, "-o", o, "--json"]);
        let doc = json(&run);
        assert_eq!(run.status.code(), Some(0), "{doc}");
        assert_eq!(
            doc["members"],
            s.member_list().len(),
            "round {round}: {doc}"
        );
        if round == 1 {
            assert!(
                doc["warnings"].to_string().contains("left out self.neff"),
                "{doc}"
            );
        }
    }
    let doc = json(&neffld(&["inspect", "--json", o]));
    let names = doc["members"].to_string();
    assert!(!names.contains("self.neff"), "{names}");
}

/// Row 13: a header field that does not fit is refused, not cut; a
/// version `verify` would refuse is refused at pack time.
#[test]
fn pack_refuses_header_fields_that_do_not_fit() {
    let dir = scratch("pack-header");
    let s = Synth::static_sunda();
    let tree = dir.join("tree");
    write_tree(&s, &tree);
    let t = tree.to_str().unwrap();
    let o = dir.join("o.neff");
    let o = o.to_str().unwrap();
    let long_name = "n".repeat(300);
    let long_build = format!("build_version={}", "b".repeat(200));
    for (args, code, says) in [
        (vec!["--name", long_name.as_str()], 2, "a name of 300 bytes"),
        (
            vec!["--header", long_build.as_str()],
            2,
            "a build_version of 200 bytes",
        ),
        (
            vec!["--header", "version=99999.99999"],
            1,
            "would not pass verify",
        ),
    ] {
        let mut all = vec!["pack", t, "-o", o, "--json"];
        all.extend(args.iter().copied());
        let out = neffld(&all);
        let doc = json(&out);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {doc}");
        assert!(
            doc["error"]["message"].as_str().unwrap().contains(says),
            "{doc}"
        );
        assert!(!Path::new(o).exists(), "{args:?} wrote the file");
    }
    // What fits is packed whole.
    let name = "n".repeat(255);
    let out = neffld(&["pack", t, "-o", o, "--name", &name]);
    assert!(out.status.success(), "{}", text(&out));
    let doc = json(&neffld(&["inspect", "--json", o]));
    assert_eq!(doc["header"]["name"], name.as_str());
}

/// A report that cannot be written is the command's failure: on a full
/// disk (`/dev/full`) every command exits 2 and says so on stderr, human
/// or JSON, instead of exiting 0 with nothing written; a closed pipe
/// (`| head`) stays quiet and keeps the command's own status.
#[test]
fn a_report_that_cannot_be_written_is_an_io_failure() {
    let full = Path::new("/dev/full");
    if !full.exists() {
        eprintln!("no /dev/full here: skipped");
        return;
    }
    let demo = demo();
    let d = demo.to_str().unwrap();
    let plan_arg = format!("{d}@0");
    let runs: [Vec<&str>; 6] = [
        vec!["inspect", d],
        vec!["inspect", "--json", d],
        vec!["verify", d],
        vec!["load", d],
        vec!["plan", "--instance", "trn1.2xlarge", &plan_arg],
        vec!["plan", "--json", "--instance", "trn1.2xlarge", &plan_arg],
    ];
    for args in &runs {
        let out = Command::new(env!("CARGO_BIN_EXE_neffld"))
            .args(args)
            .stdout(std::fs::File::create(full).unwrap())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("cannot write the report to standard output")
                && err.contains("No space left on device"),
            "{args:?}: {err}"
        );

        // The reader goes away before the report is written.
        let mut child = Command::new(env!("CARGO_BIN_EXE_neffld"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out));
        assert!(out.stderr.is_empty(), "{args:?}: {}", text(&out));
    }
}

/// Under a host memory limit, a payload that does not compress is read as
/// long as the limit holds it: inflating reserved 8 times the compressed
/// payload up front and failed when that reservation did (a 200 MiB NEFF
/// under a 1.8 GB limit was "fail to allocate memory(1688043520) for
/// inflated payload", `NRT_FAIL_HOST_MEM_ALLOC`); smaller reservations are
/// now tried and the buffer grows as the bytes arrive.
#[test]
fn an_incompressible_payload_inflates_under_a_memory_limit() {
    let dir = scratch("limit-inflate");
    let synth = noise_synth(64 << 20);
    let bytes = neffld_testkit::lnc_writer(1).write(&synth.member_list());
    drop(synth);
    let f = dir.join("noise.neff");
    std::fs::write(&f, &bytes).unwrap();
    // 8 x 64 MiB of address space is more than the limit allows; what the
    // payload needs (64 MiB mapped, 64 MiB inflated) is well within it.
    let script = "ulimit -v 409600; exec \"$@\"";
    let out = Command::new("sh")
        .args(["-c", script, "sh", env!("CARGO_BIN_EXE_neffld")])
        .args(["inspect", "--json", f.to_str().unwrap()])
        .output()
        .unwrap();
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(0), "{doc}");
    assert_eq!(doc["status"], "NRT_SUCCESS", "{doc}");
}

/// A capture that is a FIFO with no writer is refused as not a regular
/// file, at once: `compare` blocked in the open, before the type check.
#[test]
fn a_fifo_capture_is_refused_without_waiting_for_a_writer() {
    let dir = scratch("fifo-capture");
    let fifo = dir.join("capture.ntff");
    mkfifo(&fifo);
    let neff = fixture("kfusion__fused_attention__fused.neff");
    let out = Command::new("timeout")
        .arg("20")
        .arg(env!("CARGO_BIN_EXE_neffld"))
        .args([
            "compare",
            "--json",
            neff.to_str().unwrap(),
            fifo.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(124), "blocked on the FIFO");
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(2), "{doc}");
    assert!(
        doc["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not a regular file"),
        "{doc}"
    );
}

/// Issue 40 row 7: a plan's NEFF is opened as a capture is: a FIFO with no
/// writer is refused at once, naming what it is (the plan blocked in the
/// open); and a path the OS takes is a path, UTF-8 or not (clap refused
/// it as "invalid UTF-8"), in a LOAD and an `--unload` alike.
#[test]
fn a_plan_refuses_a_fifo_at_once_and_takes_any_path() {
    use std::os::unix::ffi::OsStrExt;
    let dir = scratch("plan-paths");
    let fifo = dir.join("f.neff");
    mkfifo(&fifo);
    let out = Command::new("timeout")
        .arg("20")
        .arg(env!("CARGO_BIN_EXE_neffld"))
        .args(["plan", "--json", &format!("{}@0", fifo.display())])
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(124), "blocked on the FIFO");
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(2), "{doc}");
    let message = doc["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("not a regular file: this is a FIFO") && message.contains("f.neff"),
        "{doc}"
    );
    let odd = dir.join(std::ffi::OsStr::from_bytes(b"\xff.neff"));
    std::fs::copy(demo(), &odd).unwrap();
    let at = |p: &Path| {
        let mut w = p.as_os_str().to_owned();
        w.push("@0");
        w
    };
    let out = Command::new(env!("CARGO_BIN_EXE_neffld"))
        .arg("plan")
        .arg("--json")
        .arg(at(&odd))
        .arg("--unload")
        .arg(at(&odd))
        .output()
        .unwrap();
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(0), "{doc}");
    assert_eq!(doc["fits"], true);
    assert_eq!(doc["planned_steps"], 2, "{doc}");
    assert_eq!(doc["steps"][1]["kind"], "unload", "{doc}");
}
