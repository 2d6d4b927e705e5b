//! Helpers the command's test files share: the binary, its JSON, the real
//! fixtures and scratch directories.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

/// The real fixtures, vendored under `testdata/fixtures`.
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/fixtures")
}

pub fn fixture(name: &str) -> PathBuf {
    fixtures_dir().join(name)
}

pub fn demo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo.neff")
}

pub fn neffld(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neffld"))
        .args(args)
        .output()
        .expect("run neffld")
}

pub fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// A fresh directory of this test process's, one per call: the tests of a
/// harness share its process, so the process id alone does not set two
/// tests' directories apart.
pub fn scratch(tag: &str) -> PathBuf {
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let pid = std::process::id();
    let d = std::env::temp_dir().join(format!("neffld-cli-{tag}-{pid}-{call}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}
