//! What a plan costs: host memory per step and time per step, and the
//! headroom's time per copy it counts (docs/performance.md, "What a plan
//! costs"). Each figure is a difference between two plans run in fresh
//! processes of this example, so what every plan pays once (the runtime's
//! start, the parse of the NEFF) cancels out.
//!
//! ```text
//! plan_scale [NEFF]    NEFF: a trn2 NEFF, testdata/fixtures/matmul_small.neff by default
//! ```
//!
//! - Steps: N loads of NEFF over the 64 logical cores of a trn2.48xlarge
//!   (`cores = "0-63"`, `repeat = N / 64`) for N = 16,384 and 65,536; per
//!   step, the difference of the peak resident sets (VmHWM) and of the wall
//!   times over the difference of the steps.
//! - Copies: a NEFF of 20,000 small variables loaded once on core 0, planned
//!   as it is (the headroom counts 256 copies of it, the most it counts)
//!   and with `NEFFLD_MAX_HEADROOM=0` (it loads it once and counts no
//!   further copy); per copy, the difference of the wall times over the
//!   difference of the copies.

use std::path::{Path, PathBuf};
use std::time::Instant;

use neffld::container::writer::Producer;
use neffld::plan::{parse_toml, plan};
use neffld_testkit::{status_kib, Synth};
use serde_json::json;

/// Plans `toml` (NEFF paths relative to `dir`) in this process and prints
/// `steps copies seconds peak_kib` for the parent.
fn child(toml: &str, dir: &Path) {
    let d = parse_toml(toml, "plan_scale", dir).expect("a deployment");
    let t = Instant::now();
    let p = plan(&d).expect("a plan");
    let secs = t.elapsed().as_secs_f64();
    let copies: u64 = p
        .headroom
        .iter()
        .flat_map(|h| &h.copies)
        .map(|(_, c)| u64::from(c.count))
        .sum();
    println!("{} {copies} {secs} {}", p.steps.len(), status_kib("VmHWM"));
}

/// Runs one plan in a fresh process of this example.
fn measure(toml: &str, dir: &Path) -> (f64, f64, f64, f64) {
    let out = std::process::Command::new(std::env::current_exe().expect("this example"))
        .args(["--child", toml])
        .arg(dir)
        .output()
        .expect("the example runs again");
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Vec<f64> = text
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    assert!(
        v.len() == 4,
        "the child said: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (v[0], v[1], v[2], v[3])
}

fn loads(file: &str, steps: u32) -> String {
    format!(
        "instance = \"trn2.48xlarge\"\n[[step]]\nload = \"{file}\"\ncores = \"0-63\"\nrepeat = {}\n",
        steps / 64
    )
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child") {
        return child(&args[1], Path::new(&args[2]));
    }
    let neff = args.first().map_or_else(
        || {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../testdata/fixtures/matmul_small.neff")
        },
        PathBuf::from,
    );
    let neff = neff.canonicalize().expect("the NEFF exists");
    let (dir, file) = (
        neff.parent().unwrap(),
        neff.file_name().unwrap().to_str().unwrap(),
    );

    let (s1, _, t1, m1) = measure(&loads(file, 16_384), dir);
    let (s2, _, t2, m2) = measure(&loads(file, 65_536), dir);
    println!(
        "steps of {file}: {s1} steps {t1:.2} s, peak {:.0} MiB; {s2} steps {t2:.2} s, peak {:.0} MiB",
        m1 / 1024.0,
        m2 / 1024.0
    );
    println!(
        "per step: {:.0} bytes of host memory, {:.1} us",
        (m2 - m1) * 1024.0 / (s2 - s1),
        (t2 - t1) * 1e6 / (s2 - s1)
    );

    // A NEFF of 20,000 small variables (each one allocation of a load).
    let scratch = std::env::temp_dir().join(format!("neffld-plan-scale-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).expect("a scratch folder");
    let mut s = Synth::dynamic_cayman();
    s.edit("sg00/def.json", |d| {
        let vars = d["var"].as_object_mut().unwrap();
        let first = vars.len() as u64;
        for id in first..first + 20_000 {
            vars.insert(
                format!("t{id}"),
                json!({"type": "tmp-buf", "var_id": id, "size": 64}),
            );
        }
    });
    std::fs::write(scratch.join("vars.neff"), s.write(Producer::V2_21)).expect("written");
    let one = "instance = \"trn2.48xlarge\"\n[[step]]\nload = \"vars.neff\"\ncores = \"0\"\n";
    let (_, c1, t1, _) = measure(one, &scratch);
    let none = one.replace("[[step]]", "[env]\nNEFFLD_MAX_HEADROOM = \"0\"\n[[step]]");
    let (_, c2, t2, _) = measure(&none, &scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    println!("headroom of vars.neff: {c1} copies in {t1:.2} s; with NEFFLD_MAX_HEADROOM=0, {c2} in {t2:.2} s");
    println!(
        "per copy: {:.2} ms ({:.2} us per allocation of its 20,000)",
        (t1 - t2) * 1e3 / (c1 - c2),
        (t1 - t2) * 1e6 / (c1 - c2) / 20_000.0
    );
}
