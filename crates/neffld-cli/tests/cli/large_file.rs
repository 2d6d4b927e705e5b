//! `neffld load` of a NEFF large enough for its mapped file to be streamed
//! and released (its payload is at least `container::STREAM_MIN`) reports
//! exactly what the same bytes give when read from standard input, which is
//! never mapped: the same model,
//! memory and warnings on success, the same error, status and exit code on
//! damage and on a file cut short, with and without the hash check.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use neffld::container::STREAM_MIN;
use neffld_testkit::{lnc_writer, noise, npy_v1, Synth};
use serde_json::Value;

/// A NEFF whose weights are barely compressible bytes, so the payload
/// window is above the streaming threshold.
fn large_neff() -> Vec<u8> {
    let per = (STREAM_MIN + (4 << 20)) as usize;
    let mut synth = Synth::cayman_weights(1, 4);
    synth.set(
        "sg00/value_sg0000_w_CRSM.npy",
        npy_v1("<f4", &[per as u64 / 4], &noise(per)),
    );
    let bytes = lnc_writer(1).write(&synth.member_list());
    assert!((bytes.len() - 1024) as u64 >= STREAM_MIN);
    bytes
}

fn load(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_neffld"))
        .args([
            "load", "--json", "--quiet", "--device", "null", "--lnc", "1",
        ])
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .spawn()
        .expect("run neffld");
    if let Some(bytes) = stdin {
        child.stdin.take().unwrap().write_all(bytes).unwrap();
    }
    child.wait_with_output().unwrap()
}

/// The report without what legitimately differs between the two runs.
fn report(out: &Output) -> (Option<i32>, Value) {
    let mut v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    let o = v.as_object_mut().unwrap();
    o.remove("file");
    o.remove("timings_us");
    (out.status.code(), v)
}

#[test]
fn a_mapped_load_reports_what_a_read_one_does() {
    let good = large_neff();
    let mut damaged = good.clone();
    let mid = 1024 + (good.len() - 1024) / 2;
    for b in &mut damaged[mid..mid + 64] {
        *b ^= 0xA5;
    }
    let dir = std::env::temp_dir().join(format!("neffld-cli-large-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A file cut short (still above the threshold): the header gate names it.
    let cut = good[..good.len() - 5000].to_vec();
    for (tag, bytes, ok) in [
        ("good", &good, true),
        ("damaged", &damaged, false),
        ("cut", &cut, false),
    ] {
        let f = dir.join(format!("{tag}.neff"));
        std::fs::write(&f, bytes).unwrap();
        for hash in [&[][..], &["--validate-hash"][..]] {
            let path = [hash, &[f.to_str().unwrap()]].concat();
            let mapped = report(&load(&path, None));
            let read = report(&load(&[hash, &["-"]].concat(), Some(bytes)));
            assert_eq!(mapped, read, "{tag} {hash:?}");
            assert_eq!(
                mapped.0,
                Some(if ok { 0 } else { 1 }),
                "{tag} {hash:?}: {}",
                mapped.1
            );
            if !ok {
                let message = mapped.1["error"]["message"].as_str().unwrap().to_string();
                let want = match (tag, hash.is_empty()) {
                    ("cut", _) => "Invalid NEFF data size",
                    (_, true) => "gzip member 1",
                    (_, false) => "MD5 mismatch!",
                };
                assert!(message.contains(want), "{tag} {hash:?}: {message}");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
