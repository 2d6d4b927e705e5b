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

/// A test's directory, removed when the test is done with it.
pub type Scratch = neffld_testkit::ScratchDir;

/// A fresh directory for one test ([`neffld_testkit::ScratchDir`]).
pub fn scratch(tag: &str) -> Scratch {
    Scratch::new(&format!("cli-{tag}"))
}
