//! `neffld plan --monitor` and `--sysfs`: the deployment as neuron-monitor
//! reports it and as the driver's sysfs tree shows it, each figure held
//! against the plan's own `--json` document (its usage-table columns and
//! the allocator's held bytes: another path through the library) and the
//! NEFF's own header (`inspect`); read back as a monitoring tool reads
//! them (each line parsed as JSON on its own, each counter file as a
//! decimal number); the stream; and the files that cannot be written.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{fixture, scratch};

fn neffld(args: &[&str]) -> Output {
    command(args).output().expect("run neffld")
}

fn command(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_neffld"));
    c.args(args);
    for v in neffld::config::VARIABLES {
        c.env_remove(v.name);
    }
    c
}

/// `neffld plan --instance trn2.3xlarge ARGS...`.
fn plan_trn2(args: &[&str]) -> Output {
    let mut all = vec!["plan", "--instance", "trn2.3xlarge"];
    all.extend_from_slice(args);
    neffld(&all)
}

fn matmul() -> String {
    fixture("matmul_large.neff").display().to_string()
}

fn parse(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(bytes)))
}

/// The one report of a `--monitor` file, read as a frontend reads the
/// stream: each line on its own.
fn monitor_lines(text: &str) -> Vec<Value> {
    assert!(text.ends_with('\n'), "a report is a line");
    text.lines().map(|l| parse(l.as_bytes())).collect()
}

/// A counter file, read as a tool reads it: trimmed, a decimal number.
fn number(path: &Path) -> u64 {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.trim()
        .parse()
        .unwrap_or_else(|e| panic!("{}: {text:?}: {e}", path.display()))
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// The plan's own figures of every physical core, from its `--json`
/// document: (`ND`, core) → (bytes used, bytes by usage-table column).
fn plan_cores(doc: &Value) -> BTreeMap<(u64, u64), (u64, BTreeMap<String, u64>)> {
    let mut cores = BTreeMap::new();
    for d in doc["memory"]["devices"].as_array().unwrap() {
        for h in d["hbms"].as_array().unwrap() {
            for c in h["cores"].as_array().unwrap() {
                let cols = c["columns"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(k, v)| (k.clone(), u(v)))
                    .collect();
                cores.insert((u(&d["device"]), u(&c["pcore"])), (u(&c["used"]), cols));
            }
        }
    }
    cores
}

const CATEGORIES: [&str; 11] = [
    "model_code",
    "tensors",
    "constants",
    "model_shared_scratchpad",
    "runtime_memory",
    "driver_memory",
    "collectives",
    "nonshared_scratchpad",
    "notifications",
    "dma_rings",
    "uncategorized",
];

/// The check from outside: two loads of matmul_large on a trn2.3xlarge
/// (LNC 2: logical cores 0 and 1, physical cores 0-1 and 2-3) written as
/// one neuron-monitor report and one sysfs tree, held against the plan's
/// own document.
#[test]
fn two_loads_are_one_report_and_one_tree_that_add_up_to_the_plan() {
    let dir = scratch("monitor-two-loads");
    let m = dir.join("m.json");
    let s = dir.join("s");
    let (a, b) = (format!("{}@0", matmul()), format!("{}@1", matmul()));
    let out = plan_trn2(&[
        "--monitor",
        m.to_str().unwrap(),
        "--sysfs",
        s.to_str().unwrap(),
        "--json",
        &a,
        &b,
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan = parse(&out.stdout);
    assert_eq!(plan["written"]["monitor"], m.to_str().unwrap());
    assert_eq!(plan["written"]["sysfs"], s.to_str().unwrap());
    assert_eq!(plan["written"]["map"], Value::Null);
    let cores = plan_cores(&plan);
    let lnc = u(&plan["instance"]["lnc"]);
    assert_eq!(lnc, 2);

    let lines = monitor_lines(&std::fs::read_to_string(&m).unwrap());
    assert_eq!(lines.len(), 1, "one report");
    let r = &lines[0];
    assert_eq!(r["instance_info"]["instance_type"], "trn2.3xlarge");
    let hw = &r["neuron_hardware_info"];
    assert_eq!(
        (
            hw["neuron_device_type"].as_str(),
            hw["neuroncore_version"].as_str(),
            u(&hw["neuron_device_count"]),
            u(&hw["neuroncore_per_device_count"]),
            u(&hw["logical_neuroncore_config"]),
            u(&hw["neuron_device_memory_size"]),
        ),
        (Some("trainium2"), Some("v3d"), 1, 4, 2, 96 << 30)
    );
    let runtimes = r["neuron_runtime_data"].as_array().unwrap();
    assert_eq!(runtimes.len(), 1, "the plan is one process");
    let used = &runtimes[0]["report"]["memory_used"];
    let bytes = &used["neuron_runtime_used_bytes"];
    let per_core = bytes["usage_breakdown"]["neuroncore_memory_usage"]
        .as_object()
        .unwrap();
    // Every logical core the runtime sees, zeros and all.
    assert_eq!(
        per_core.keys().collect::<Vec<_>>(),
        ["0", "1", "2", "3"],
        "the instance's logical cores"
    );
    let mut device = 0;
    for (key, cats) in per_core {
        let lcore: u64 = key.parse().unwrap();
        let cat = |k: &str| u(&cats[k]);
        let sum: u64 = [
            "constants",
            "model_code",
            "model_shared_scratchpad",
            "runtime_memory",
            "tensors",
        ]
        .iter()
        .map(|k| cat(k))
        .sum();
        assert_eq!(cats.as_object().unwrap().len(), 5, "{cats}");
        // The plan's own figures of the logical core's physical cores.
        let (mut used, mut col) = (0, BTreeMap::<String, u64>::new());
        for p in lcore * lnc..lcore * lnc + lnc {
            let (c_used, c_cols) = &cores[&(0, p)];
            used += c_used;
            for (k, v) in c_cols {
                *col.entry(k.clone()).or_default() += v;
            }
        }
        assert_eq!(
            sum, used,
            "core {key}: the five categories are the core's memory"
        );
        assert_eq!(cat("constants"), col["model constants"], "core {key}");
        assert_eq!(cat("tensors"), col["tensors"], "core {key}");
        assert_eq!(
            cat("model_shared_scratchpad"),
            col["shared scratchpad"],
            "core {key}"
        );
        device += sum;
    }
    assert_eq!(
        u(&bytes["neuron_device"]),
        device,
        "the device total is its cores'"
    );
    let planned: u64 = cores.values().map(|(used, _)| used).sum();
    assert_eq!(device, planned, "and the plan's whole memory");
    assert_eq!(u(&bytes["host"]), 0, "host memory is not planned");

    // The loaded models are the two loads, with the NEFF's own uuid.
    let inspect = parse(&neffld(&["inspect", "--json", &matmul()]).stdout);
    let models = used["loaded_models"].as_array().unwrap();
    let neffs = plan["neffs"].as_array().unwrap();
    assert_eq!(models.len(), 2);
    assert_eq!(neffs.len(), 2);
    for (model, neff) in models.iter().zip(neffs) {
        assert_eq!(model["model_id"], neff["id"]);
        assert_eq!(model["name"], neff["name"]);
        assert_eq!(model["uuid"], inspect["header"]["uuid"]);
        assert_eq!(model["is_running"], false);
        let sgs = model["subgraphs"].as_object().unwrap();
        assert_eq!(sgs.keys().collect::<Vec<_>>(), ["sg_00", "sg_01"]);
        let id = u(&neff["id"]);
        for (i, g) in sgs.values().enumerate() {
            let pcore = u(&g["neuroncore_index"]);
            assert_eq!(u(&g["neuron_device_index"]), u(&neff["device"]));
            assert_eq!(u(&neff["pcores"][i]), pcore, "subgraph {i} on its core");
            // What the plan says this NEFF holds on that core.
            let held = plan["memory"]["devices"][0]["hbms"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|h| h["cores"].as_array().unwrap())
                .find(|c| u(&c["pcore"]) == pcore)
                .and_then(|c| {
                    c["neffs"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|n| u(&n["id"]) == id)
                        .cloned()
                })
                .expect("the NEFF on its core");
            let cols: u64 = held["columns"].as_object().unwrap().values().map(u).sum();
            let mem = &g["memory_used_bytes"];
            let bd = &mem["usage_breakdown"]["neuron_device"];
            assert_eq!(u(&mem["neuron_device"]), cols, "subgraph {i} of {id}");
            let four: u64 = ["constants", "model_code", "runtime_memory", "tensors"]
                .iter()
                .map(|k| u(&bd[*k]))
                .sum();
            assert_eq!(four, cols);
            assert_eq!(u(&bd["constants"]), u(&held["columns"]["model constants"]));
        }
    }

    // The tree: each physical core's categories add up to its device_mem,
    // each HBM's cores to what the allocator holds on it.
    let nd = s.join("neuron0");
    assert_eq!(number(&nd.join("core_count")), 8);
    assert_eq!(
        std::fs::read_to_string(nd.join("info/architecture/arch_type")).unwrap(),
        "NDv3\n"
    );
    let mut held_by_core = BTreeMap::new();
    for core in 0..8u64 {
        let mem = nd.join(format!("neuron_core{core}/stats/memory_usage/device_mem"));
        let mut sum = 0;
        for c in CATEGORIES {
            let total = number(&mem.join(c).join("total"));
            assert!(number(&mem.join(c).join("peak")) >= total, "{c}");
            assert_eq!(total % 4096, 0, "the driver counts whole pages: {c}");
            sum += total;
        }
        assert_eq!(sum, number(&mem.join("total")), "core {core}");
        for zero in ["driver_memory", "uncategorized"] {
            assert_eq!(number(&mem.join(zero).join("total")), 0);
        }
        // Pages hold at least what was asked, and a core the runtime does
        // not see holds nothing.
        let asked = cores.get(&(0, core)).map_or(0, |c| c.0);
        assert!(sum >= asked, "core {core}: {sum} < {asked}");
        assert_eq!(sum == 0, asked == 0, "core {core}");
        let loads = number(&nd.join(format!(
            "neuron_core{core}/stats/other_info/model_load_count/total"
        )));
        assert_eq!(loads, u64::from(core < 4), "core {core}");
        held_by_core.insert(core, sum);
    }
    for h in plan["memory"]["devices"][0]["hbms"].as_array().unwrap() {
        let cores_of_hbm: u64 = h["cores"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| held_by_core[&u(&c["pcore"])])
            .sum();
        assert_eq!(cores_of_hbm, u(&h["held"]), "HBM {}", h["hbm"]);
    }
}

/// The tree as a tool walks it: every file of a counter directory is a
/// decimal number; every status counter of a core is there.
#[test]
fn every_counter_file_reads_as_a_number() {
    let dir = scratch("monitor-reader");
    let s = dir.join("s");
    let out = plan_trn2(&["--sysfs", s.to_str().unwrap(), &format!("{}@0", matmul())]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut files = Vec::new();
    let mut stack = vec![s.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                files.push(p);
            }
        }
    }
    let mut counters = 0;
    for f in &files {
        let rel = f.strip_prefix(&s).unwrap().to_string_lossy().into_owned();
        if rel.contains("/info/") || rel.ends_with("power/utilization") {
            continue;
        }
        number(f);
        counters += 1;
    }
    assert!(counters > 700, "{counters} counter files");
    let status = s.join("neuron0/neuron_core0/stats/status");
    for name in [
        "success",
        "failure",
        "resource_error",
        "invalid_error",
        "oob_error",
    ] {
        assert_eq!(number(&status.join(name).join("total")), 0, "{name}");
    }
    assert_eq!(
        std::fs::read_to_string(s.join("neuron0/stats/power/utilization")).unwrap(),
        "POWER_STATUS_NO_DATA,0,0.00,0.00,0.00\n"
    );
}

/// An unload leaves the memory gone and the peaks as they were: the
/// driver's counters remember.
#[test]
fn peaks_remember_what_an_unload_gave_back() {
    let dir = scratch("monitor-peak");
    let run = |tag: &str, extra: &[&str]| -> PathBuf {
        let s = dir.join(tag);
        let mut args = vec![
            "plan".to_string(),
            "--instance".into(),
            "trn2.3xlarge".into(),
            "--sysfs".into(),
            s.display().to_string(),
            format!("{}@0", matmul()),
        ];
        args.extend(extra.iter().map(|a| a.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = neffld(&args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        s
    };
    let loaded = run("loaded", &[]);
    let unloaded = run("unloaded", &["--unload", &format!("{}@0", matmul())]);
    let mem = |root: &Path, c: &str, f: &str| {
        number(&root.join(format!(
            "neuron0/neuron_core0/stats/memory_usage/device_mem/{c}/{f}"
        )))
    };
    let constants = mem(&loaded, "constants", "total");
    assert!(constants > 0);
    assert_eq!(mem(&unloaded, "constants", "total"), 0);
    assert_eq!(mem(&unloaded, "constants", "peak"), constants);
    assert!(mem(&unloaded, "", "peak") >= mem(&loaded, "", "total"));
    assert!(mem(&unloaded, "", "total") < mem(&loaded, "", "total"));
}

/// A stream is one report a line on standard output, the plan's report on
/// standard error; it ends after --monitor-count reports, or quietly when
/// its reader goes away.
#[test]
fn a_stream_is_lines_of_reports_until_counted_or_the_reader_leaves() {
    let out = plan_trn2(&[
        "--monitor",
        "-",
        "--monitor-period",
        "0.05",
        "--monitor-count",
        "3",
        &format!("{}@0", matmul()),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = monitor_lines(std::str::from_utf8(&out.stdout).unwrap());
    assert_eq!(lines.len(), 3);
    assert!(lines.iter().all(|l| l == &lines[0]));
    assert_eq!(
        lines[0]["neuron_runtime_data"][0]["report"]["memory_used"]["period"],
        0.05
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("fits      yes"));

    // No count: the reader closing the pipe ends it.
    let mut child = command(&[
        "plan",
        "--instance",
        "trn2.3xlarge",
        "--monitor",
        "-",
        "--monitor-period",
        "0.05",
        "--json",
        &format!("{}@0", matmul()),
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    for _ in 0..2 {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        monitor_lines(&line);
    }
    drop(reader);
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("the stream outlived its reader");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0));
    // The --json document went to standard error.
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(parse(err.as_bytes())["written"]["monitor"], "-");
}

/// What cannot be written is an error after the report (exit 2), never a
/// write through a link, never a tree left half-written: the plan's
/// report is whole, the rest of the files are written.
#[test]
fn unwritable_destinations_fail_after_the_report_and_touch_nothing() {
    let dir = scratch("monitor-bad");
    let victim = dir.join("victim");
    std::fs::create_dir(&victim).unwrap();
    std::fs::write(victim.join("keep"), "mine").unwrap();
    let target = dir.join("target.txt");
    std::fs::write(&target, "untouched").unwrap();
    let link = dir.join("m.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let tree_link = dir.join("tree");
    std::os::unix::fs::symlink(&victim, &tree_link).unwrap();
    let load = format!("{}@0", matmul());
    let plan = |monitor: &Path, sysfs: &Path, json: bool| {
        let mut args = vec![
            "plan",
            "--instance",
            "trn2.3xlarge",
            "--monitor",
            monitor.to_str().unwrap(),
            "--sysfs",
            sysfs.to_str().unwrap(),
            &load,
        ];
        if json {
            args.push("--json");
        }
        neffld(&args)
    };

    // A link where the report goes is replaced, never written through.
    let out = plan(&link, &dir.join("fresh"), false);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "untouched");
    assert!(!std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    monitor_lines(&std::fs::read_to_string(&link).unwrap());

    // A tree over a link, or over another directory, is refused; the
    // report comes first and whole, the error after it.
    for bad in [&tree_link, &victim] {
        let out = plan(&dir.join("ok.json"), bad, false);
        assert_eq!(out.status.code(), Some(2));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.starts_with("plan ") && stdout.contains("headroom"),
            "{stdout}"
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("cannot write the sysfs tree"), "{stderr}");
        assert_eq!(
            std::fs::read_to_string(victim.join("keep")).unwrap(),
            "mine"
        );
        assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 1);
    }
    assert!(stderr_names(
        &plan(&dir.join("ok.json"), &tree_link, false),
        "symbolic link"
    ));

    // Where nothing can be written: the JSON says so, the rest is written.
    let nowhere = dir.join("missing/m.json");
    let s = dir.join("s2");
    let out = plan(&nowhere, &s, true);
    assert_eq!(out.status.code(), Some(2));
    let doc = parse(&out.stdout);
    assert_eq!(doc["written"]["monitor"], Value::Null);
    assert_eq!(doc["written"]["sysfs"], s.to_str().unwrap());
    let warnings = doc["warnings"].as_array().unwrap();
    assert!(
        warnings.iter().any(|w| w
            .as_str()
            .unwrap()
            .contains("cannot write the neuron-monitor report")),
        "{warnings:?}"
    );
    assert!(s.join("neuron0/core_count").exists());

    // Nothing beside the destinations is left behind.
    let leftovers: Vec<String> = std::fs::read_dir(&*dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // An earlier tree is replaced whole.
    let out = plan(&dir.join("ok.json"), &s, false);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn stderr_names(out: &Output, what: &str) -> bool {
    String::from_utf8_lossy(&out.stderr).contains(what)
}

/// A stream's flags asked for where they mean nothing are usage errors,
/// found before anything is planned.
#[test]
fn stream_flags_without_a_stream_are_usage_errors() {
    for args in [
        vec!["--monitor", "m.json", "--monitor-period", "5"],
        vec!["--monitor", "-", "--monitor-count", "2"],
        vec!["--monitor", "-", "--monitor-period", "0"],
        vec!["--sysfs", "-"],
    ] {
        let mut all = vec!["plan", "--json"];
        all.extend(args.iter().copied());
        all.push("missing.neff");
        let out = neffld(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let doc = parse(&out.stdout);
        assert_eq!(doc["error"]["stage"], "usage", "{args:?}: {doc}");
    }
}

/// The human report shows each logical core as neuron-top does, in its
/// names and order, cores with the same figures on one row; the two maps
/// colour memory by the same five names.
#[test]
fn the_report_and_both_maps_speak_neuron_tops_names() {
    let dir = scratch("monitor-names");
    let (a, b) = (format!("{}@0", matmul()), format!("{}@1", matmul()));
    let plan_map = dir.join("plan.html");
    let out = plan_trn2(&["--map", plan_map.to_str().unwrap(), &a, &b]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    let at = text
        .find("device memory as neuron-top shows it")
        .unwrap_or_else(|| panic!("no neuron-top section:\n{text}"));
    let rows: Vec<Vec<&str>> = text[at..]
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect()
        })
        .collect();
    assert_eq!(
        rows[0],
        [
            "core",
            "Total",
            "Tensors",
            "Constants",
            "Model Code",
            "Runtime Memory",
            "Model Scratchpad"
        ]
    );
    // Logical cores 0 and 1 hold a load each, alike; 2 and 3 what the
    // runtime took when it started.
    assert_eq!(
        rows.iter().skip(1).map(|r| r[0]).collect::<Vec<_>>(),
        ["0-1", "2-3"]
    );
    // Tensors: the loads' IO tensors on logical cores 0 and 1 (the plan's
    // own figures), none on 2 and 3.
    let plan = parse(&plan_trn2(&["--json", &a, &b]).stdout);
    let tensors: Vec<u64> = plan["memory"]["devices"][0]["hbms"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|h| h["cores"].as_array().unwrap())
        .map(|c| u(&c["categories"]["tensors"]))
        .collect();
    assert!(tensors[0] > 0 && tensors[2] > 0, "{tensors:?}");
    assert_eq!(tensors[4..], [0, 0, 0, 0]);
    assert_ne!(rows[1][2], "0 B");
    assert_eq!(rows[2][2], "0 B");

    let html = std::fs::read_to_string(&plan_map).unwrap();
    let legend = |html: &str| -> Vec<String> {
        let at = html.find("<p class=\"legend\">").expect("a legend");
        let end = at + html[at..].find("</p>").unwrap();
        html[at..end]
            .split("</span>")
            .filter_map(|s| s.rsplit('>').next())
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    };
    let five = [
        "Tensors",
        "Constants",
        "Model Code",
        "Runtime Memory",
        "Model Scratchpad",
    ];
    assert_eq!(legend(&html), five);
    let load_map = dir.join("load.html");
    let out = neffld(&[
        "load",
        "--quiet",
        "--map",
        load_map.to_str().unwrap(),
        &matmul(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names = legend(&std::fs::read_to_string(&load_map).unwrap());
    assert_eq!(names.last().map(String::as_str), Some("variable"));
    assert!(names.len() > 2);
    for n in &names[..names.len() - 1] {
        assert!(five.contains(&n.as_str()), "{n} in {names:?}");
    }
}

/// The README's monitoring commands run as written, from a scratch folder
/// (the fixtures' paths made absolute): the files they write read as
/// their tools read them, and the stream — here ended after two reports
/// instead of piped into a frontend — is two reports.
#[test]
fn the_readme_monitoring_commands_run() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let at = readme
        .find("## Monitoring without hardware")
        .expect("the README's section");
    let block = &readme[at..];
    let start = block.find("```sh\n").unwrap() + 6;
    let end = start + block[start..].find("```").unwrap();
    let commands: Vec<String> = block[start..end]
        .replace("\\\n", " ")
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(commands.len(), 3, "{commands:?}");
    let dir = scratch("monitor-readme");
    let testdata = format!("{}/", root.join("testdata").display());
    let words = |c: &str| -> Vec<String> {
        c.split(' ')
            .map(|w| w.replace("testdata/", &testdata))
            .collect()
    };
    let run = |args: &[String]| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = command(&args).current_dir(&*dir).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    };
    let first = words(&commands[0]);
    assert_eq!(first[0], "neffld");
    run(&first[1..]);
    assert_eq!(
        monitor_lines(&std::fs::read_to_string(dir.join("m.json")).unwrap()).len(),
        1
    );
    let cat = words(&commands[1]);
    assert_eq!(cat[0], "cat");
    assert!(number(&dir.join(&cat[1])) > 0);
    let (stream, frontend) = commands[2].split_once(" | ").unwrap();
    assert_eq!(frontend, "neuron-monitor-prometheus.py");
    let mut stream = words(stream);
    assert_eq!(stream[0], "neffld");
    stream.extend(["--monitor-count".to_string(), "2".to_string()]);
    let out = run(&stream[1..]);
    assert_eq!(
        monitor_lines(std::str::from_utf8(&out.stdout).unwrap()).len(),
        2
    );
}
