//! Builds the C clients `tests/c/load_smoke.c` and `tests/c/async_smoke.c`
//! with the system C compiler against the generated headers and the cdylib,
//! and runs them on a fixture. Skipped (with a message) when the compiler or
//! the shared library is missing.

use std::path::{Path, PathBuf};
use std::process::Command;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A directory holding the library under the names a client links and
/// loads (`libnrt.so`, and `libnrt.so.1`, its soname): links to the cdylib
/// cargo built for this run in `deps/`, beside this test executable.
fn lib_dir(tag: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let cdylib = exe.parent()?.join("libneffld_nrt.so");
    if !cdylib.exists() {
        return None;
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("libnrt_{tag}"));
    std::fs::create_dir_all(&dir).ok()?;
    for name in ["libnrt.so", "libnrt.so.1"] {
        let link = dir.join(name);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&cdylib, &link).ok()?;
    }
    Some(dir)
}

/// Compiles `load_smoke.c` into an executable of its own per test.
fn build(tag: &str) -> Option<PathBuf> {
    build_program("load_smoke", tag)
}

/// Compiles `tests/c/<program>.c` into an executable of its own per test
/// (tests run in parallel, and running a file while another test rewrites
/// it fails); `None` (after printing why) when it cannot be built here.
fn build_program(program: &str, tag: &str) -> Option<PathBuf> {
    if Command::new("cc").arg("--version").output().is_err() {
        eprintln!("skipping the C smoke test: no system C compiler (cc)");
        return None;
    }
    let Some(lib) = lib_dir(tag) else {
        eprintln!("skipping the C smoke test: libneffld_nrt.so was not built next to the tests");
        return None;
    };
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{program}_{tag}"));
    let status = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pthread", "-I"])
        .arg(crate_dir().join("include"))
        .arg(crate_dir().join(format!("tests/c/{program}.c")))
        .arg("-L")
        .arg(&lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .args(["-lnrt", "-o"])
        .arg(&out)
        .status()
        .expect("cc runs");
    assert!(status.success(), "cc failed to build {program}.c");
    Some(out)
}

fn fixture() -> PathBuf {
    crate_dir().join("../../testdata/fixtures/matmul_small.neff")
}

fn run(program: &Path, args: &[&str]) -> (bool, String) {
    run_with(program, args, &[])
}

fn run_with(program: &Path, args: &[&str], env: &[(&str, &str)]) -> (bool, String) {
    let fixture = fixture();
    let mut args = args.to_vec();
    args.push(fixture.to_str().expect("a UTF-8 path"));
    run_plain(program, &args, env)
}

/// Runs `program` with `args` alone (no fixture) and `env`.
fn run_plain(program: &Path, args: &[&str], env: &[(&str, &str)]) -> (bool, String) {
    let out = Command::new(program)
        .args(args)
        .env("NEFFLD_LOG", "off")
        .envs(env.iter().copied())
        .output()
        .expect("load_smoke runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    println!("{stdout}");
    (out.status.success(), stdout)
}

#[test]
fn c_program_guard_statuses() {
    let Some(program) = build("guards") else {
        return;
    };
    let (ok, stdout) = run(&program, &["--guards-only"]);
    assert!(ok, "load_smoke --guards-only failed:\n{stdout}");
    assert!(stdout.contains("nrt_load before nrt_init"));
    assert!(stdout.contains("NRT_UNINITIALIZED (13)"));
    assert!(stdout.contains("NRT_CLOSED (14)"));
}

#[test]
fn c_program_full_load() {
    let Some(program) = build("full") else { return };
    let (ok, stdout) = run(&program, &[]);
    assert!(ok, "load_smoke failed:\n{stdout}");
    assert!(stdout.contains("input  x "), "{stdout}");
    assert!(stdout.contains("shape [128, 256]"), "{stdout}");
    assert!(stdout.contains("output output0 "), "{stdout}");
    assert!(
        stdout
            .contains("nrt_load of a damaged NEFF               NRT_UNSUPPORTED_NEFF_VERSION (10)"),
        "{stdout}"
    );
}

/// The C library takes the runtime line from `NEFFLD_RUNTIME`: a line (or
/// a version of one) loads under it, anything else fails `nrt_init` with
/// `NRT_INVALID`.
#[test]
fn c_program_reads_the_runtime_line_from_the_environment() {
    let Some(program) = build("runtime") else {
        return;
    };
    let (ok, stdout) = run_with(&program, &[], &[("NEFFLD_RUNTIME", "2.27.23")]);
    assert!(ok, "load_smoke under 2.27 failed:\n{stdout}");
    let (ok, stdout) = run_with(&program, &["--guards-only"], &[("NEFFLD_RUNTIME", "2.26")]);
    assert!(!ok, "{stdout}");
    let init = stdout
        .lines()
        .find(|l| l.starts_with("nrt_init "))
        .expect("an nrt_init line");
    assert!(init.contains("NRT_INVALID (2)"), "{stdout}");
}

/// Async API 3.0 from C: a write and a read round-trip their bytes on one
/// queue with consecutive ids, `*ret` is written, eventfds are signalled
/// (and never closed), `nrta_execute_schedule` is refused at call time, and
/// a queue holding 64 requests refuses the next with `NRT_QUEUE_FULL`.
#[test]
fn c_program_async_api_3() {
    let Some(program) = build_program("async_smoke", "async") else {
        return;
    };
    let (ok, stdout) = run(&program, &[]);
    assert!(ok, "async_smoke failed:\n{stdout}");
    assert!(
        stdout.contains("nrta_tensor_write on the full queue"),
        "{stdout}"
    );
    assert!(stdout.ends_with("OK\n"), "{stdout}");
}

/// The tensor operations from C on trn2 under the default line (the
/// newest, which has them): an ADD of two float32 tensors reads back as
/// the C client's own sums, a float32 to bfloat16 cast as its own
/// round-to-nearest-even, the async forms complete, and every bad argument
/// is `NRT_INVALID`. On trn1, and under a line before 2.35, every call is
/// `NRT_FAILURE`.
#[test]
fn c_program_tensor_ops() {
    let Some(program) = build_program("tensor_ops", "tensor_ops") else {
        return;
    };
    assert!(neffld::RuntimeLine::NEWEST.has_call("nrt_tensor_cast"));
    let (ok, stdout) = run_plain(&program, &[], &[]);
    assert!(ok, "tensor_ops failed:\n{stdout}");
    assert!(
        stdout.contains("c is the element-wise float32 sum"),
        "{stdout}"
    );
    assert!(stdout.ends_with("OK\n"), "{stdout}");
    let refused = [("NEFFLD_ARCH", "trn1"), ("NEFFLD_RUNTIME", "2.34")];
    for env in refused {
        let (ok, stdout) = run_plain(&program, &["--refused"], &[env]);
        assert!(ok, "tensor_ops --refused under {env:?} failed:\n{stdout}");
        assert!(stdout.contains("nrt_tensor_cast "), "{stdout}");
    }
}

/// A C client's `nrt_load_collectives` of a NEFF with one all-reduce,
/// rank 0 of 2: it loads with a root communicator and is refused without
/// one (`NRT_INVALID`), or with one that is not `host:port`.
#[test]
fn c_program_loads_a_rank_of_a_collectives_world() {
    use neffld_testkit::collectives::{Step, World};
    let Some(program) = build_program("cc_load", "cc") else {
        return;
    };
    let neff = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cc_load_all_reduce.neff");
    let bytes = World::new(2).with_steps(&[Step::AllReduce(32)]).shared();
    std::fs::write(&neff, bytes).unwrap();
    let path = neff.to_str().unwrap();
    let (ok, stdout) = run_plain(
        &program,
        &[path, "0", "2"],
        &[("NEURON_RT_ROOT_COMM_ID", "10.0.0.1:62182")],
    );
    assert!(ok, "{stdout}");
    assert!(
        stdout.contains("nrt_load_collectives NRT_SUCCESS (0)"),
        "{stdout}"
    );
    for env in [&[][..], &[("NEURON_RT_ROOT_COMM_ID", "10.0.0.1")][..]] {
        let (ok, stdout) = run_plain(&program, &[path, "0", "2"], env);
        assert!(!ok, "{env:?}: {stdout}");
        assert!(
            stdout.contains("nrt_load_collectives NRT_INVALID (2)"),
            "{stdout}"
        );
    }
}

/// The README's C example, as a reader copies it: the one ```c block,
/// compiled with warnings as errors against the shipped headers, called
/// from a small `main` on the example NEFF (on trn1, its chip). It lacked
/// `#include <nrt/nrt_experimental.h>` (`nrt_get_model_tensor_info`) and
/// did not compile.
#[test]
fn the_readme_c_example_compiles_and_lists_the_tensors() {
    let readme = std::fs::read_to_string(crate_dir().join("../../README.md")).unwrap();
    let blocks: Vec<&str> = readme
        .split("```c\n")
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap())
        .collect();
    assert_eq!(blocks.len(), 1, "the README has one C example");
    let Some(lib) = lib_dir("readme") else {
        eprintln!("skipping: libneffld_nrt.so was not built next to the tests");
        return;
    };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let source = dir.join("readme_example.c");
    let main = r#"
#include <stdlib.h>
int main(int argc, char **argv) {
    static char buf[1 << 20];
    FILE *f = argc > 1 ? fopen(argv[1], "rb") : NULL;
    if (!f) return 2;
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    return list_tensors(buf, n);
}
"#;
    std::fs::write(&source, format!("{}{main}", blocks[0])).unwrap();
    let program = dir.join("readme_example");
    let out = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-I"])
        .arg(crate_dir().join("include"))
        .arg(&source)
        .arg("-L")
        .arg(&lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .args(["-lnrt", "-o"])
        .arg(&program)
        .output()
        .expect("cc runs");
    assert!(
        out.status.success(),
        "the README's C example does not compile:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let demo = crate_dir().join("../../examples/demo.neff");
    assert!(std::fs::metadata(&demo).unwrap().len() < 1 << 20);
    // The example NEFF is trn1's; the library's default device is trn2.
    let out = Command::new(&program)
        .arg(&demo)
        .env("NEFFLD_ARCH", "trn1")
        .output()
        .expect("the example runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // One line per tensor, as the NEFF's source tree declares them: the
    // input node and the output of the one subgraph, fp16 of their shapes.
    let manifest: serde_json::Value = serde_json::from_slice(
        &std::fs::read(crate_dir().join("../../examples/demo/neff.json")).unwrap(),
    )
    .unwrap();
    let nodes = manifest["nodes"].as_array().unwrap();
    let input = nodes[manifest["arg_nodes"][0].as_u64().unwrap() as usize]["name"].as_str();
    let head = manifest["heads"][0][0].as_u64().unwrap() as usize;
    let output = nodes[head]["output_names"][0].as_str();
    let shapes = manifest["attrs"]["shape"][1].as_array().unwrap();
    assert!(manifest["attrs"]["dltype"][1]
        .as_array()
        .unwrap()
        .iter()
        .all(|d| d == "float16"));
    let bytes = |i: usize| -> u64 {
        let dims = shapes[i].as_array().unwrap();
        2 * dims.iter().map(|d| d.as_u64().unwrap()).product::<u64>()
    };
    let expected = format!(
        "{}: {} bytes\n{}: {} bytes\n",
        input.unwrap(),
        bytes(0),
        output.unwrap(),
        bytes(1)
    );
    assert_eq!(stdout, expected);
}
