//! `neffld plan` end to end: the same deployment from the command line and
//! from a deployment file, the order the command line gives, the runtime's
//! own refusal lines and the advice in the human report, mistakes that name
//! what and where (exit 2), the instance from `NEFFLD_INSTANCE`, and the map.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use neffld_testkit::any_lnc_cayman;

use crate::common::{fixture, scratch};
use serde_json::Value;

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;

fn neffld(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_neffld"));
    c.args(args);
    for v in neffld::config::VARIABLES {
        c.env_remove(v.name);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run neffld")
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

fn write_neff(dir: &Path, name: &str, tmp: u64) -> String {
    let p = dir.join(format!("{name}.neff"));
    std::fs::write(&p, any_lnc_cayman(name, tmp, |_| {})).unwrap();
    p.to_str().unwrap().to_string()
}

/// The steps of a `plan --json` document as (kind, file name or tensor
/// name, core).
fn steps(doc: &Value) -> Vec<(String, String, u64)> {
    doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let what = s["file"]
                .as_str()
                .map(|f| {
                    Path::new(f)
                        .file_name()
                        .unwrap()
                        .to_string_lossy()
                        .into_owned()
                })
                .or_else(|| s["name"].as_str().map(str::to_string))
                .unwrap();
            (
                s["kind"].as_str().unwrap().to_string(),
                what,
                s["core"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The noisy neighbour of the runtime's documentation, from the command
/// line: refused with the runtime's own three lines, and the advice says
/// LNC 2 with the figure a re-plan found.
#[test]
fn the_noisy_neighbour_is_reported_as_the_runtime_would_with_its_advice() {
    let dir = scratch("noisy");
    let dense = write_neff(&dir, "dense", 10 * GIB);
    let args = [
        "plan",
        "--instance",
        "trn2.3xlarge",
        "--lnc",
        "1",
        &format!("{dense}@0,0"),
        "--tensor",
        "kv=4GiB@1",
    ];
    let out = neffld(&args, &[]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    for line in [
        "fits      no: step 3 of 3 (tensor kv (4.0 GiB) on core 1) refused",
        "ERROR  TDRV:print_lnc_hbm_details                   LNC size is 1. Neuron Cores using this HBM: NC 0 and NC 1",
        "ERROR  TDRV:log_dev_mem                             Failed to allocate 4.000GB (alignment: none, usage: tensors) on ND 0:NC 1",
        "ERROR  TDRV:log_dev_mem_usage_table                 Displaying Current Memory Utilization:",
        "  - --lnc 2 (NEURON_LOGICAL_NC_CONFIG=2): at LNC 1, NC 0 and NC 1 share HBM 0 of ND 0",
    ] {
        assert!(text.contains(line), "{line}\n{text}");
    }
    let doc = json(&neffld(&[&args[..], &["--json"]].concat(), &[]));
    assert_eq!(doc["fits"], false);
    assert_eq!(doc["error"]["status"], "NRT_RESOURCE");
    let advice = &doc["advice"][0];
    assert_eq!(
        (advice["kind"].as_str(), advice["fits"].as_bool()),
        (Some("lnc"), Some(true))
    );
    // What the tensor then has: its own HBM at LNC 2, less the runtime's
    // and nothing else of the deployment's 20 GiB.
    let free_after = advice["unblocked"]["free_after"].as_u64().unwrap();
    assert!(
        free_after > 19 * GIB && free_after < 24 * GIB - 4 * GIB,
        "{free_after}"
    );
}

/// A deployment file gives what the same command line gives, and flags
/// given beside it apply over it.
#[test]
fn a_deployment_file_plans_what_the_command_line_plans() {
    let dir = scratch("toml");
    let a = write_neff(&dir, "a", GIB);
    let b = write_neff(&dir, "b", 2 * GIB);
    let toml = dir.join("deploy.toml");
    std::fs::write(
        &toml,
        "instance = \"trn2.3xlarge\"\nlnc = 1\n\n[env]\nNEURON_SCRATCHPAD_PAGE_SIZE = 1024\n\n\
         [[step]]\nload = \"a.neff\"\ncores = \"0-1\"\n\n[[step]]\ntensor = \"kv\"\nsize = \"1GiB\"\ncores = 0\n\n\
         [[step]]\nload = \"b.neff\"\ncores = [2]\n\n[[step]]\nunload = \"a.neff\"\ncores = 1\n",
    )
    .unwrap();
    let from_file = json(&neffld(&["plan", "--json", toml.to_str().unwrap()], &[]));
    let from_args = json(&neffld(
        &[
            "plan",
            "--json",
            "--instance",
            "trn2.3xlarge",
            "--lnc",
            "1",
            "--env",
            "NEURON_SCRATCHPAD_PAGE_SIZE=1024",
            &format!("{a}@0-1"),
            "--tensor",
            "kv=1GiB@0",
            &format!("{b}@2"),
            "--unload",
            &format!("{a}@1"),
        ],
        &[],
    ));
    let expected = [
        ("load", "a.neff", 0),
        ("load", "a.neff", 1),
        ("tensor", "kv", 0),
        ("load", "b.neff", 2),
        ("unload", "a.neff", 1),
    ]
    .map(|(k, w, c)| (k.to_string(), w.to_string(), c));
    assert_eq!(steps(&from_args), expected, "command-line order");
    assert_eq!(steps(&from_file), expected);
    assert_eq!(from_file["scratchpad_page"], 1 << 30);
    for key in ["fits", "memory", "headroom", "scratchpad_page", "instance"] {
        let strip = |v: &Value| v.to_string().replace(&*dir.to_string_lossy(), "");
        assert_eq!(strip(&from_file[key]), strip(&from_args[key]), "{key}");
    }
    // A flag beside the file applies over it.
    let lnc2 = json(&neffld(
        &["plan", "--json", "--lnc", "2", toml.to_str().unwrap()],
        &[],
    ));
    assert_eq!(lnc2["instance"]["lnc"], 2);
    let no_io = json(&neffld(
        &["plan", "--json", "--no-io-tensors", toml.to_str().unwrap()],
        &[],
    ));
    let tensors: Vec<&str> = no_io["tensors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tensors, ["kv"], "only the named tensor without IO tensors");
}

/// The project's example NEFF (trn1).
fn demo() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/demo.neff").to_string()
}

/// Every mistake exits 2 and names what and where.
#[test]
fn mistakes_name_what_and_where() {
    let dir = scratch("bad");
    let a = write_neff(&dir, "a", 0);
    let toml = dir.join("bad.toml");
    std::fs::write(
        &toml,
        "[[step]]\nload = \"a.neff\"\n\n[[step]]\ntensor = \"kv\"\ncores = 0\n",
    )
    .unwrap();
    let cases: [(Vec<String>, &str); 8] = [
        (
            vec![toml.to_str().unwrap().into()],
            "bad.toml line 4 (step 2): a tensor step needs size",
        ),
        (vec![format!("{a}@2-1")], "the range 2-1 runs backwards"),
        (
            vec![a.clone(), "--tensor".into(), "kv=1QB@0".into()],
            "--tensor 'kv=1QB@0': '1QB' has an unknown unit",
        ),
        (
            vec![a.clone(), "--env".into(), "NEURON_BOGUS=1".into()],
            "NEURON_BOGUS is not a variable",
        ),
        (
            vec![a.clone(), "--instance".into(), "trn7.large".into()],
            "unknown instance type 'trn7.large'",
        ),
        (
            vec![a.clone(), "--unload".into(), format!("{a}@5")],
            "@5': logical core 5 is not on this instance",
        ),
        (
            vec![dir.join("none.neff").to_str().unwrap().into()],
            "cannot read",
        ),
        (
            vec![demo(), "--lnc".into(), "2".into()],
            "lnc: trn1 cores take logical-core size [1], not 2",
        ),
    ];
    for (args, what) in cases {
        let mut all = vec!["plan".to_string()];
        all.extend(args);
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        let out = neffld(&refs, &[]);
        assert_eq!(out.status.code(), Some(2), "{all:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(what), "{all:?}: {err}");
    }
}

/// `NEFFLD_INSTANCE` picks the instance when no flag does; the map shows
/// every chip and HBM, and every NEFF and tensor with a label.
#[test]
fn the_instance_comes_from_the_environment_and_the_map_shows_all_of_it() {
    let dir = scratch("map");
    let a = write_neff(&dir, "alpha", GIB);
    let map = dir.join("map.html");
    let doc = json(&neffld(
        &[
            "plan",
            "--json",
            &format!("{a}@0,5"),
            "--tensor",
            "cache=64MiB@3",
            "--map",
            map.to_str().unwrap(),
        ],
        &[("NEFFLD_INSTANCE", "trn2.48xlarge")],
    ));
    assert_eq!(doc["instance"]["name"], "trn2.48xlarge");
    assert_eq!(doc["instance"]["logical_cores"], 64);
    assert_eq!(doc["neffs"][1]["device"], 1, "logical core 5 is on ND 1");
    let html = std::fs::read_to_string(&map).unwrap();
    assert_eq!(html.matches("<section class=\"chip\">").count(), 16);
    assert_eq!(html.matches("<svg class=\"hbm\"").count(), 64);
    // The two ranks of alpha hold the same: listed once for both, naming
    // their physical cores (trn2 at LNC 2: logical core 0 is nc0 and nc1
    // of ND 0, logical core 5 nc2 and nc3 of ND 1), not once per core.
    let group = html
        .lines()
        .find(|l| l.starts_with("<li class=\"ranks\""))
        .expect("a line for the identical ranks");
    assert!(
        group.starts_with(
            "<li class=\"ranks\" data-pcores=\"0:0 0:1 1:2 1:3\">NEFF &quot;alpha&quot; (alpha.neff) ×2 ranks on logical cores 0,5, each: "
        ),
        "{group}"
    );
    assert!(!html.contains("<li class=\"neff\">"), "ranks listed once");
    for t in doc["tensors"].as_array().unwrap() {
        let name = t["name"].as_str().unwrap();
        if t["io_of"].is_null() {
            assert!(
                html.contains(&format!(
                    "<li class=\"tensor\">nc{} · tensor {name}",
                    t["pcore"]
                )),
                "{t}"
            );
        } else {
            assert!(group.contains(&format!("tensor {name} · ")), "{t}");
        }
    }
    // Ranks that differ keep a line per core.
    let b = write_neff(&dir, "beta", 2 * GIB);
    let doc = json(&neffld(
        &[
            "plan",
            "--json",
            &format!("{a}@0"),
            &format!("{b}@5"),
            "--map",
            map.to_str().unwrap(),
        ],
        &[("NEFFLD_INSTANCE", "trn2.48xlarge")],
    ));
    let html = std::fs::read_to_string(&map).unwrap();
    assert!(!html.contains("<li class=\"ranks\""));
    for (n, name) in doc["neffs"]
        .as_array()
        .unwrap()
        .iter()
        .zip(["alpha", "beta"])
    {
        assert!(
            html.contains(&format!(
                "<li class=\"neff\">nc{} · NEFF {} &quot;{name}&quot;",
                n["pcores"][0], n["id"]
            )),
            "{n}"
        );
    }
}

/// A `--map` that cannot be written costs the map, not the plan: the whole
/// report is printed (with one step counted in the singular), the failure
/// named after it, and the exit status is 2; `--json` keeps the plan and
/// lists the failure among its warnings.
#[test]
fn an_unwritable_map_keeps_the_plan() {
    let bad = "/nonexistent-dir/plan.html";
    let d = demo();
    let out = neffld(&["plan", &d, "--map", bad], &[]);
    assert_eq!(out.status.code(), Some(2));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("fits      yes: all 1 step\n"), "{stdout}");
    assert!(String::from_utf8_lossy(&out.stderr).contains(bad));
    let out = neffld(&["plan", "--json", &d, "--map", bad], &[]);
    assert_eq!(out.status.code(), Some(2));
    let doc = json(&out);
    assert_eq!(doc["fits"], true, "{doc}");
    assert_eq!(doc["planned_steps"], 1);
    assert!(doc["warnings"].to_string().contains(bad), "{doc}");
}

/// The advice items of one kind in a `plan --json` document.
fn advice_of_kind<'d>(doc: &'d Value, kind: &str) -> Vec<&'d Value> {
    doc["advice"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["kind"] == kind)
        .collect()
}

/// An advice item's command line.
fn argv_of(a: &Value) -> Vec<&str> {
    a["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect()
}

/// Re-plans every advice item's `argv` (as given, without the leading
/// `neffld`) and checks the plan's `fits` is the item's.
fn advice_replans_as_said(doc: &Value) {
    for a in doc["advice"].as_array().unwrap() {
        let argv = argv_of(a);
        assert_eq!(&argv[..2], ["neffld", "plan"], "{a}");
        let mut args = argv[1..].to_vec();
        args.push("--json");
        let out = neffld(&args, &[]);
        let again = json(&out);
        assert_eq!(again["fits"], a["fits"], "{}: {a}", argv.join(" "));
        assert_eq!(
            out.status.code(),
            Some(if a["fits"] == true { 0 } else { 1 }),
            "{}",
            argv.join(" ")
        );
    }
}

/// trn2.3xlarge at LNC 1: NC 0 and NC 1 share HBM 0, so a NEFF on cores 0
/// and 1 with an 11 GiB tensor each does not fit in its 24 GiB; on cores 0
/// and 2 (HBMs 0 and 1) it does. The advice proposes that placement, its
/// command line plans and fits, and the headroom names the shared HBM.
#[test]
fn ranks_on_a_shared_hbm_are_offered_a_placement_that_fits() {
    let dir = scratch("placement");
    let a = write_neff(&dir, "rank", 512 << 20);
    let args = [
        "plan",
        "--instance",
        "trn2.3xlarge",
        "--lnc",
        "1",
        &format!("{a}@0,1"),
        "--tensor",
        "kv=11GiB@0,1",
        "--json",
    ];
    let out = neffld(&args, &[]);
    assert_eq!(out.status.code(), Some(1));
    let doc = json(&out);
    assert_eq!(doc["fits"], false);
    // Independent: the same on cores 0 and 2 fits.
    let spread = [
        "plan",
        "--instance",
        "trn2.3xlarge",
        "--lnc",
        "1",
        &format!("{a}@0,2"),
        "--tensor",
        "kv=11GiB@0,2",
        "--json",
    ];
    assert_eq!(json(&neffld(&spread, &[]))["fits"], true);
    let placed = advice_of_kind(&doc, "placement");
    assert_eq!(placed.len(), 1, "{}", doc["advice"]);
    assert_eq!(placed[0]["fits"], true);
    assert_eq!(placed[0]["moves"][0]["from"], 1);
    assert_ne!(placed[0]["moves"][0]["to"], 1);
    assert!(doc["no_fix"].is_null());
    advice_replans_as_said(&doc);
    // The human report gives the command line and says it fits.
    let text = neffld(&args[..args.len() - 1], &[]);
    let t = String::from_utf8_lossy(&text.stdout);
    assert!(
        t.contains("fits: yes; run: neffld plan --instance trn2.3xlarge --lnc 1"),
        "{t}"
    );
}

/// The noisy neighbour's advice (LNC 2) re-plans as said; a plan nothing
/// rescues says so plainly.
#[test]
fn advice_command_lines_replan_to_their_verdict_and_hopeless_plans_say_so() {
    let dir = scratch("argv");
    let dense = write_neff(&dir, "dense", 10 * GIB);
    let light = write_neff(&dir, "light", 64 << 20);
    let args = [
        "plan",
        "--instance",
        "trn2.3xlarge",
        "--lnc",
        "1",
        &format!("{dense}@0"),
        &format!("{dense}@0"),
        "--tensor",
        "kv=4GiB@1",
        "--json",
    ];
    let doc = json(&neffld(&args, &[]));
    assert_eq!(doc["fits"], false);
    assert!(!doc["advice"].as_array().unwrap().is_empty());
    advice_replans_as_said(&doc);
    // A NEFF larger than any HBM: nothing helps, and the report says so
    // (a tensor larger than any HBM is now advised the size that fits).
    let huge = write_neff(&dir, "huge", 30 * GIB);
    let hopeless = [
        "plan",
        "--instance",
        "trn2.3xlarge",
        "--lnc",
        "1",
        &format!("{light}@0"),
        &format!("{dense}@1"),
        &format!("{huge}@2"),
        "--json",
    ];
    let doc = json(&neffld(&hopeless, &[]));
    assert_eq!(doc["fits"], false);
    assert!(doc["advice"]
        .as_array()
        .unwrap()
        .iter()
        .all(|a| a["fits"] == false));
    assert!(doc["no_fix"]
        .as_str()
        .is_some_and(|s| s.starts_with("nothing considered makes the plan fit")));
    advice_replans_as_said(&doc);
}

/// A plan of tensors only, and `--free` on the command line.
#[test]
fn tensors_alone_and_frees_plan_from_the_command_line() {
    let out = neffld(
        &[
            "plan",
            "--instance",
            "trn2.3xlarge",
            "--tensor",
            "a=20GiB@0",
            "--free",
            "a@0",
            "--tensor",
            "b=20GiB@0",
            "--json",
        ],
        &[],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = json(&out);
    assert_eq!(
        steps(&doc),
        [
            ("tensor".into(), "a".into(), 0),
            ("free".into(), "a".into(), 0),
            ("tensor".into(), "b".into(), 0)
        ]
    );
    // Without the free, two 20 GiB tensors do not fit in one 24 GiB HBM.
    let out = neffld(
        &[
            "plan",
            "--instance",
            "trn2.3xlarge",
            "--tensor",
            "a=20GiB@0",
            "--tensor",
            "b=20GiB@0",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    // No NEFF, so no copies to count: the headroom has no such column.
    let text = String::from_utf8(out.stdout).unwrap();
    let headroom = section_of(&text, "headroom");
    assert!(
        headroom[1].trim_end().ends_with("largest tensor"),
        "{headroom:?}"
    );
    assert!(!text.contains("more copies"), "{text}");
    assert!(
        text.lines().all(|l| l == l.trim_end()),
        "no line ends in spaces: {text:?}"
    );
}

/// From 2.33 `NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG=0` silences the
/// runtime's usage report of a refused allocation, so the plan shows none
/// under "as the runtime logs it" (it showed the report the runtime would
/// not print); the lines before 2.33 ignore the variable.
#[test]
fn the_oom_log_switch_silences_the_refusal_report() {
    let run = |runtime: &str, json: bool| {
        let mut args = vec![
            "plan",
            "--instance",
            "trn2.3xlarge",
            "--runtime",
            runtime,
            "--env",
            "NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG=0",
            "--tensor",
            "kv=30GiB@0",
        ];
        if json {
            args.push("--json");
        }
        let out = neffld(&args, &[]);
        assert_eq!(out.status.code(), Some(1));
        out
    };
    let doc = json(&run("2.34", true));
    assert_eq!(doc["refusal"]["log"], serde_json::json!([]), "{doc}");
    assert_eq!(doc["refusal"]["size"], 30 * GIB, "{doc}");
    let text = String::from_utf8(run("2.34", false).stdout).unwrap();
    assert!(
        text.contains("(no usage report: NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG=0 silences it)"),
        "{text}"
    );
    assert!(!text.contains("log_dev_mem"), "{text}");
    let doc = json(&run("2.32", true));
    let log = doc["refusal"]["log"].as_array().unwrap();
    assert!(
        log.iter()
            .any(|l| l.to_string().contains("log_dev_mem_usage_table")),
        "{doc}"
    );
}

/// A page size asked for with the contiguous scratchpad on (2.33 and later,
/// trn1 here) has no effect, and the plan says so; with paged scratchpad
/// (2.30) it is the page size.
#[test]
fn a_page_size_the_contiguous_scratchpad_ignores_is_said_to_be() {
    let demo = demo();
    let load = format!("{demo}@0");
    let run = |line: &str| {
        let args = [
            "plan",
            "--instance",
            "trn1.2xlarge",
            "--runtime",
            line,
            "--env",
            "NEURON_SCRATCHPAD_PAGE_SIZE=2048",
            &load,
            "--json",
        ];
        json(&neffld(&args, &[]))
    };
    let doc = run("2.34");
    assert_eq!(doc["contiguous_scratchpad"], true);
    assert_eq!(doc["unused_page_size"], 2048u64 << 20);
    let doc = run("2.30");
    assert_eq!(doc["contiguous_scratchpad"], false);
    assert_eq!(doc["unused_page_size"], Value::Null);
    assert_eq!(doc["scratchpad_page"], 2048u64 << 20);
    let args = [
        "plan",
        "--instance",
        "trn1.2xlarge",
        "--env",
        "NEURON_SCRATCHPAD_PAGE_SIZE=2048",
        &load,
    ];
    let text = String::from_utf8(neffld(&args, &[]).stdout).unwrap();
    assert!(
        text.lines().next().unwrap().ends_with(
            "contiguous scratchpad in 64.0 MiB steps (NEURON_SCRATCHPAD_PAGE_SIZE=2048 has no effect on it)"
        ),
        "{text}"
    );
}

/// The usage table with a row per NEFF came with runtime 2.26.42: a plan
/// under 2.23 or 2.25 logs the refused request without it, and says so;
/// 2.27 and later log it.
#[test]
fn the_lines_before_2_26_log_no_neff_usage_table() {
    let demo = demo();
    let load = format!("{demo}@0");
    let run = |line: &str, json: bool| {
        let mut args = vec![
            "plan",
            "--instance",
            "trn1.2xlarge",
            "--runtime",
            line,
            &load,
        ];
        args.extend(["--tensor", "kv=20GiB@0"]);
        if json {
            args.push("--json");
        }
        let out = neffld(&args, &[]);
        assert_eq!(out.status.code(), Some(1));
        out
    };
    let funcs = |line: &str| -> Vec<String> {
        json(&run(line, true))["refusal"]["log"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                l["function"]
                    .as_str()
                    .or(l[0].as_str())
                    .unwrap_or_default()
                    .to_string()
            })
            .collect()
    };
    for line in ["2.23", "2.25"] {
        let f = funcs(line);
        assert!(f.iter().any(|f| f == "log_dev_mem"), "{line}: {f:?}");
        assert!(
            !f.iter().any(|f| f == "log_dev_mem_usage_table"),
            "{line}: {f:?}"
        );
        let text = String::from_utf8(run(line, false).stdout).unwrap();
        assert!(
            text.contains(&format!(
                "(runtime {line} printed no usage table with a row per NEFF"
            )),
            "{text}"
        );
    }
    for line in ["2.27", "2.34"] {
        assert!(
            funcs(line).iter().any(|f| f == "log_dev_mem_usage_table"),
            "{line}"
        );
    }
}

/// Issue 40 row 12: a refused tensor is advised the largest size that
/// fits on the cores of the argument that was refused, in its place: with
/// kv on cores 0-2 beside a refused kv on core 3, the size is --solve
/// kv@3's (not kv@0-3's, bounded by the 20 GiB the other three hold); it
/// comes before leaving anything out, and its command line fits (a
/// refused kv beside models was offered only "drop the model").
#[test]
fn a_refused_tensor_is_advised_the_size_that_fits_on_its_own_cores() {
    let dir = scratch("tensor-size");
    let model = write_neff(&dir, "model", 64 << 20);
    let other = write_neff(&dir, "other", 64 << 20);
    let base = [
        "plan".to_string(),
        "--instance".into(),
        "trn2.3xlarge".into(),
        "--json".into(),
        format!("{model}@3"),
        format!("{other}@3"),
        "--tensor".into(),
        "kv=20GiB@0-2".into(),
    ];
    let run = |extra: &[&str]| {
        let mut a: Vec<&str> = base.iter().map(String::as_str).collect();
        a.extend(extra);
        neffld(&a, &[])
    };
    let out = run(&["--tensor", "kv=30GiB@3"]);
    assert_eq!(out.status.code(), Some(1));
    let doc = json(&out);
    let kinds: Vec<&str> = doc["advice"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["kind"].as_str().unwrap())
        .collect();
    let sized = kinds
        .iter()
        .position(|&k| k == "tensor_size")
        .expect("tensor_size");
    if let Some(without) = kinds.iter().position(|&k| k == "without_neff") {
        assert!(sized < without, "{kinds:?}");
    }
    let advice = &doc["advice"][sized];
    assert_eq!(advice["fits"], true, "{advice}");
    // Independent: the question asked of the deployment without the
    // refused argument.
    let answer = json(&run(&["--solve", "kv@3"]));
    let bytes = answer["solve"]["bytes"].as_u64().unwrap();
    assert!(bytes > 20 * GIB && bytes < 24 * GIB, "{answer}");
    assert_eq!(advice["size"], bytes, "{advice}");
    let argv = argv_of(advice);
    assert!(
        argv.contains(&format!("--tensor=kv={bytes}@3").as_str()),
        "{argv:?}"
    );
    assert!(argv.contains(&"--tensor=kv=21474836480@0-2"), "{argv:?}");
    assert!(doc["no_fix"].is_null(), "{doc}");
    advice_replans_as_said(&doc);
}

/// Issue 40 row 12: a refused plan with 31 of 32 cores empty is advised to
/// spread its crowded core onto empty ones (it said "no change was found
/// to consider"): the refused step and the core's later steps go to the
/// first core of an empty HBM, and a step refused there moves on again.
#[test]
fn a_crowded_core_is_advised_to_spread_onto_empty_ones() {
    let demo = demo();
    let args = [
        "plan",
        "--instance",
        "trn1.32xlarge",
        &format!("{demo}@0"),
        "--tensor",
        "a=10GiB@0",
        "--tensor",
        "b=10GiB@0",
        "--tensor",
        "c=10GiB@0",
        "--json",
    ];
    let doc = json(&neffld(&args, &[]));
    assert_eq!(doc["fits"], false);
    assert_eq!(doc["steps"].as_array().unwrap().len(), 3, "b is refused");
    let spread = advice_of_kind(&doc, "spread");
    assert_eq!(spread.len(), 1, "{}", doc["advice"]);
    assert_eq!(spread[0]["fits"], true, "{}", spread[0]);
    let moves = spread[0]["moves"].as_array().unwrap();
    assert_eq!(moves.len(), 2, "{}", spread[0]);
    assert_eq!(
        (&moves[0]["from"], &moves[0]["from_step"]),
        (&0.into(), &2.into())
    );
    assert_eq!(
        (&moves[1]["from"], &moves[1]["from_step"]),
        (&moves[0]["to"], &3.into())
    );
    assert!(doc["no_fix"].is_null(), "{doc}");
    advice_replans_as_said(&doc);
    // Independent: each 10 GiB tensor then has an HBM of its own.
    let argv = argv_of(spread[0]);
    let mut again: Vec<&str> = argv[1..].to_vec();
    again.push("--json");
    let planned = json(&neffld(&again, &[]));
    let hbms: std::collections::BTreeSet<(u64, u64)> = planned["tensors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["size"] == 10 * GIB)
        .map(|t| (t["device"].as_u64().unwrap(), t["hbm"].as_u64().unwrap()))
        .collect();
    assert_eq!(hbms.len(), 3, "{planned}");
}

/// An unload names the file it undoes by any path to it: relative with or
/// without `./`, absolute, or through a symlink (each was "nothing loads
/// ./u.neff on core 0" though that very file was loaded there). Another
/// file is still another file.
#[test]
fn an_unload_names_its_file_by_any_path() {
    let dir = scratch("unload-paths");
    let a = write_neff(&dir, "u", 0);
    std::os::unix::fs::symlink(&a, dir.join("link.neff")).unwrap();
    std::fs::copy(&a, dir.join("copy.neff")).unwrap();
    let run = |unload: &str| {
        Command::new(env!("CARGO_BIN_EXE_neffld"))
            .current_dir(&*dir)
            .args(["plan", "--json", "--instance", "trn2.3xlarge", "u.neff@0"])
            .args(["--unload", unload])
            .output()
            .unwrap()
    };
    for unload in ["./u.neff@0", &format!("{a}@0"), "link.neff@0"] {
        let out = run(unload);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{unload}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let doc = json(&out);
        assert_eq!(doc["steps"][1]["status"], "ok", "{unload}: {doc}");
        assert_eq!(doc["neffs"], serde_json::json!([]), "{unload}: unloaded");
    }
    let out = run("copy.neff@0");
    let doc = json(&out);
    assert_eq!(out.status.code(), Some(2), "{doc}");
    let message = doc["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("nothing loads copy.neff on core 0"),
        "{doc}"
    );
}

/// Mistakes in core lists and steps are usage errors found before anything
/// is planned (exit 2, no step run), naming the argument or the file and
/// line.
#[test]
fn core_lists_and_unloads_of_nothing_are_usage_errors_before_work() {
    let dir = scratch("usage");
    let a = write_neff(&dir, "u", 0);
    let cases: Vec<(Vec<String>, String, &str)> = vec![
        (
            vec![
                "--instance".into(),
                "trn1.32xlarge".into(),
                format!("{a}@0-40"),
            ],
            format!("LOAD '{a}@0-40'"),
            "logical core 32 is not on this instance",
        ),
        (vec![format!("{a}@x")], format!("LOAD '{a}@x'"), "'x'"),
        (vec![format!("{a}@")], format!("LOAD '{a}@'"), "no cores"),
        (
            vec![format!("{a}@0"), "--unload".into(), format!("{a}@1")],
            format!("--unload '{a}@1'"),
            "nothing loads",
        ),
        (
            vec!["--free".into(), "kv@0".into()],
            "--free 'kv@0'".into(),
            "no tensor kv",
        ),
        // Four logical cores, two of them visible: the plan numbers those.
        (
            vec![
                "--env".into(),
                "NEURON_RT_VISIBLE_CORES=2-3".into(),
                format!("{a}@2"),
            ],
            format!("LOAD '{a}@2'"),
            "trn2.3xlarge at LNC 2 with NEURON_RT_VISIBLE_CORES=2-3 has 2 logical cores (0 to 1)",
        ),
    ];
    for (args, place, what) in cases {
        let mut all = vec![
            "plan".to_string(),
            "--instance".into(),
            "trn2.3xlarge".into(),
        ];
        if args[0] == "--instance" {
            all.truncate(1);
        }
        all.extend(args);
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        let out = neffld(&refs, &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{all:?}: {err}");
        assert!(err.contains(&place) && err.contains(what), "{all:?}: {err}");
        assert!(out.stdout.is_empty(), "nothing planned: {all:?}");
    }
    let toml = dir.join("d.toml");
    std::fs::write(
        &toml,
        "instance = \"trn2.3xlarge\"\n[[step]]\nload = \"u.neff\"\ncores = 0\n\n[[step]]\nunload = \"u.neff\"\ncores = 2\n",
    )
    .unwrap();
    let out = neffld(&["plan", toml.to_str().unwrap()], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("d.toml line 6 (step 2)") && err.contains("nothing loads"),
        "{err}"
    );
    std::fs::write(
        &toml,
        "instance = \"trn1.2xlarge\"\nlnc = 2\n[[step]]\nload = \"u.neff\"\n",
    )
    .unwrap();
    let out = neffld(&["plan", toml.to_str().unwrap()], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("d.toml line 2: trn1 cores take"), "{err}");
    std::fs::write(&toml, "[[step]]\nload = \"u.neff\"\ncores = []\n").unwrap();
    let out = neffld(&["plan", toml.to_str().unwrap()], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("d.toml line 3") && err.contains("no logical core"),
        "{err}"
    );
}

/// neffld's own inflate ceiling is reported as neffld's, with the flag that
/// raises it (and raising it lets the load through); a NEFF of another chip
/// is named against the instance's chip and the compiler's target flag.
#[test]
fn neffld_limits_are_neffld_s_and_a_foreign_chip_names_the_target() {
    let dir = scratch("limits");
    let a = write_neff(&dir, "lim", 0);
    let out = neffld(
        &[
            "plan",
            "--instance",
            "trn2.3xlarge",
            "--max-inflated",
            "1000",
            &a,
            "--json",
        ],
        &[],
    );
    let doc = json(&out);
    assert_eq!(doc["fits"], false);
    let err = &doc["steps"][0]["error"];
    assert_eq!(err["stage"], "neffld", "{err}");
    assert!(err["own_limit"]
        .as_str()
        .unwrap()
        .contains("--max-inflated"));
    assert!(err["message"]
        .as_str()
        .unwrap()
        .starts_with("not the runtime's refusal"));
    let text = neffld(
        &[
            "plan",
            "--instance",
            "trn2.3xlarge",
            "--max-inflated",
            "1000",
            &a,
        ],
        &[],
    );
    let t = String::from_utf8_lossy(&text.stdout);
    assert!(
        t.contains("stopped by neffld's own limit") && !t.contains("refused ["),
        "{t}"
    );
    let raised = neffld(
        &[
            "plan",
            "--instance",
            "trn2.3xlarge",
            "--max-inflated",
            "1000000000",
            &a,
        ],
        &[],
    );
    assert_eq!(raised.status.code(), Some(0));

    let lnc2 = dir.join("lnc2.neff");
    std::fs::write(&lnc2, neffld_testkit::fixture("matmul_small.neff")).unwrap();
    let doc = json(&neffld(
        &[
            "plan",
            "--instance",
            "inf2.xlarge",
            lnc2.to_str().unwrap(),
            "--json",
        ],
        &[],
    ));
    let m = doc["steps"][0]["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(m.contains("Inferentia2 of inf2.xlarge"), "{m}");
    assert!(m.contains("--target=inf2"), "{m}");
    assert!(!m.contains("trn1"), "{m}");

    // The arch gate (a trn1 NEFF on a trn2 instance): the runtime's own
    // message, then the chip and the flag.
    let doc = json(&neffld(
        &["plan", "--instance", "trn2.3xlarge", &demo(), "--json"],
        &[],
    ));
    let m = doc["steps"][0]["error"]["message"].as_str().unwrap();
    assert!(
        m.starts_with("Loading a NEFF compiled for a different arch is not allowed")
            && m.contains("the Trainium2 of trn2.3xlarge")
            && m.contains("`neuronx-cc --target=trn2`"),
        "{m}"
    );
}

/// A NEFF compiled for another chip gets one advice from `load`, `verify`
/// and `plan`: recompile it with the compiler's target for the chip it is
/// loaded on. `load --arch trn1` of a trn2 NEFF (LNC 2) advised `--lnc=1`,
/// which still builds for trn2; a trn1 NEFF on trn2 got only the runtime's
/// `--target <correct_arch>`.
#[test]
fn a_neff_of_another_chip_gets_the_same_advice_from_every_command() {
    let trn2_neff = fixture("kfusion__fused_attention__fused.neff");
    let trn2_neff = trn2_neff.to_str().unwrap();
    let trn1_neff = crate::common::demo();
    let trn1_neff = trn1_neff.to_str().unwrap();
    for (neff, arch, instance, advice) in [
        (
            trn2_neff,
            "trn1",
            "trn1.32xlarge",
            "the NEFF was compiled for trn2 or trn3: recompile it for",
        ),
        (
            trn1_neff,
            "trn2",
            "trn2.3xlarge",
            "(neffld: the NEFF was compiled for trn1; recompile it for",
        ),
    ] {
        let flag = format!("`neuronx-cc --target={arch}`");
        let load = json(&neffld(&["load", "--arch", arch, neff, "--json"], &[]));
        let verify = json(&neffld(
            &["verify", neff, "--json"],
            &[("NEFFLD_ARCH", arch)],
        ));
        let plan = json(&neffld(
            &["plan", "--instance", instance, neff, "--json"],
            &[],
        ));
        let messages = [
            ("load", load["error"]["message"].as_str().unwrap()),
            (
                "verify",
                verify["files"][0]["error"]["message"].as_str().unwrap(),
            ),
            (
                "plan",
                plan["steps"][0]["error"]["message"].as_str().unwrap(),
            ),
        ];
        for (command, m) in messages {
            assert!(m.contains(advice) && m.contains(&flag), "{command}: {m}");
            assert!(!m.contains("--lnc"), "{command}: {m}");
        }
        // The load names the chip, the plan the instance's.
        assert!(messages[0]
            .1
            .contains(&format!("recompile it for {arch} with {flag}")));
        assert!(messages[2]
            .1
            .contains(&format!(" of {instance} with {flag}")));
    }
}

/// A deployment file naming a NEFF that does not exist: the error names the
/// file and line of the step.
#[test]
fn a_missing_neff_is_named_by_its_deployment_line() {
    let dir = scratch("missing");
    let toml = dir.join("d.toml");
    std::fs::write(
        &toml,
        "instance = \"trn2.3xlarge\"\n\n[[step]]\nload = \"nowhere.neff\"\ncores = 0\n",
    )
    .unwrap();
    let out = neffld(&["plan", toml.to_str().unwrap()], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("d.toml line 3 (step 1): cannot read") && err.contains("nowhere.neff"),
        "{err}"
    );
}

/// A process that sees some cores of an instance starts those only: with
/// `NEURON_RT_VISIBLE_CORES=0` on a trn1.32xlarge, core 0 holds what it
/// holds when every core is visible, every other core nothing (the
/// runtime's start-up memory was charged on all 32, 3 GiB held where 168
/// MB is); and the plan says which cores it sees.
#[test]
fn only_the_visible_cores_are_started() {
    let demo = demo();
    let load = format!("{demo}@0");
    let run = |env: &[&str]| {
        let mut args = vec!["plan", "--json", "--instance", "trn1.32xlarge", &load];
        for e in env {
            args.extend(["--env", e]);
        }
        json(&neffld(&args, &[]))
    };
    let used = |doc: &Value| -> Vec<(u64, u64, u64)> {
        let mut out = Vec::new();
        for d in doc["memory"]["devices"].as_array().unwrap() {
            for h in d["hbms"].as_array().unwrap() {
                for c in h["cores"].as_array().unwrap() {
                    out.push((
                        d["device"].as_u64().unwrap(),
                        c["pcore"].as_u64().unwrap(),
                        c["used"].as_u64().unwrap(),
                    ));
                }
            }
        }
        out
    };
    let all = run(&[]);
    let one = run(&["NEURON_RT_VISIBLE_CORES=0"]);
    let (all_used, one_used) = (used(&all), used(&one));
    assert_eq!(
        one_used[0], all_used[0],
        "core 0 as with every core visible"
    );
    assert!(
        one_used[1..].iter().all(|&(_, _, u)| u == 0),
        "{one_used:?}"
    );
    assert!(all_used[1..].iter().all(|&(_, _, u)| u > 0), "{all_used:?}");
    assert!(
        one["steps"][0]["held_after"].as_u64() < all["steps"][0]["held_after"].as_u64(),
        "{} {}",
        one["steps"][0]["held_after"],
        all["steps"][0]["held_after"]
    );
    assert_eq!(
        one["instance"]["visible"],
        serde_json::json!({"var": "NEURON_RT_VISIBLE_CORES", "value": "0", "cores": [0]})
    );
    assert_eq!(all["instance"]["visible"], Value::Null);
}

/// A load for the next free core that finds none is said to be that, not
/// a load "on core ?".
#[test]
fn a_load_that_found_no_free_core_says_so() {
    let demo = demo();
    let mut args = vec!["plan", "--instance", "trn1.2xlarge"];
    args.extend([demo.as_str(); 3]);
    let out = neffld(&args, &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let fits = text.lines().find(|l| l.starts_with("fits")).unwrap();
    assert!(
        fits.contains("(load ")
            && fits.contains(" on the next free core) refused [NRT_LOAD_NOT_ENOUGH_NC"),
        "{fits}"
    );
}

/// Every size the human report prints is rounded down, as headroom's and
/// the solve answer's are: the summary's "free" (it said 14.0 GiB where
/// headroom said 13.9 GiB of the same 13.98) and a tensor step's label (a
/// solved 6.97 GiB read "6.9 GiB" in the answer and "7.0 GiB" re-planned).
#[test]
fn the_report_rounds_sizes_down_throughout() {
    let args = |json: bool| {
        let mut a = vec![
            "plan",
            "--instance",
            "trn2.3xlarge",
            "--tensor",
            "kv=7480541184@0",
        ];
        a.extend(["--tensor", "big=10GiB@0"]);
        if json {
            a.push("--json");
        }
        neffld(&a, &[])
    };
    let text = String::from_utf8(args(false).stdout).unwrap();
    assert!(text.contains("tensor kv (6.9 GiB)"), "{text}");
    let doc = json(&args(true));
    let free = doc["memory"]["devices"][0]["hbms"][0]["free"]
        .as_u64()
        .unwrap();
    let shown = text
        .lines()
        .find_map(|l| l.strip_prefix("memory    ND 0 HBM 0 "))
        .and_then(|l| l.split(", ").nth(1))
        .and_then(|f| f.strip_suffix(" GiB free"))
        .unwrap_or_else(|| panic!("{text}"));
    let tenths: u64 = shown.replace('.', "").parse().unwrap();
    assert!(tenths * GIB / 10 <= free, "{shown} GiB shown, {free} free");
    assert!(
        (tenths + 1) * GIB / 10 > free,
        "{shown} GiB shown, {free} free"
    );
}

/// Issue 40 row 15: `load` and `plan` show one state with one figure,
/// rounded down as everything is (load said 15.9 GiB free where plan said
/// 15.8 of the same bytes). Several scratchpad sizes put the free bytes at
/// every tenth's offset, so some round differently up and down.
#[test]
fn load_and_plan_round_the_same_free_bytes_alike() {
    let dir = scratch("rounding");
    let mut differ = 0;
    for k in 1..8u64 {
        let f = write_neff(&dir, &format!("r{k}"), k * (16 << 20));
        let load = |json: bool| {
            let mut a = vec!["load", f.as_str()];
            if json {
                a.push("--json");
            }
            neffld(&a, &[])
        };
        let free = json(&load(true))["memory"]["hbm"][0]["free"]
            .as_u64()
            .unwrap();
        // Independent of the code under test: tenths of a GiB, down.
        let tenths = free * 10 / GIB;
        let down = format!("{}.{} GiB free", tenths / 10, tenths % 10);
        let nearest = format!("{:.1} GiB free", free as f64 / GIB as f64);
        differ += usize::from(down != nearest);
        let text = String::from_utf8(load(false).stdout).unwrap();
        assert!(
            text.contains(&format!("used, {down} of ")),
            "{down}: {text}"
        );
        let planned = neffld(&["plan", &format!("{f}@0"), "--no-io-tensors"], &[]);
        let text = String::from_utf8(planned.stdout).unwrap();
        let line = text.lines().find(|l| l.starts_with("memory    ")).unwrap();
        assert!(line.contains("ND 0 HBM 0 "), "{line}");
        assert!(line.contains(&format!("used, {down}")), "{down}: {line}");
    }
    assert!(differ > 0, "no size rounded differently up and down");
}

/// Issue 40 row 15: a NEFF cut short is reported as damaged — its step,
/// the JSON error's `damaged`, a line saying no setting loads it — never
/// as a plan that "does not fit" with "no fix" (nor advice to drop it).
#[test]
fn a_damaged_neff_in_a_plan_is_named_damaged() {
    let dir = scratch("damaged");
    let whole = write_neff(&dir, "whole", 0);
    let cut = dir.join("cut.neff");
    let bytes = std::fs::read(&whole).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() - 100]).unwrap();
    let cut = cut.to_str().unwrap();
    let args = |json: bool| {
        let mut a = vec![
            "plan".to_string(),
            "--instance".into(),
            "trn2.3xlarge".into(),
            format!("{whole}@0"),
            format!("{cut}@0"),
        ];
        if json {
            a.push("--json".into());
        }
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        neffld(&refs, &[])
    };
    let out = args(true);
    assert_eq!(out.status.code(), Some(1));
    let doc = json(&out);
    let error = &doc["steps"][1]["error"];
    assert_eq!(error["damaged"], true, "{error}");
    assert_eq!(error["stage"], "container", "{error}");
    assert_eq!(doc["steps"][0]["error"], Value::Null);
    assert_eq!(doc["no_fix"], Value::Null, "{doc}");
    assert_eq!(doc["advice"], serde_json::json!([]));
    let text = String::from_utf8(args(false).stdout).unwrap();
    let fits = text.lines().find(|l| l.starts_with("fits ")).unwrap();
    assert!(fits.contains("the NEFF is damaged"), "{fits}");
    assert!(
        text.contains("cut.neff is damaged, not short of memory"),
        "{text}"
    );
    assert!(!text.contains("no fix"), "{text}");
    // A whole NEFF refused for memory is not damaged.
    let doc = json(&neffld(
        &[
            "plan",
            "--instance",
            "trn2.3xlarge",
            "--tensor",
            "t=30GiB@0",
            "--json",
        ],
        &[],
    ));
    assert_eq!(doc["steps"][0]["error"]["damaged"], false);
}

/// Issue 40 row 15: a refusal with more bytes free than it asked is
/// headed by why (one contiguous block, the largest is ...), not by the
/// free bytes the runtime's message names, thirty lines before the reason.
#[test]
fn a_refusal_headline_carries_its_reason() {
    let out = neffld(
        &[
            "plan",
            "--instance",
            "trn2.3xlarge",
            "--tensor",
            "a=6GiB@0",
            "--tensor",
            "b=6GiB@0",
            "--tensor",
            "c=6GiB@0",
            "--free",
            "b@0",
            "--tensor",
            "d=7.5GiB@0",
        ],
        &[],
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines().skip_while(|l| !l.starts_with("fits "));
    let fits = lines.next().unwrap();
    assert!(
        fits.contains("refused [NRT_RESOURCE (4)]: ")
            && fits.contains(
                "the request of 7.500GB needs one contiguous block and the largest is 6.000GB"
            ),
        "{fits}"
    );
    // The runtime's message follows on the next line, whole.
    let message = lines.next().unwrap();
    assert!(
        message
            .trim_start()
            .starts_with("Failed to allocate 8053063680 bytes"),
        "{message}"
    );
}

/// A variable's value the runtime refuses is stage `config` in a plan, as
/// in a load (a plan said `usage`), from the environment or from `--env`.
#[test]
fn a_refused_variable_is_a_config_failure_in_a_plan_too() {
    let demo = demo();
    for (env, args) in [
        (vec![("NEURON_RT_CONTIGUOUS_SCRATCHPAD", "maybe")], vec![]),
        (vec![("NEFFLD_MAX_STEPS", "abc")], vec![]),
        (
            vec![],
            vec!["--env", "NEURON_RT_CONTIGUOUS_SCRATCHPAD=maybe"],
        ),
    ] {
        let mut all = vec!["plan", "--json", demo.as_str()];
        all.extend(&args);
        let out = neffld(&all, &env);
        let doc = json(&out);
        assert_eq!(out.status.code(), Some(2), "{doc}");
        assert_eq!(doc["error"]["stage"], "config", "{env:?} {args:?}: {doc}");
    }
}

/// `--env NEFFLD_MAX_STEPS=N` sets the step ceiling as the environment
/// does (the ceiling's own message names the variable; `--env` refused it
/// as "not a variable the runtime reads here"); a deployment file cannot
/// set the ceiling that bounds its own reading, and says so.
#[test]
fn the_step_ceiling_is_set_with_env_not_in_the_file() {
    let demo = demo();
    let load = format!("{demo}@0-3");
    let run = |ceiling: &str| {
        neffld(
            &[
                "plan",
                "--instance",
                "trn1.32xlarge",
                "--env",
                ceiling,
                &load,
            ],
            &[],
        )
    };
    let out = run("NEFFLD_MAX_STEPS=3");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("more than 3 steps"), "{err}");
    assert_eq!(run("NEFFLD_MAX_STEPS=4").status.code(), Some(0));
    let dir = scratch("steps-env");
    let toml = dir.join("d.toml");
    std::fs::write(
        &toml,
        format!("instance = \"trn1.32xlarge\"\n[env]\nNEFFLD_MAX_STEPS = 4\n[[step]]\nload = \"{demo}\"\n"),
    )
    .unwrap();
    let out = neffld(&["plan", toml.to_str().unwrap()], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("d.toml line 3: NEFFLD_MAX_STEPS bounds the deployment file"),
        "{err}"
    );
}

/// A deployment file's `solve` and `[env]` values that are refused are
/// named by their file and line, as its steps are (they were told as if
/// `--solve` had been typed, or with no place at all); the same values
/// given on the command line over the file are named as the command
/// line's.
#[test]
fn a_deployment_files_solve_and_variables_are_named_by_their_line() {
    let dir = scratch("solve-env-lines");
    let toml = dir.join("d.toml");
    let step = "[[step]]\ntensor = \"kv\"\nsize = 4096\ncores = 0\n";
    let run = |text: &str, more: &[&str]| {
        std::fs::write(&toml, text).unwrap();
        let mut args = vec!["plan", toml.to_str().unwrap()];
        args.extend(more);
        let out = neffld(&args, &[]);
        assert_eq!(out.status.code(), Some(2));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let solve = format!("instance = \"trn2.3xlarge\"\nsolve = \"kv@0-9\"\n{step}");
    let err = run(&solve, &[]);
    assert!(
        err.contains("d.toml line 2: logical core 4 is not on this instance"),
        "{err}"
    );
    let err = run(&solve, &["--solve", "kv@0-5"]);
    assert!(err.contains("--solve 'kv@0-5': logical core 4"), "{err}");
    let env =
        format!("instance = \"trn2.3xlarge\"\n[env]\nNEURON_SCRATCHPAD_PAGE_SIZE = 4096\n{step}");
    let err = run(&env, &[]);
    assert!(
        err.contains("d.toml line 3: invalid value \"4096\" for NEURON_SCRATCHPAD_PAGE_SIZE"),
        "{err}"
    );
    let err = run(&env, &["--env", "NEURON_SCRATCHPAD_PAGE_SIZE=5000"]);
    assert!(
        err.contains("plan: config failed: invalid value \"5000\"") && !err.contains("d.toml"),
        "{err}"
    );
}

/// matmul_large on one logical core of a trn2.3xlarge (two physical cores
/// of HBM 0): its Shared Scratchpad is each subgraph's need — the largest
/// `backing_variable_off + size` of its virtual variables, read here from
/// the NEFF's own def.json files — rounded up to the line's page: 64 MiB
/// steps of the contiguous region by default (2.34), 512 MiB pages on 2.30
/// or with `NEURON_RT_CONTIGUOUS_SCRATCHPAD=0`.
#[test]
fn the_shared_scratchpad_follows_the_line() {
    let neff =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/fixtures/matmul_large.neff");
    let neff = neff.to_str().unwrap();
    let dir = scratch("contiguous");
    let tree = dir.join("tree");
    let out = neffld(&["extract", neff, "-o", tree.to_str().unwrap()], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let needs: Vec<u64> = ["sg00", "sg01"]
        .iter()
        .map(|sg| {
            let def: Value =
                serde_json::from_slice(&std::fs::read(tree.join(sg).join("def.json")).unwrap())
                    .unwrap();
            def["var"]
                .as_object()
                .unwrap()
                .values()
                .filter(|v| v["type"] == "virtual")
                .map(|v| v["backing_variable_off"].as_u64().unwrap() + v["size"].as_u64().unwrap())
                .max()
                .unwrap()
        })
        .collect();
    let held = |page: u64| -> u64 { needs.iter().map(|n| n.div_ceil(page) * page).sum() };
    let shared = |args: &[&str], env: &[(&str, &str)]| {
        let mut all = vec!["plan", "--json", "--instance", "trn2.3xlarge"];
        all.extend_from_slice(args);
        let at = format!("{neff}@0");
        all.push(&at);
        let doc = json(&neffld(&all, env));
        assert_eq!(doc["fits"], true, "{doc}");
        let hbm = &doc["memory"]["devices"][0]["hbms"][0]["columns"];
        (
            doc["runtime"].as_str().unwrap().to_string(),
            hbm["shared scratchpad"].as_u64().unwrap(),
            hbm["scratchpad"].as_u64().unwrap(),
        )
    };
    let contiguous = held(64 << 20);
    assert_eq!(contiguous, 128 << 20, "two 64 MiB steps");
    assert_eq!(
        shared(&[], &[]),
        (neffld::RuntimeLine::NEWEST.to_string(), contiguous, 0)
    );
    let paged = held(512 << 20);
    assert_eq!(paged, GIB, "two 512 MiB pages");
    assert_eq!(shared(&["--runtime", "2.30"], &[]).1, paged);
    assert_eq!(
        shared(&["--env", "NEURON_RT_CONTIGUOUS_SCRATCHPAD=0"], &[]).1,
        paged
    );
    assert_eq!(
        shared(&[], &[("NEURON_RT_CONTIGUOUS_SCRATCHPAD", "0")]).1,
        paged
    );
    let bad = neffld(
        &[
            "plan",
            "--instance",
            "trn2.3xlarge",
            "--env",
            "NEURON_RT_CONTIGUOUS_SCRATCHPAD=maybe",
            &format!("{neff}@0"),
        ],
        &[],
    );
    assert_eq!(bad.status.code(), Some(2));
    let e = String::from_utf8_lossy(&bad.stderr);
    assert!(
        e.contains("NEURON_RT_CONTIGUOUS_SCRATCHPAD") && e.contains("0/1"),
        "{e}"
    );
}

/// Ranks of one NEFF read as one line of the human report — their steps
/// (over one core or many), their rows of the usage table and their ids —
/// while the JSON keeps every step and the runtime's own log (the
/// refusal) every row.
#[test]
fn alike_steps_rows_and_ids_are_one_line_for_a_reader() {
    let demo = demo();
    let rank = format!("{demo}@0");
    let args = [
        "plan",
        "--instance",
        "trn1.2xlarge",
        &rank,
        &rank,
        &rank,
        "--tensor",
        "big=40GiB@0",
    ];
    let out = neffld(&args, &[]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let doc = json(&neffld(&[&args[..], &["--json"]].concat(), &[]));
    let kinds: Vec<String> = steps(&doc).into_iter().map(|s| s.0).collect();
    assert_eq!(kinds, ["load", "load", "load", "tensor"]);
    let section = |title: &str| section_of(&text, title);
    // The three loads read alike: one line numbered by their range; the
    // refused tensor its own.
    let steps = section("steps");
    assert_eq!(steps.len(), 4, "{steps:?}");
    assert!(steps[2].trim_start().starts_with("1-3  load "), "{steps:?}");
    assert!(steps[2].trim_end().ends_with(" ok"), "{steps:?}");
    assert!(
        steps[3].trim_start().starts_with("4  tensor big"),
        "{steps:?}"
    );
    assert!(steps[3].contains("refused [NRT_RESOURCE"), "{steps:?}");
    // Where the plan stopped: NEFF 1's row, then one line for 2 and 3, and
    // one line of ids.
    let table = section("memory where the plan stopped");
    let neff_rows: Vec<&&str> = table.iter().filter(|l| l.contains("\\_NEFF")).collect();
    assert_eq!(neff_rows.len(), 2, "{table:?}");
    assert!(neff_rows[0].starts_with("  \\_NEFF 1 "), "{table:?}");
    assert_eq!(*neff_rows[1], "  \\_NEFF 2-3: each as NEFF 1");
    assert!(
        table.contains(&format!("1-3: \"demo\" ({demo})").as_str()),
        "{table:?}"
    );
    // The runtime's log lists each NEFF, as the runtime does.
    let logged = text
        .lines()
        .skip_while(|l| !l.starts_with("the refusal"))
        .take_while(|l| !l.starts_with("steps"))
        .filter(|l| l.contains("\\_NEFF"))
        .count();
    assert_eq!(logged, 3, "{text}");
    // Ranks over several cores: one line listing them. A trn1.32xlarge is
    // 16 chips of 2 cores at LNC 1: cores 0-3 and 6 are chips 0, 1 and 3,
    // each chip's cores 0 and 1.
    let out = neffld(
        &[
            "plan",
            "--instance",
            "trn1.32xlarge",
            &format!("{demo}@0-3,6"),
            &rank,
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    let ranks: Vec<String> = text
        .lines()
        .filter(|l| l.contains(" load "))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        ranks,
        [format!("1-6 load {demo} 0-3,6 0-1,3 nc0-nc1 ok")],
        "{text}"
    );
    // Core 0 holds two of them, so its HBM's table and headroom are its
    // own; the HBMs of cores 1, 2, 3 and 6 hold one each and read alike.
    assert!(
        text.contains("\nthe next 3 HBMs in use, ND 1 HBM 0 to ND 3 HBM 0: each as ND 0 HBM 1\n"),
        "{text}"
    );
    assert_eq!(text.matches("\nND ").count(), 2, "{text}");
    let headroom = section_of(&text, "headroom");
    let rows: Vec<String> = headroom[2..]
        .iter()
        .take_while(|l| !l.trim_start().starts_with("core "))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(rows.len(), 2, "{headroom:?}");
    assert!(rows[0].starts_with("0 0 0 "), "{headroom:?}");
    assert!(rows[1].starts_with("1-3,6 0-1,3 0-1 "), "{headroom:?}");
    assert!(rows[1].ends_with("(each of 4 cores)"), "{headroom:?}");
}

/// The lines of the report's section that begins with `title`.
fn section_of<'t>(text: &'t str, title: &str) -> Vec<&'t str> {
    text.split("\n\n")
        .find(|s| s.starts_with(title))
        .unwrap_or_else(|| panic!("no {title}: {text}"))
        .lines()
        .collect()
}

/// Ranks at LNC 1 on a trn2 share each HBM two cores to one: the headroom
/// of each HBM is one row with a row per sharing core — and HBMs alike
/// are one line, which says the figures are each HBM's.
#[test]
fn ranks_sharing_hbms_read_as_one_headroom_line() {
    let dir = scratch("sharing");
    let rank = write_neff(&dir, "rank", 1 << 20);
    let plan = |cores: &str| {
        let at = format!("{rank}@{cores}");
        let out = neffld(
            &["plan", "--instance", "trn2.3xlarge", "--lnc", "1", &at],
            &[],
        );
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8(out.stdout).unwrap()
    };
    let text = plan("0-7");
    // A trn2.3xlarge: 8 cores, 4 HBMs, cores 2k and 2k+1 on HBM k.
    let headroom = section_of(&text, "headroom");
    let rows: Vec<String> = headroom[2..]
        .iter()
        .filter(|l| !l.trim_start().starts_with("core ") && !l.trim_start().starts_with('*'))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(rows.len(), 1, "{headroom:?}");
    assert!(rows[0].starts_with("0-7 0 0-3* "), "{headroom:?}");
    assert!(
        rows[0].ends_with("(each of 4 HBMs, 2 cores on each)"),
        "{headroom:?}"
    );
    assert!(
        text.contains("\nthe next 3 HBMs in use, ND 0 HBM 1 to ND 0 HBM 3: each as ND 0 HBM 0\n"),
        "{text}"
    );
    // Two ranks on HBM 0 and one on HBM 1: unlike, so a row each, the
    // sharing core's saying so.
    let text = plan("0-2");
    let headroom = section_of(&text, "headroom");
    assert!(
        headroom
            .iter()
            .any(|l| l.contains("(the HBM of core 0: its figures are shared, not more)")),
        "{headroom:?}"
    );
    assert!(!text.contains("(each of"), "{text}");
    // Two HBMs alike (cores 0-3 on HBMs 0 and 1): the second is one line.
    let text = plan("0-3");
    assert!(
        text.contains("\nND 0 HBM 1: as ND 0 HBM 0\n") && !text.contains("the next 1 HBMs"),
        "{text}"
    );
}

/// Two cores on one HBM whose copies of a NEFF differ (one already holds
/// its shared scratchpad pages, so a copy there costs less) each show their
/// own count, in the text and the map: the text showed only the first
/// core's ("0"), though a copy on the other core fits. The map's headroom
/// names the HBMs of each line and rounds free bytes down, as the text.
#[test]
fn cores_sharing_an_hbm_show_their_own_copies() {
    let dir = scratch("shared-copies");
    // A NEFF with a 256 MiB shared scratchpad variable: the first load on a
    // core takes its pages; a further one on that core reuses them.
    let paged = dir.join("paged.neff");
    std::fs::write(
        &paged,
        any_lnc_cayman("paged", 0, |def| {
            def["var"]["shared"] = serde_json::json!({
                "backing_variable_off": 0, "ops": [], "size": 256u64 << 20,
                "type": "virtual", "var_id": 7
            });
        }),
    )
    .unwrap();
    let paged = paged.to_str().unwrap().to_string();
    let map = dir.join("m.html");
    let run = |fills: &[u64], extra: &[String]| {
        let mut args: Vec<String> = ["plan", "--instance", "trn2.3xlarge", "--lnc", "1"]
            .map(String::from)
            .to_vec();
        args.push(format!("{paged}@1"));
        for (i, fill) in fills.iter().enumerate() {
            args.extend(["--tensor".into(), format!("f{i}={fill}@1")]);
        }
        // Core 0 in the plan, with no scratchpad page of its own.
        args.extend(["--tensor".into(), "t=4096@0".into()]);
        args.extend(extra.iter().cloned());
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        neffld(&refs, &[])
    };
    let doc = json(&run(&[4096], &["--json".into()]));
    // Fill both pools to 256 MiB, under one scratchpad page: one more load
    // fits on core 1 (its page is there), none on core 0 (it would need a
    // page of its own).
    let longest = |pool: &str| {
        doc["headroom"][0]["pools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["pool"] == pool)
            .unwrap()["longest"]
            .as_u64()
            .unwrap()
    };
    let fills = [
        4096 + longest("main") - (256 << 20),
        longest("small") - (256 << 20),
    ];
    let doc = json(&run(&fills, &["--json".into()]));
    let shown = |core: usize| {
        let c = &doc["headroom"][core]["copies"][0];
        let at_least = if c["at_least"] == true { "≥" } else { "" };
        format!("{at_least}{}", c["count"].as_u64().unwrap())
    };
    assert_eq!(shown(0), "0", "{}", doc["headroom"]);
    let on_core_1 = shown(1);
    assert_ne!(on_core_1, "0", "{}", doc["headroom"]);
    let out = run(&fills, &["--map".into(), map.to_str().unwrap().into()]);
    let text = String::from_utf8(out.stdout).unwrap();
    let row = section_of(&text, "headroom")
        .into_iter()
        .find(|l| l.trim_start().starts_with("1 "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        row.contains(&format!("   {on_core_1}   (on this core;")),
        "{row}"
    );
    let html = std::fs::read_to_string(&map).unwrap();
    assert!(
        html.contains(
            "<li>logical core 1 on ND 0 HBM 0: on this core, the HBM shared with an earlier one:"
        ) && html.contains(&format!("; {on_core_1} more of paged.neff</li>")),
        "{html}"
    );
}

/// A grouped list of cores longer than its heading widens its column: the
/// figures after it stay under their headings, in the steps and in the
/// headroom alike.
#[test]
fn grouped_columns_stay_under_their_headings() {
    let cores = "0-5,8,10-20,30";
    let at = format!("{}@{cores}", demo());
    let out = neffld(&["plan", "--instance", "trn1.32xlarge", &at], &[]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    // Where `word` ends in `line` (its first whole-word occurrence).
    let end_of = |line: &str, word: &str| {
        let at = line
            .match_indices(word)
            .map(|(i, _)| i)
            .find(|&i| {
                let after = line[i + word.len()..].chars().next();
                let before = line[..i].chars().next_back();
                before.is_none_or(|c| c == ' ') && after.is_none_or(|c| c == ' ')
            })
            .unwrap_or_else(|| panic!("no {word:?} in {line:?}"));
        line[..at + word.len()].chars().count()
    };
    let steps = section_of(&text, "steps");
    let (head, row) = (steps[1], steps[2]);
    assert!(row.contains(cores), "{steps:?}");
    assert_eq!(end_of(head, "core"), end_of(row, cores), "{steps:?}");
    // Two logical cores to a chip: the chips of those cores.
    assert_eq!(end_of(head, "ND"), end_of(row, "0-2,4-10,15"), "{steps:?}");
    let result = head.find("result").unwrap();
    assert_eq!(row.find(" ok").map(|i| i + 1), Some(result), "{steps:?}");
    let headroom = section_of(&text, "headroom");
    let (head, row) = (headroom[1], headroom[2]);
    assert!(row.contains(cores), "{headroom:?}");
    assert_eq!(end_of(head, "core"), end_of(row, cores), "{headroom:?}");
    let free = row.split_whitespace().nth(3).unwrap();
    assert_eq!(end_of(head, "free"), end_of(row, free) + 4, "{headroom:?}");
}

/// A solve asked of the empty instance answers (`neffld plan --instance
/// trn2.48xlarge --solve kv@0` said "the deployment has no step", exit 2),
/// and `--solve FILE@CORES` counts the copies that fit on those cores,
/// each listed core once (`@0,0,0` tried three loads and answered 3): the
/// count is checked by planning that many loads, which fit, and one more,
/// refused as the answer says.
#[test]
fn a_solve_on_the_empty_instance_counts_the_copies_that_fit() {
    let dir = scratch("solve-empty");
    let out = neffld(
        &[
            "plan",
            "--instance",
            "trn2.48xlarge",
            "--solve",
            "kv@0",
            "--json",
        ],
        &[],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = json(&out)["solve"]["bytes"].as_u64().unwrap();
    let kv = |size: u64| {
        let t = format!("kv={size}@0");
        neffld(
            &["plan", "--instance", "trn2.48xlarge", "--tensor", &t],
            &[],
        )
        .status
        .code()
    };
    assert_eq!((kv(bytes), kv(bytes + 4096)), (Some(0), Some(1)), "{bytes}");
    let out = neffld(
        &["plan", "--instance", "trn2.48xlarge", "--solve", "kv@0"],
        &[],
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("fits      nothing to fit: no step")
            && text.contains(&format!("solve     kv: at most {bytes} bytes"))
            && !text.contains("\nsteps\n"),
        "{text}"
    );

    let a = write_neff(&dir, "s", 2 << 30);
    let base = ["plan", "--instance", "trn2.3xlarge"];
    let asked = format!("{a}@0,0,0");
    let solved = neffld(&[&base[..], &["--solve", &asked, "--json"]].concat(), &[]);
    assert_eq!(
        solved.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&solved.stderr)
    );
    let doc = json(&solved);
    let solve = &doc["solve"];
    let n = solve["ranks"].as_u64().unwrap() as usize;
    assert!(n > 3, "{solve}");
    assert_eq!(
        solve["per_core"],
        serde_json::json!([{"core": 0, "copies": n}])
    );
    assert!(solve["ceiling"].is_null(), "{solve}");
    let copies = |k: usize| {
        let loads = vec![format!("{a}@0"); k];
        let words: Vec<&str> = loads.iter().map(String::as_str).collect();
        neffld(&[&base[..], &words, &["--json"]].concat(), &[])
    };
    assert_eq!(copies(n).status.code(), Some(0));
    let over = copies(n + 1);
    assert_eq!(over.status.code(), Some(1));
    let next = json(&over)["steps"][n]["error"].clone();
    assert_eq!(next["status"], "NRT_RESOURCE", "{next}");
    assert_eq!(solve["stopped"], next);

    // The human report and the map say the count, by core.
    let map = dir.join("solve.html");
    let out = neffld(
        &[
            &base[..],
            &["--solve", &asked, "--map", map.to_str().unwrap()],
        ]
        .concat(),
        &[],
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text.lines().find(|l| l.starts_with("solve")).unwrap();
    assert!(
        line.contains(&format!(
            "{n} copies fit on core 0; one more refused [NRT_RESOURCE"
        )),
        "{line}"
    );
    let html = std::fs::read_to_string(&map).unwrap();
    assert!(
        html.contains(&format!(
            "{n} copies fit ({n} on core 0); one more refused [NRT_RESOURCE]"
        )),
        "{html}"
    );

    // Without @: every logical core of the instance, each in turn.
    let solved = neffld(&[&base[..], &["--solve", &a, "--json"]].concat(), &[]);
    let solve = &json(&solved)["solve"];
    let per_core = solve["per_core"].as_array().unwrap();
    let cores: Vec<u64> = per_core
        .iter()
        .map(|c| c["core"].as_u64().unwrap())
        .collect();
    assert_eq!(
        cores,
        (0..4).collect::<Vec<_>>(),
        "trn2.3xlarge at LNC 2: {solve}"
    );
    let total: u64 = per_core.iter().map(|c| c["copies"].as_u64().unwrap()).sum();
    assert_eq!(solve["ranks"].as_u64(), Some(total));
    assert!(
        per_core
            .iter()
            .all(|c| c["copies"].as_u64() == Some(n as u64)),
        "{solve}"
    );
}

/// A NEFF refused for the logical-core size it was compiled for is
/// advised that size, re-planned as given: the real matmul_large (LNC 2)
/// at LNC 1, whose refusal names the fix, and an LNC-1 NEFF at trn2's
/// default LNC 2. Neither plan says that nothing considered helps.
#[test]
fn a_neff_of_another_logical_core_size_is_advised_its_own() {
    let dir = scratch("lnc-advice");
    let large = format!("{}/matmul_large.neff@0,0", neffld_testkit::FIXTURES);
    let lnc1 = dir.join("lnc1.neff");
    let synth = neffld_testkit::Synth::dynamic_cayman_n(1);
    std::fs::write(
        &lnc1,
        neffld_testkit::lnc_writer(1).write(&synth.member_list()),
    )
    .unwrap();
    let lnc1 = format!("{}@0", lnc1.display());
    for (load, lnc, advised) in [(&large, "1", "2"), (&lnc1, "2", "1")] {
        let args = ["plan", "--instance", "trn2.3xlarge", "--lnc", lnc, load];
        let out = neffld(&[&args[..], &["--json"]].concat(), &[]);
        assert_eq!(out.status.code(), Some(1), "{load} at LNC {lnc}");
        let doc = json(&out);
        assert_eq!(doc["steps"][0]["error"]["status"], "NRT_INVALID", "{doc}");
        let lnc_advice = advice_of_kind(&doc, "lnc");
        assert_eq!(lnc_advice.len(), 1, "{doc}");
        let a = lnc_advice[0];
        assert_eq!(a["fits"], true, "{a}");
        assert!(
            argv_of(a).windows(2).any(|w| w == ["--lnc", advised]),
            "{a}"
        );
        assert!(
            a["reason"]
                .as_str()
                .unwrap()
                .contains(&format!("was compiled for LNC {advised}")),
            "{a}"
        );
        assert!(doc["no_fix"].is_null(), "{doc}");
        advice_replans_as_said(&doc);
        // Headroom does not count it as "0 more fit": it cannot load here
        // however much is free, for the reason the step was refused.
        let copies = &doc["headroom"][0]["copies"][0];
        assert_eq!(copies["count"], 0, "{copies}");
        assert_eq!(copies["refused"], doc["steps"][0]["error"], "{copies}");
        let text = neffld(&args, &[]);
        let text = String::from_utf8(text.stdout).unwrap();
        let headroom = section_of(&text, "headroom");
        assert!(headroom[2].trim_end().ends_with(" -"), "{headroom:?}");
        let name = Path::new(load.split('@').next().unwrap()).display();
        assert!(
            headroom.iter().any(|l| l.starts_with(&format!(
                "  {name} cannot load on core 0: refused [NRT_INVALID (2)]"
            ))),
            "{headroom:?}"
        );
    }
}

/// The NEFF the "without" advice names is the one holding most with its
/// IO tensors, which leaving it out frees too: the real matmul_large
/// (4 MiB of model, 4 GiB of IO tensors) outweighs a NEFF of 2 GiB of
/// model and little IO, which models alone would name. The reason gives
/// the IO bytes the plan's own tensor list holds for its loads.
#[test]
fn the_dominant_neff_is_weighed_with_its_io_tensors() {
    let dir = scratch("dominant-io");
    let big = write_neff(&dir, "big", 2 * GIB);
    let large = format!("{}/matmul_large.neff", neffld_testkit::FIXTURES);
    let out = neffld(
        &[
            "plan",
            "--instance",
            "trn2.3xlarge",
            &format!("{big}@0"),
            &format!("{large}@1"),
            "--json",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    let doc = json(&out);
    let without = advice_of_kind(&doc, "without_neff");
    assert_eq!(without.len(), 1, "{doc}");
    assert_eq!(
        without[0]["change"],
        format!("without {large}").as_str(),
        "{}",
        without[0]
    );
    let id = doc["neffs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["file"] == large.as_str())
        .unwrap()["id"]
        .clone();
    let io: u64 = doc["tensors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["io_of"] == id)
        .map(|t| t["size"].as_u64().unwrap())
        .sum();
    assert!(io > 4 * GIB, "{io}");
    let reason = without[0]["reason"].as_str().unwrap();
    let gb = format!("{:.3}GB of their IO tensors", io as f64 / GIB as f64);
    assert!(reason.contains(&gb), "{reason} lacks {gb}");
    advice_replans_as_said(&doc);
}

/// Under the default line, the newest, a plan holds exactly what its row
/// reserves at start (2.35's 64 MiB for DMA profiling, SDK 2.33's runtime
/// notes) more per NeuronCore than under 2.34: on the first physical core
/// of each logical core, under Profiler Buffers, and its notes say why;
/// `NEFFLD_DMA_PROFILING=0` plans as 2.34 does and says what it left out.
#[test]
fn the_newest_line_holds_its_reservation_more_per_neuroncore_and_says_why() {
    use neffld::RuntimeLine;
    let reserved = neffld_testkit::reserved_per_logical_core(RuntimeLine::NEWEST)
        - neffld_testkit::reserved_per_logical_core(RuntimeLine::V2_34);
    assert_eq!(
        neffld_testkit::reserved_per_logical_core(RuntimeLine::V2_35),
        64 * MIB,
        "the notes' 64 MB per NeuronCore"
    );
    let large = format!("{}/matmul_large.neff@0", neffld_testkit::FIXTURES);
    let plan = |args: &[&str], env: &[(&str, &str)]| {
        let mut all = vec!["plan", "--json", "--instance", "trn2.3xlarge", &large];
        all.extend_from_slice(args);
        let out = neffld(&all, env);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        json(&out)
    };
    // Device memory used by each physical core, and by each HBM (each
    // holds one logical core of two physical cores at LNC 2).
    let used = |doc: &Value| -> (Vec<u64>, Vec<u64>) {
        let mut pcores = vec![0; 8];
        let mut hbms = Vec::new();
        for hbm in doc["memory"]["devices"][0]["hbms"].as_array().unwrap() {
            let mut sum = 0;
            for c in hbm["cores"].as_array().unwrap() {
                let u = c["used"].as_u64().unwrap();
                pcores[c["pcore"].as_u64().unwrap() as usize] = u;
                sum += u;
            }
            hbms.push(sum);
        }
        (pcores, hbms)
    };
    let newest = plan(&[], &[]);
    let older = plan(&["--runtime", "2.34"], &[]);
    assert_eq!(newest["runtime"], RuntimeLine::NEWEST.to_string());
    let ((p_new, h_new), (p_old, h_old)) = (used(&newest), used(&older));
    assert_eq!(h_new.len(), 4, "four logical cores, one per HBM");
    for (n, o) in h_new.iter().zip(&h_old) {
        assert_eq!(n - o, reserved);
    }
    for (c, (n, o)) in p_new.iter().zip(&p_old).enumerate() {
        assert_eq!(n - o, if c % 2 == 0 { reserved } else { 0 }, "pcore {c}");
    }
    // Under the usage table's Profiler Buffers, which neuron-monitor and
    // neuron-top count as runtime memory.
    let hbms = |doc: &Value| {
        doc["memory"]["devices"][0]["hbms"]
            .as_array()
            .unwrap()
            .clone()
    };
    for (n, o) in hbms(&newest).iter().zip(&hbms(&older)) {
        let (n, o) = (&n["cores"][0], &o["cores"][0]);
        assert_eq!(n["columns"]["profiler buffers"], reserved, "{n}");
        let runtime = |c: &Value| c["categories"]["runtime_memory"].as_u64().unwrap();
        assert_eq!(runtime(n) - runtime(o), reserved, "{n}");
    }
    // It is taken from the main pool, where the driver sends a request of
    // its size: the largest tensor a core can still take is that much
    // smaller, and the small pool is untouched.
    let room = |doc: &Value| -> Vec<(u64, u64)> {
        doc["headroom"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                let small = h["pools"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|p| p["pool"] == "small")
                    .unwrap();
                (
                    h["largest_tensor"].as_u64().unwrap(),
                    small["free"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let (r_new, r_old) = (room(&newest), room(&older));
    assert!(!r_new.is_empty());
    for (n, o) in r_new.iter().zip(&r_old) {
        assert_eq!((o.0 - n.0, n.1), (reserved, o.1));
    }
    let notes = newest["notes"].as_array().unwrap();
    assert_eq!(notes.len(), 1, "{notes:?}");
    let note = notes[0].as_str().unwrap();
    let mib = |b: u64| format!("{} MiB", b / MIB);
    assert!(
        note.contains(&format!(
            "{} per NeuronCore at start for host-device DMA profiling",
            mib(reserved)
        )) && note.contains(&format!("{} on the 4 logical cores", mib(4 * reserved)))
            && note.contains("NEFFLD_DMA_PROFILING=0"),
        "{note}"
    );
    assert_eq!(older["notes"], serde_json::json!([]));
    // The text says it too.
    let text = neffld(&["plan", "--instance", "trn2.3xlarge", &large], &[]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains(&format!("note      {note}")), "{text}");
    // Off: as 2.34, and said.
    let off = plan(&[], &[("NEFFLD_DMA_PROFILING", "0")]);
    assert_eq!(used(&off), used(&older));
    let note = off["notes"][0].as_str().unwrap();
    assert!(
        note.contains("NEFFLD_DMA_PROFILING=0 leaves it out here"),
        "{note}"
    );
    let off = plan(&["--env", "NEFFLD_DMA_PROFILING=0"], &[]);
    assert_eq!(used(&off), used(&older));
}

/// A path as a plan names its file: `./-x` and `-x` are one file.
fn same_path(a: &Path, b: &Path) -> bool {
    let parts = |p: &Path| -> Vec<std::ffi::OsString> {
        p.components()
            .filter(|c| *c != std::path::Component::CurDir)
            .map(|c| c.as_os_str().to_owned())
            .collect()
    };
    parts(a) == parts(b)
}

/// Issue 40 row 4: every command line the planner writes reads back,
/// through the command's own parser, to the steps it was written from —
/// files that look like flags (`--tensor=x=4096`, `-lead.neff`, `-`), hold
/// an `@`, a quote or bytes that are not UTF-8; tensors named like flags
/// (`-t`, `--free`); runs on cores and loads on the next free core,
/// interleaved (a file named `--tensor=x=4096` re-ran as a tensor, and
/// `-lead.neff@0` as "unexpected argument '-l'").
#[test]
fn every_command_line_the_planner_writes_reads_back_as_its_steps() {
    use neffld::plan::{Deployment, Step};
    use std::os::unix::ffi::OsStringExt;
    let mut files: Vec<PathBuf> = [
        "--tensor=x=4096",
        "-lead.neff",
        "-",
        "-@0.neff",
        "m@v2.neff",
        "a b'c\".neff",
        "/abs/-x.neff",
        "=eq.neff",
    ]
    .into_iter()
    .map(PathBuf::from)
    .collect();
    files.push(PathBuf::from(std::ffi::OsString::from_vec(
        b"\xff.neff".to_vec(),
    )));
    let names = ["-t", "kv", "a@b", "x y", "--free", "-"];
    let mut steps = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let name = names[i % names.len()].to_string();
        let core = i as u32 % 3;
        steps.extend([
            Step::Load {
                file: f.clone(),
                vnc: Some(core),
            },
            Step::Load {
                file: f.clone(),
                vnc: Some(core + 1),
            },
            Step::Tensor {
                name: name.clone(),
                size: 4096 * (i as u64 + 1),
                vnc: core,
            },
            Step::Load {
                file: f.clone(),
                vnc: None,
            },
            Step::Unload {
                file: f.clone(),
                vnc: core + 1,
            },
            Step::Free { name, vnc: core },
        ]);
    }
    let d = Deployment {
        instance: Some(neffld::instance::Instance::named("trn2.48xlarge").unwrap()),
        io_tensors: true,
        steps,
        ..Deployment::default()
    };
    let argv = d.argv(None);
    let (back, _) = neffld_cli::plan_command(argv[2..].iter().cloned())
        .unwrap_or_else(|f| panic!("{}: {argv:?}", f.message));
    assert_eq!(back.instance, d.instance);
    assert_eq!(back.steps.len(), d.steps.len(), "{argv:?}");
    for (was, is) in d.steps.iter().zip(&back.steps) {
        let alike = match (was, is) {
            (Step::Load { file: a, vnc: x }, Step::Load { file: b, vnc: y }) => {
                same_path(a, b) && x == y
            }
            (Step::Unload { file: a, vnc: x }, Step::Unload { file: b, vnc: y }) => {
                a == b && x == y
            }
            (a, b) => a == b,
        };
        assert!(alike, "{was:?} read back as {is:?}: {argv:?}");
    }
}

/// Issue 40 row 4, from outside: a deployment beside a NEFF named
/// `--tensor=x=4096` and one named `-lead.neff`. The advice's command line
/// re-runs, as printed and as `argv`, to the plan it describes (it planned
/// a tensor and no NEFF), and the map shows it quoted as the text does.
#[test]
fn advice_beside_files_named_like_flags_re_runs_as_said() {
    let dir = scratch("flag-names");
    // Real NEFFs: matmul_large holds 4 GiB of inputs and outputs a load.
    std::fs::copy(fixture("matmul_small.neff"), dir.join("--tensor=x=4096")).unwrap();
    std::fs::copy(fixture("matmul_large.neff"), dir.join("-lead.neff")).unwrap();
    std::fs::write(
        dir.join("d.toml"),
        "instance = \"trn2.3xlarge\"\n[[step]]\nload = \"--tensor=x=4096\"\ncores = 0\n\
         [[step]]\nload = \"-lead.neff\"\ncores = 0\nrepeat = 6\n",
    )
    .unwrap();
    let run = |args: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_neffld"));
        c.current_dir(&*dir).args(args);
        for v in neffld::config::VARIABLES {
            c.env_remove(v.name);
        }
        c.output().unwrap()
    };
    let doc = json(&run(&["plan", "d.toml", "--json", "--map", "m.html"]));
    assert_eq!(doc["fits"], false, "{doc}");
    let advice = doc["advice"].as_array().unwrap();
    assert!(!advice.is_empty(), "{doc}");
    let text = String::from_utf8(run(&["plan", "d.toml"]).stdout).unwrap();
    let map = std::fs::read_to_string(dir.join("m.html")).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_once("; run: ").map(|(_, r)| r))
        .collect();
    assert_eq!(lines.len(), advice.len(), "{text}");
    for (a, line) in advice.iter().zip(lines) {
        let argv = argv_of(a);
        let mut args = argv[1..].to_vec();
        args.push("--json");
        let again = json(&run(&args));
        assert_eq!(again["fits"], a["fits"], "{argv:?}");
        // The same NEFFs, by name: no NEFF was planned as a tensor.
        let loads = |d: &Value| -> Vec<String> {
            d["steps"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|s| s["kind"] == "load")
                .map(|s| {
                    s["file"]
                        .as_str()
                        .unwrap()
                        .trim_start_matches("./")
                        .to_string()
                })
                .collect()
        };
        assert!(
            loads(&again).iter().any(|f| f == "--tensor=x=4096"),
            "{again}"
        );
        assert!(
            again["steps"]
                .as_array()
                .unwrap()
                .iter()
                .all(|s| s["kind"] != "tensor"),
            "{again}"
        );
        // The text's `run:` line, through a shell, is the same words.
        let words = Command::new("bash")
            .args(["-c", &format!("printf '%s\\n' {line}")])
            .output()
            .unwrap();
        let words: Vec<&str> = std::str::from_utf8(&words.stdout)
            .unwrap()
            .lines()
            .collect();
        assert_eq!(words, argv, "{line}");
        assert!(map.contains(line), "{line}");
    }
}
