//! One test, one process: libnrt's state (`nrt_init`, the loaded models,
//! the environment it reads) is process-wide, so a test that touches it must
//! not share its process with the rest of this binary's tests.

use std::process::Command;

/// Set in a child to the one test it runs.
const ALONE: &str = "NEFFLD_TEST_ALONE";

/// The name libtest gives `test` of `module` (a `module_path!()`, whose
/// first segment is this binary's crate).
pub fn test_name(module: &str, test: &str) -> String {
    let module = module.split_once("::").map_or("", |(_, m)| m);
    format!("{module}::{test}")
}

/// Runs `test` of `module` again in a child process of this binary, alone,
/// and checks that it passed. Returns `true` in the parent, which then has
/// nothing left to do, and `false` in the child, which runs the body.
pub fn ran_alone(module: &str, test: &str) -> bool {
    let name = test_name(module, test);
    if std::env::var(ALONE).as_deref() == Ok(name.as_str()) {
        return false;
    }
    let out = Command::new(std::env::current_exe().expect("the test binary's path"))
        .args([name.as_str(), "--exact", "--nocapture", "--test-threads=1"])
        .env(ALONE, &name)
        .output()
        .expect("the test binary runs again");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{name}, alone in its own process, failed:\n{stdout}\n{stderr}"
    );
    // A filter that matched nothing would pass having run nothing.
    assert!(
        stdout.contains("test result: ok. 1 passed"),
        "{name}: the child ran no test:\n{stdout}"
    );
    true
}
