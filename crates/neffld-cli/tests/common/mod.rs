//! Helpers the command's test files share: the binary, its JSON, the real
//! fixtures and scratch directories.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
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
/// tests' directories apart. Removed when dropped, unless the test is
/// failing (what it wrote is then left to look at).
pub fn scratch(tag: &str) -> Scratch {
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let pid = std::process::id();
    let d = std::env::temp_dir().join(format!("neffld-cli-{tag}-{pid}-{call}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Scratch(d)
}

/// A test's directory ([`scratch`]).
pub struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
