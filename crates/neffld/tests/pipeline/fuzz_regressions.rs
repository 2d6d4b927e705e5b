//! Inputs kept from fuzzing and probing, in the `load` target's format and
//! replayed through its checks (`neffld_testkit::fuzz_load`, the
//! target's body): the first
//! byte is the flag byte (bit 0: trn1 instead of trn2; bit 1: verify the
//! payload hash; bit 2: allow legacy NEFFs; bits 3 to 7: the runtime
//! line), the rest is the NEFF. Each kept
//! input has a named test; every file under `tests/data/fuzz/load/` is also
//! replayed by `every_kept_load_input`, so a new crash file is covered by
//! dropping it there.

use neffld::NrtStatus;
use neffld_testkit::fuzz_load as replay_load;

fn data(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/data/fuzz/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn every_kept_load_input() {
    let dir = format!("{}/tests/data/fuzz/load", env!("CARGO_MANIFEST_DIR"));
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        replay_load(&std::fs::read(&p).unwrap());
        n += 1;
    }
    assert!(n > 0);
}

/// The flag byte reaches every runtime line of the table, whatever their
/// number (bits 3 to 5 alone reached eight).
#[test]
fn the_flag_byte_reaches_every_line() {
    use neffld::line::RuntimeLine;
    let reached: std::collections::BTreeSet<RuntimeLine> = (0..=u8::MAX)
        .map(neffld_testkit::runtime_line_of_flag)
        .collect();
    assert_eq!(reached.into_iter().collect::<Vec<_>>(), RuntimeLine::ALL);
}

/// A DMA block of 2^24 in-bounds 64-byte runs: expanded in full (about
/// 1.6 GB, 15 s in a debug build) and loaded, before the vring limit was
/// checked from the pattern. Now `NRT_QUEUE_FULL` at once.
#[test]
fn ring_limit_runs() {
    assert_eq!(
        replay_load(&data("load/ring_limit_runs.bin")),
        Some(NrtStatus::QueueFull)
    );
}

/// One 2^40-byte run between two 2^63-byte I/O tensors: 2^24 chunks built
/// before the template encoding failed. Now `NRT_QUEUE_FULL` at once.
#[test]
fn ring_limit_long_run() {
    assert_eq!(
        replay_load(&data("load/ring_limit_long_run.bin")),
        Some(NrtStatus::QueueFull)
    );
}

/// Deployment files and short forms that probe the parser's edges: huge
/// ranges and repeats are refused by their bounds, not expanded; every
/// mistake names where and what.
#[test]
fn deployment_inputs_at_the_edges_are_refused_with_a_place() {
    use neffld_testkit::fuzz_deployment;
    for input in [
        &b"[[step]]\nload = \"a\"\ncores = \"0-4294967295\"\n"[..],
        b"[[step]]\nload = \"a\"\ncores = \"0-65535\"\nrepeat = 65535\n",
        b"[[step]]\ntensor = \"kv\"\nsize = \"99999999999999999999TiB\"\ncores = 0\n",
        b"[[step]]\ntensor = \"kv\"\nsize = -1\ncores = -1\n",
        b"[[step]]\nload = \"a\"\ncores = [1.5]\n",
        b"[env]\nNEURON_SCRATCHPAD_PAGE_SIZE = [1]\n",
        b"\xff\xfe[[step",
        b"kv=1.0000000000000000000001GiB@0\na@0-\n=@\n@",
    ] {
        let e = fuzz_deployment(input).expect("refused");
        assert!(e.place.starts_with("fuzz.toml"), "{e}");
    }
    assert!(fuzz_deployment(b"[[step]]\nload = \"a.neff\"\ncores = \"0-3\"\n").is_none());
}

/// The `compare` target's body on the real captures (each reads and
/// compares consistently against the fixed load) and on a damaged one.
#[test]
fn compare_target_on_its_seeds() {
    let mut read = 0;
    for e in std::fs::read_dir(neffld_testkit::CAPTURES).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "ntff") {
            let bytes = std::fs::read(&p).unwrap();
            read += usize::from(neffld_testkit::fuzz_compare(&bytes));
            assert!(!neffld_testkit::fuzz_compare(&bytes[..0x90]));
        }
    }
    assert_eq!(read, 10);
}

/// The `tree` target's body on trees that pack (files and a directory, a
/// followed link) and that do not (a FIFO; a link not followed), each with
/// its names also tried as hostile member names.
#[test]
fn tree_target_on_its_seeds() {
    let entry = |kind: u8, name: &[u8], data: &[u8]| {
        [
            &[kind, name.len() as u8][..],
            name,
            &[data.len() as u8],
            data,
        ]
        .concat()
    };
    let files = [
        entry(0, b"neff.json", b"{}"),
        entry(1, b"sg00", b""),
        entry(0, b"sg00/def.json", b"{\"var\":{}}"),
        entry(0, b"sg00/\xff\xfe.bin", b"raw"),
        entry(0, b"../escape", b"no"),
    ]
    .concat();
    assert!(neffld_testkit::fuzz_tree(&[&[0][..], &files].concat()));
    let link = entry(2, b"sg00/link.bin", b"def.json");
    assert!(!neffld_testkit::fuzz_tree(
        &[&[0][..], &files, &link].concat()
    ));
    assert!(neffld_testkit::fuzz_tree(
        &[&[1][..], &files, &link].concat()
    ));
    let looped = entry(2, b"sg00/up", b".");
    assert!(!neffld_testkit::fuzz_tree(
        &[&[1][..], &files, &looped].concat()
    ));
    let fifo = entry(3, b"sg00/pipe", b"");
    assert!(!neffld_testkit::fuzz_tree(
        &[&[1][..], &files, &fifo].concat()
    ));
}

/// Found by the `tar` target once member names kept their bytes: a name
/// that is not UTF-8 could not be looked up by its text (U+FFFD in place
/// of its bytes), which the target expected. It is looked up by its exact
/// bytes.
#[test]
fn tar_member_named_by_bytes_that_are_not_utf8() {
    let input = data("tar/non_utf8_name.bin");
    assert_eq!(neffld_testkit::fuzz_tar(&input), Some(2));
}

/// Issue 29: the `deployment` target's body on a file that expands past
/// the step ceiling (forty `cores = "0-65535"`, `repeat = 16` steps: 27 s
/// and 3 GB before) is refused at once, with its variable named.
#[test]
fn deployment_target_refuses_a_wide_file_before_expanding_it() {
    let wide = "[[step]]\nload = \"a.neff\"\ncores = \"0-65535\"\nrepeat = 16\n".repeat(40);
    let e = neffld_testkit::fuzz_deployment(wide.as_bytes()).expect("refused");
    assert!(e.what.contains("NEFFLD_MAX_STEPS"), "{e}");
}

/// Issue 29: the `dump_names` target's body on its seeds: a plain graph
/// name is written, hostile ones (`../../x`, an absolute path, a `/`
/// inside, 300 bytes, a NUL) write nothing anywhere.
#[test]
fn dump_names_target_on_its_seeds() {
    use neffld_testkit::fuzz_dump_names;
    assert!(fuzz_dump_names(b"sg00"));
    assert!(fuzz_dump_names("sg\u{e9}\n".as_bytes()));
    assert!(fuzz_dump_names(b"sg\xff"));
    for hostile in [
        &b"../../ESCAPED"[..],
        b"/tmp/victim",
        b"a/b",
        b"sg\x00",
        "g".repeat(300).as_bytes(),
    ] {
        assert!(!fuzz_dump_names(hostile), "{hostile:?}");
    }
    // "." and ".." alone become `._pe.bin`: plain names, written in place.
    assert!(fuzz_dump_names(b".."));
}
