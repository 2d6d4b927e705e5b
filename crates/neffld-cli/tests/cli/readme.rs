//! Every snippet of the README is run or compiled by a test: the `neffld`
//! command lines here, as a reader types them (in a directory holding the
//! example NEFF where the README has it); the C example by the C library's
//! tests, the Python example by the package's; the rest by the scripts that
//! run exactly those commands. A snippet nothing covers fails this test.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::scratch;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The README's code: every line of its indented blocks (comments and
/// blank lines dropped), and the languages of its fenced blocks.
fn snippets(readme: &str) -> (Vec<String>, Vec<String>) {
    let (mut lines, mut fenced) = (Vec::new(), Vec::new());
    let mut in_fence = false;
    let mut previous_blank = true;
    let mut in_block = false;
    for line in readme.lines() {
        if let Some(lang) = line.strip_prefix("```") {
            if !in_fence {
                fenced.push(lang.to_string());
            }
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let indented = line.strip_prefix("    ");
        in_block = indented.is_some() && (in_block || previous_blank);
        if let Some(code) = indented.filter(|_| in_block) {
            let code = code.split(" #").next().unwrap().trim();
            if !code.is_empty() && !code.starts_with('#') {
                lines.push(code.to_string());
            }
        }
        previous_blank = line.trim().is_empty();
    }
    (lines, fenced)
}

/// The `neffld` command lines the README's prose gives in code spans that
/// name the example NEFF (`neffld load examples/demo.neff --map map.html`).
fn inline_commands(readme: &str) -> Vec<String> {
    readme
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|span| span.starts_with("neffld ") && span.contains("examples/"))
        .map(str::to_string)
        .collect()
}

/// Runs `neffld` with `args` in `dir`, as the README's reader would.
fn run(args: &[&str], dir: &Path) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_neffld"))
        .args(args)
        .current_dir(dir)
        .env_remove("NEFFLD_ARCH")
        .env_remove("NEFFLD_INSTANCE")
        .env_remove("NEURON_RT_VISIBLE_CORES")
        .output()
        .expect("run neffld");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

#[test]
fn every_readme_snippet_is_run_or_compiled_by_a_test() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let (lines, fenced) = snippets(&readme);
    // Where the reader stands: a directory with the example NEFFs and the
    // test data at the README's paths (the map and other outputs land
    // here, not in the checkout).
    let dir = scratch("readme");
    for d in ["examples", "testdata"] {
        std::os::unix::fs::symlink(root().join(d), dir.join(d)).unwrap();
    }

    let mut commands: Vec<String> = inline_commands(&readme);
    for line in &lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            // The main job: `cargo run` of this very binary.
            ["cargo", "run", "--release", "-p", "neffld-cli", "--", rest @ ..] => {
                commands.push(format!("neffld {}", rest.join(" ")))
            }
            ["neffld", ..] => commands.push(line.clone()),
            // Builds with the lock file's versions: building again would
            // rebuild the whole command in release here.
            ["cargo", "install", rest @ ..] => {
                assert!(rest.contains(&"--locked"), "{line}: without --locked");
                let path = rest.iter().skip_while(|w| **w != "--path").nth(1);
                assert!(
                    root()
                        .join(path.expect("--path DIR"))
                        .join("Cargo.toml")
                        .is_file(),
                    "{line}"
                );
            }
            // The suite itself (`.ci/run` runs it).
            ["scripts/test-all"] => {}
            // scripts/test-cpp-client installs into a prefix of its own and
            // builds a client against it; the C library's `exports` test
            // reads the library's soname.
            ["scripts/install-libnrt", _] | ["readelf", ..] => {
                let cpp = std::fs::read_to_string(root().join("scripts/test-cpp-client")).unwrap();
                assert!(
                    cpp.contains("scripts/install-libnrt\" \"$prefix\""),
                    "{cpp}"
                );
            }
            // crates/neffld-py/scripts/test.sh installs the package so
            // (flags such as -v change only what pip prints).
            ["pip", "install", flags @ .., "./crates/neffld-py"]
                if flags.iter().all(|f| f.starts_with('-')) =>
            {
                let script =
                    std::fs::read_to_string(root().join("crates/neffld-py/scripts/test.sh"))
                        .unwrap();
                assert!(script.contains("pip install --quiet \"$root/crates/neffld-py\""));
            }
            _ => panic!("README snippet no test runs: {line}"),
        }
    }
    // The monitoring commands are run by
    // monitor_cli::the_readme_monitoring_commands_run, the C example
    // compiled and run by crates/neffld-nrt's
    // c_smoke::the_readme_c_example_compiles_and_lists_the_tensors, the
    // Python one by crates/neffld-py/tests/test_readme.py.
    assert_eq!(fenced, ["sh", "c", "python"], "a fenced block no test runs");
    let monitor =
        std::fs::read_to_string(root().join("crates/neffld-cli/tests/cli/monitor_cli.rs"));
    assert!(monitor
        .unwrap()
        .contains("fn the_readme_monitoring_commands_run()"));
    assert!(root()
        .join("crates/neffld-py/tests/test_readme.py")
        .is_file());

    assert!(commands.len() >= 3, "{commands:?}");
    for command in &commands {
        let args: Vec<&str> = command.split_whitespace().skip(1).collect();
        let (code, text) = run(&args, &dir);
        // The plan example has one tensor too many for its rank's HBM, as
        // the README says: refused, exit 1, and why.
        let expected = if args[0] == "plan" { 1 } else { 0 };
        assert_eq!(code, Some(expected), "{command}:\n{text}");
        if args.contains(&"testdata/written/collectives_sample.neff") {
            assert!(text.contains("collectives"), "{command}:\n{text}");
        }
        if args[0] == "plan" {
            assert!(
                text.contains("fits      no") && text.contains("more"),
                "{command}:\n{text}"
            );
        }
        if let Some(map) = args.iter().skip_while(|a| **a != "--map").nth(1) {
            let html = std::fs::read_to_string(dir.join(map)).unwrap();
            assert!(html.contains("<svg"), "{command}: {map} is not a map");
        }
    }
}

/// The Python suite's venv goes where cargo builds: with `CARGO_TARGET_DIR`
/// elsewhere, nothing is written into the checkout (a 515 MB venv landed in
/// its `target/`). The interpreter is a stand-in that records the venv's
/// path and stops the script there.
#[test]
fn the_python_suite_builds_its_venv_where_cargo_builds() {
    let dir = scratch("venv");
    let record = dir.join("argv");
    let python = dir.join("python");
    std::fs::write(
        &python,
        format!("#!/bin/sh\necho \"$@\" > '{}'\nexit 3\n", record.display()),
    )
    .unwrap();
    std::fs::set_permissions(&python, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let target = dir.join("target");
    let out = Command::new("bash")
        .arg(root().join("crates/neffld-py/scripts/test.sh"))
        .env("PYTHON", &python)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .expect("bash runs");
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let argv = std::fs::read_to_string(&record).unwrap();
    assert_eq!(argv.trim(), format!("-m venv {}/py-venv", target.display()));
}
