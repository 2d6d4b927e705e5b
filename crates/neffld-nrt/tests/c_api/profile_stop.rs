//! `nrt_profile_stop(filename)` writes the capture to its own `filename`,
//! the file `nrt_profile.h` says it saves the profile to: a name other than
//! the start's is written (with a warning), a file that cannot be written
//! is `NRT_FAILURE`, and a call that succeeds logs no ERROR. The calls run
//! in a child process of their own (this test binary, re-run with [`CHILD`]
//! set to the folder to write in), which marks each step on stderr; the
//! parent reads the log lines of each step.

use std::path::{Path, PathBuf};
use std::ptr;

use neffld_nrt::*;
use neffld_testkit::Alone;

/// Set in the child: the folder its captures go to.
const CHILD: &str = "NEFFLD_PROFILE_STOP_CHILD";
/// A file no process can create (its folder does not exist).
const UNWRITABLE: &str = "/nonexistent/dir/x.ntff";

fn fixture() -> Vec<u8> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/fixtures/matmul_small.neff"
    );
    std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn c(path: &Path) -> std::ffi::CString {
    std::ffi::CString::new(path.to_str().unwrap()).unwrap()
}

/// Marks on stderr that the calls of `step` follow, and on stdout the
/// status of each, for the parent.
fn step(name: &str, f: impl FnOnce() -> NRT_STATUS) {
    eprintln!("@@ {name}");
    let s = f();
    // libtest may have begun the line ("test … ... "): the status is
    // found by its mark.
    println!("@@ {name} {s:?}");
}

fn start(m: *mut nrt_model_t, file: &Path) -> NRT_STATUS {
    let file = c(file);
    // SAFETY: `m` is a live model; `file` is NUL-terminated.
    unsafe { nrt_profile_start(m, file.as_ptr()) }
}

fn stop(file: &Path) -> NRT_STATUS {
    let file = c(file);
    // SAFETY: `file` is NUL-terminated.
    unsafe { nrt_profile_stop(file.as_ptr()) }
}

fn child(dir: &Path) {
    // SAFETY: NULL version strings are allowed.
    let s = unsafe { nrt_init(1, ptr::null(), ptr::null()) };
    assert_eq!(s, NRT_STATUS::NRT_SUCCESS);
    let neff = fixture();
    let mut m: *mut nrt_model_t = ptr::null_mut();
    // SAFETY: `neff` is readable for its length; `m` is writable.
    let s = unsafe { nrt_load(neff.as_ptr().cast(), neff.len(), -1, -1, &mut m) };
    assert_eq!(s, NRT_STATUS::NRT_SUCCESS);
    let p1 = dir.join("p1.ntff");
    let x = dir.join("x.ntff");
    let p2 = dir.join("p2.ntff");
    let p3 = dir.join("p3.ntff");
    step("start p1", || start(m, &p1));
    step("stop x", || stop(&x));
    step("start p2", || start(m, &p2));
    step("stop unwritable", || stop(Path::new(UNWRITABLE)));
    step("stop again", || stop(&p2));
    step("start p3", || start(m, &p3));
    step("stop p3", || stop(&p3));
    // SAFETY: `m` is live.
    assert_eq!(unsafe { nrt_unload(m) }, NRT_STATUS::NRT_SUCCESS);
    nrt_close();
}

/// What the child printed: each step's status, and its log lines.
struct Steps {
    statuses: Vec<(String, String)>,
    logs: Vec<(String, Vec<String>)>,
}

impl Steps {
    fn status(&self, name: &str) -> &str {
        let (_, s) = self
            .statuses
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no step {name}"));
        s
    }

    /// The log lines of `name` at `level` (`ERROR`, `WARN`).
    fn lines(&self, name: &str, level: &str) -> Vec<&str> {
        let (_, lines) = self
            .logs
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no log of step {name}"));
        lines
            .iter()
            .filter(|l| l.split_whitespace().nth(3) == Some(level))
            .map(String::as_str)
            .collect()
    }
}

fn run(dir: &Path) -> Steps {
    let out = Alone::new(module_path!(), "profile_stop_writes_its_own_filename")
        .env(CHILD, dir)
        .env("NEFFLD_LOG", "warn")
        .output();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "child failed:\n{stdout}\n{stderr}");
    let statuses = stdout
        .lines()
        .filter_map(|l| l.split_once("@@ ")?.1.rsplit_once(' '))
        .map(|(n, s)| (n.to_string(), s.to_string()))
        .collect();
    let mut logs: Vec<(String, Vec<String>)> = Vec::new();
    for line in stderr.lines() {
        if let Some(name) = line.strip_prefix("@@ ") {
            logs.push((name.to_string(), Vec::new()));
        } else if let Some((_, lines)) = logs.last_mut() {
            lines.push(line.to_string());
        }
    }
    Steps { statuses, logs }
}

#[test]
fn profile_stop_writes_its_own_filename() {
    if let Ok(dir) = std::env::var(CHILD) {
        return child(Path::new(&dir));
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("profile_stop");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let steps = run(&dir);

    // Started for p1, stopped for x: x holds the capture, p1 was never
    // written, and the success logs no ERROR (a warning names both files).
    assert_eq!(steps.status("start p1"), "NRT_SUCCESS");
    assert_eq!(steps.status("stop x"), "NRT_SUCCESS");
    let bytes = std::fs::read(dir.join("x.ntff")).expect("stop wrote its own filename");
    let capture = neffld::capture::read(&bytes).expect("the capture reads back");
    assert_eq!(capture.neff_name, "file.neff");
    assert!(
        !dir.join("p1.ntff").exists(),
        "the start's name is not written"
    );
    assert_eq!(steps.lines("stop x", "ERROR"), Vec::<&str>::new());
    let warned = steps.lines("stop x", "WARN");
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(
        warned[0].contains("p1.ntff") && warned[0].contains("x.ntff"),
        "{warned:?}"
    );

    // A file that cannot be written is NRT_FAILURE, with one ERROR naming
    // it; profiling has ended all the same.
    assert_eq!(steps.status("start p2"), "NRT_SUCCESS");
    assert_eq!(steps.status("stop unwritable"), "NRT_FAILURE");
    let errors = steps.lines("stop unwritable", "ERROR");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains(UNWRITABLE), "{errors:?}");
    assert!(!dir.join("p2.ntff").exists());
    assert_eq!(steps.status("stop again"), "NRT_INVALID");

    // The same name at both ends: written, and nothing logged at all.
    assert_eq!(steps.status("start p3"), "NRT_SUCCESS");
    assert_eq!(steps.status("stop p3"), "NRT_SUCCESS");
    assert!(dir.join("p3.ntff").exists());
    for level in ["ERROR", "WARN"] {
        assert_eq!(steps.lines("stop p3", level), Vec::<&str>::new());
        assert_eq!(steps.lines("start p3", level), Vec::<&str>::new());
    }
}
