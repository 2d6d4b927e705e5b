//! The runtime's own memory reports, as the C library logs them: each test
//! runs a C client's calls in a child process of its own (this test binary,
//! re-run with [`CHILD`] set, one test) and reads what it wrote to stderr, line by
//! line, against the formats the runtime documents (docs/reference/memory.md)
//! — the log line prefix, the refusal of an `nrt_tensor_allocate` and of a
//! load, the usage table, the NEFF id → name mapping, the table file, the
//! per-NEFF breakdown at INFO — with the figures worked out here from the
//! NEFFs the test wrote and from `nrt_get_vnc_memory_stats`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::ptr;

use neffld::container::writer::{NeffWriter, Producer};
use neffld_nrt::*;
use neffld_testkit::{Alone, Synth};
use serde_json::json;

/// Set in a child process: the paths of the NEFFs it loads.
const CHILD: &str = "NEFFLD_MEMORY_LOG_CHILD";

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
/// What the child asks for beyond any HBM of trn2 (24 GiB).
const TOO_BIG: u64 = 30 * GIB;
/// The device tensor of the noisy neighbour on NC 5.
const NEIGHBOUR: u64 = MIB;
/// The weight of every NEFF here (`w_sg0000`, 256 bytes).
const WEIGHT: u64 = 256;

/// A trn2 NEFF for a one-core logical core, named `name`: the writer's
/// dynamic-DMA NEFF (a 256-byte weight, a 512-byte virtual variable), with
/// a `tmp-buf` of `tmp` bytes when `tmp` is set.
fn neff(name: &str, tmp: Option<u64>) -> Vec<u8> {
    let mut s = Synth::dynamic_cayman_n(1);
    if let Some(size) = tmp {
        s.edit("sg00/def.json", |d| {
            d["var"]["big"] = json!({"ops":[],"size":size,"type":"tmp-buf","var_id":7});
        });
    }
    let mut h = Producer::V2_21.default_header();
    h.vnc_size = 1;
    h.set_name(name);
    NeffWriter::with_header(Producer::V2_21, h).write(&s.member_list())
}

// ---- the child: a C client's calls ----

fn load(path: &str, vnc: i32) -> NRT_STATUS {
    let bytes = std::fs::read(path).unwrap();
    let mut model: *mut nrt_model_t = ptr::null_mut();
    // SAFETY: `bytes` is readable for its length; `model` is writable.
    unsafe { nrt_load(bytes.as_ptr().cast(), bytes.len(), vnc, -1, &mut model) }
}

fn device_tensor(vnc: i32, size: u64) -> NRT_STATUS {
    let mut t: *mut nrt_tensor_t = ptr::null_mut();
    let placement = nrt_tensor_placement_t::NRT_TENSOR_PLACEMENT_DEVICE as u32;
    // SAFETY: the name is a NUL-terminated literal; `t` is writable. The
    // tensor lives until the process ends.
    unsafe { nrt_tensor_allocate(placement, vnc, size as usize, c"t".as_ptr(), &mut t) }
}

/// Prints `stats <vnc> <bytes_used> <bytes_limit>` for the parent.
fn print_stats(vnc: u32) {
    let mut s = nrt_vnc_memory_stats_t {
        bytes_used: 0,
        bytes_limit: 0,
    };
    // SAFETY: `s` is a writable local of the size passed.
    let status = unsafe {
        nrt_get_vnc_memory_stats(vnc, &mut s, std::mem::size_of_val(&s), ptr::null_mut())
    };
    assert_eq!(status, NRT_STATUS::NRT_SUCCESS);
    println!("stats {vnc} {} {}", s.bytes_used, s.bytes_limit);
}

/// On trn2 with LNC 1, NC 4 and NC 5 share HBM 2: a model on NC 4, a
/// tensor of the neighbour on NC 5, a tensor too large for the HBM, then a
/// load whose `tmp-buf` is too large.
fn child(paths: &str) {
    let (one, two) = paths.split_once(';').unwrap();
    // SAFETY: NULL version strings are allowed.
    assert_eq!(
        unsafe { nrt_init(1, ptr::null(), ptr::null()) },
        NRT_STATUS::NRT_SUCCESS
    );
    assert_eq!(load(one, 4), NRT_STATUS::NRT_SUCCESS);
    assert_eq!(device_tensor(5, NEIGHBOUR), NRT_STATUS::NRT_SUCCESS);
    assert_eq!(device_tensor(4, TOO_BIG), NRT_STATUS::NRT_RESOURCE);
    println!("refused tensor");
    print_stats(4);
    print_stats(5);
    assert_eq!(load(two, 4), NRT_STATUS::NRT_RESOURCE);
    println!("refused load");
    print_stats(4);
    nrt_close();
}

// ---- the parent: runs a child and reads its log ----

/// One log record: the prefix's fields and the text (with the lines that
/// continue it).
#[derive(Debug)]
struct Record {
    pid: u32,
    level: String,
    function: String,
    text: String,
}

/// The runtime's prefix: `YYYY-Mon-DD HH:MM:SS.uuuuuu PID:TID LEVEL  `
/// then `MODULE:function` padded to 44 columns and a space. `None` for a
/// line that is not one.
fn prefix(line: &str) -> Option<Record> {
    let b = line.as_bytes();
    let digits = |r: std::ops::Range<usize>| {
        b.get(r.clone())
            .is_some_and(|s| s.iter().all(u8::is_ascii_digit))
    };
    let shape = digits(0..4)
        && b.get(4) == Some(&b'-')
        && b.get(5..8)
            .is_some_and(|m| m.iter().all(u8::is_ascii_alphabetic))
        && b.get(8) == Some(&b'-')
        && digits(9..11)
        && b.get(11) == Some(&b' ')
        && digits(12..14)
        && digits(15..17)
        && digits(18..20)
        && b.get(20) == Some(&b'.')
        && digits(21..27)
        && b.get(27) == Some(&b' ');
    if !shape {
        return None;
    }
    let rest = &line[28..];
    let (ids, rest) = rest.split_once(' ')?;
    let (pid, tid) = ids.split_once(':')?;
    tid.parse::<u32>().ok()?;
    let level = rest.get(..5)?.trim_start().to_string();
    assert_eq!(
        rest.get(5..7),
        Some("  "),
        "two spaces after the level: {line}"
    );
    let field = rest.get(7..7 + 44)?;
    assert_eq!(rest.get(51..52).unwrap_or(" "), " ", "{line}");
    Some(Record {
        pid: pid.parse().ok()?,
        level,
        function: field.trim_end().to_string(),
        text: rest.get(52..).unwrap_or("").to_string(),
    })
}

fn records(stderr: &str) -> Vec<Record> {
    let mut out: Vec<Record> = Vec::new();
    for line in stderr.lines() {
        match (prefix(line), out.last_mut()) {
            (Some(r), _) => out.push(r),
            (None, Some(last)) => {
                last.text.push('\n');
                last.text.push_str(line);
            }
            (None, None) => {}
        }
    }
    out
}

struct Run {
    records: Vec<Record>,
    /// `stats` lines by vnc, in the order printed: `(used, limit)`.
    stats: HashMap<u32, Vec<(u64, u64)>>,
    table_dir: PathBuf,
}

/// Runs the child with `env` (on top of trn2, LNC 1, the null device) and
/// parses what it printed.
fn run(tag: &str, env: &[(&str, &str)]) -> Run {
    run_with(tag, env, |_| {})
}

/// [`run`], with `plant` given the table folder before the child starts.
fn run_with(tag: &str, env: &[(&str, &str)], plant: impl FnOnce(&Path)) -> Run {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("memory_log_{tag}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    plant(&dir);
    let one = dir.join("one.neff");
    let two = dir.join("two.neff");
    std::fs::write(&one, neff("neff_one", None)).unwrap();
    std::fs::write(&two, neff("neff_two", Some(TOO_BIG))).unwrap();
    let mut alone = Alone::new(module_path!(), tag)
        .env(CHILD, format!("{};{}", one.display(), two.display()))
        .env("NEFFLD_ARCH", "trn2")
        .env("NEFFLD_DEVICE", "null")
        .env("NEURON_LOGICAL_NC_CONFIG", "1")
        .env("NEFFLD_MEM_TABLE_DIR", &dir)
        .env_remove("NEFFLD_LOG")
        .env_remove("NEURON_RT_LOG_LEVEL")
        .env_remove("NEURON_RT_LOG_LEVEL_TDRV")
        .env_remove("NEURON_RT_LOG_LEVEL_NRT");
    for &(k, v) in env {
        alone = alone.env(k, v);
    }
    let proc = alone
        .command()
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = proc.id();
    let out = proc.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "child failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("refused load"), "{stdout}");
    let records = records(&stderr);
    assert!(!records.is_empty(), "no log lines:\n{stderr}");
    for r in &records {
        assert_eq!(r.pid, pid, "{r:?}");
    }
    let mut stats: HashMap<u32, Vec<(u64, u64)>> = HashMap::new();
    for line in stdout.lines().filter_map(|l| l.strip_prefix("stats ")) {
        let v: Vec<u64> = line.split(' ').map(|x| x.parse().unwrap()).collect();
        stats.entry(v[0] as u32).or_default().push((v[1], v[2]));
    }
    Run {
        records,
        stats,
        table_dir: dir,
    }
}

/// The runtime's size format, worked out here: three decimals of the
/// largest binary unit (B, KB, MB, GB) that leaves at least 1, rounded down.
fn human(bytes: u64) -> String {
    let mut unit = 0;
    while unit < 3 && bytes >> (10 * (unit + 1)) > 0 {
        unit += 1;
    }
    // Thousandths, rounded down as every size neffld prints.
    let milli = (u128::from(bytes) * 1000) >> (10 * unit);
    format!(
        "{}.{:03}{}",
        milli / 1000,
        milli % 1000,
        ["B", "KB", "MB", "GB"][unit]
    )
}

/// A size as printed: its figure and the bytes of its unit.
fn size_of(s: &str) -> (f64, f64) {
    let split = s.find(|c: char| c.is_ascii_alphabetic()).unwrap();
    let unit = match &s[split..] {
        "B" => 1.0,
        "KB" => 1024.0,
        "MB" => MIB as f64,
        "GB" => GIB as f64,
        u => panic!("unit {u}"),
    };
    (s[..split].parse::<f64>().unwrap(), unit)
}

fn the<'a>(run: &'a Run, function: &str) -> Vec<&'a Record> {
    run.records
        .iter()
        .filter(|r| r.function == function)
        .collect()
}

/// The table's rows by label, each the trimmed cells after the label.
fn rows(table: &str) -> HashMap<String, Vec<String>> {
    table
        .lines()
        .filter_map(|l| {
            let mut cells = l.split('|');
            let label = cells.next()?.trim_end().to_string();
            let cells: Vec<String> = cells.map(|c| c.trim().to_string()).collect();
            (!label.trim().is_empty() && cells.len() > 2).then_some((label, cells))
        })
        .collect()
}

/// Cell of a row: TOTAL, then the columns in the runtime's order.
const TOTAL: usize = 0;
const TENSORS: usize = 3;
const SHARED_SCRATCHPAD: usize = 4;
const SCRATCHPAD: usize = 5;
const MODEL_CONSTANTS: usize = 2;

/// The two header lines of the runtime's usage table, as its documentation
/// prints them.
const HEADER: [&str; 2] = [
    "              |          |  Model   |  Model   |          |  Shared  |          |          |DMA Rings |DMA Rings | DMA Rings |DMA Rings |           |          | Profiler |",
    "              |  TOTAL   |   Code   |Constants | Tensors  |Scratchpad|Scratchpad| Runtime  |    IO    |  Spill   |Collectives| Runtime  |Collectives|  XT CC   | Buffers  |",
];

/// A refused `nrt_tensor_allocate` and a refused load on NC 4, whose HBM
/// NC 5 shares: each logs which cores share the HBM, the request, and the
/// HBM's usage table with every NEFF and its name; the table's totals are
/// what `nrt_get_vnc_memory_stats` reports; the last table is in the file.
/// With `NEURON_RT_LOG_LEVEL_TDRV=info` the load logs its breakdown.
#[test]
fn refusals_log_the_runtime_report() {
    if let Ok(paths) = std::env::var(CHILD) {
        return child(&paths);
    }
    let run = run(
        "refusals_log_the_runtime_report",
        &[("NEURON_RT_LOG_LEVEL_TDRV", "info")],
    );
    let (used4, limit4) = run.stats[&4][0];
    let (used5, _) = run.stats[&5][0];
    assert_eq!(limit4, 24 * GIB, "one HBM of trn2");
    assert_eq!(run.stats[&4][1].0, used4, "a refused load leaves nothing");

    let shared = the(&run, "TDRV:print_lnc_hbm_details");
    assert_eq!(shared.len(), 2, "one per refusal");
    for r in &shared {
        assert_eq!(r.level, "ERROR");
        assert_eq!(
            r.text,
            "LNC size is 1. Neuron Cores using this HBM: NC 4 and NC 5"
        );
    }
    let requests: Vec<&str> = the(&run, "TDRV:log_dev_mem")
        .iter()
        .map(|r| r.text.as_str())
        .collect();
    assert_eq!(
        requests,
        [
            "Failed to allocate 30.000GB (alignment: none, usage: tensors) on ND 0:NC 4",
            "Failed to allocate 30.000GB (alignment: none, usage: scratchpad) on ND 0:NC 4",
        ]
    );
    let tables = the(&run, "TDRV:log_dev_mem_usage_table");
    assert_eq!(tables.len(), 2);
    for (i, (t, names)) in tables
        .iter()
        .zip([
            vec!["1: \"neff_one\""],
            vec!["1: \"neff_one\"", "2: \"neff_two\""],
        ])
        .enumerate()
    {
        let lines: Vec<&str> = t.text.lines().collect();
        assert_eq!(lines[0], "Displaying Current Memory Utilization:");
        assert_eq!(
            lines[1],
            "(NOTE: the lines are LONG, and NEFF id to name mapping is printed after)"
        );
        assert_eq!(lines[2], "");
        assert_eq!(lines[3..5], HEADER);
        let mapping = lines
            .iter()
            .position(|l| *l == "NEFF id to name mapping:")
            .unwrap();
        assert_eq!(lines[mapping - 1], "", "a blank line before the mapping");
        assert_eq!(lines[mapping + 1..], names[..]);
        let rows = rows(&t.text);
        // One answer: the table's totals are nrt_get_vnc_memory_stats',
        // the refused tensor's (it holds nothing); the refused load's
        // table also holds what that load placed before its refusal (NEFF
        // 2's row), released after it, so NC 4 holds at least as much.
        assert_eq!(rows["\\_NC 5"][TOTAL], human(used5));
        if i == 0 {
            assert_eq!(rows["ND 0 HBM 2"][TOTAL], human(used4 + used5));
            assert_eq!(rows["\\_NC 4"][TOTAL], human(used4));
        } else {
            let bytes = |s: &str| {
                let (v, unit) = size_of(s);
                v * unit
            };
            let shown = bytes(&rows["\\_NC 4"][TOTAL]);
            assert!(shown >= bytes(&human(used4 + WEIGHT)), "{shown}");
        }
        // The neighbour's tensor; the refused one is nowhere.
        assert_eq!(rows["\\_NC 5"][TENSORS], human(NEIGHBOUR));
        assert_eq!(rows["\\_NC 4"][TENSORS], "0.000B");
        // NEFF one's 512-byte virtual variable: one shared 512 MiB page.
        assert_eq!(rows["\\_NC 4"][SHARED_SCRATCHPAD], "512.000MB");
        let one = &rows["  \\_NEFF 1"];
        assert_eq!(one[MODEL_CONSTANTS], human(WEIGHT));
        assert_eq!(one[SCRATCHPAD], "0.000B");
        for n_a in [TENSORS, SHARED_SCRATCHPAD, 12, 13] {
            assert_eq!(one[n_a], "n/a", "column {n_a}");
        }
    }
    // The refused load: its weight is placed, its tmp-buf is refused.
    let second = rows(&tables[1].text);
    assert_eq!(second["  \\_NEFF 2"][MODEL_CONSTANTS], human(WEIGHT));
    assert_eq!(second["  \\_NEFF 2"][SCRATCHPAD], "0.000B");
    // The file holds the last report.
    let file =
        std::fs::read_to_string(run.table_dir.join("neuron_mem_table_device_0_hbm_2.log")).unwrap();
    assert_eq!(file, format!("{}\n", tables[1].text));

    // The breakdown at load, for NEFF one on NC 4.
    let breakdown = the(&run, "TDRV:dml_log_dev_neff_mem");
    assert_eq!(breakdown.len(), 1);
    assert_eq!(breakdown[0].level, "INFO");
    let lines: Vec<&str> = breakdown[0].text.lines().collect();
    assert_eq!(lines[0], "", "the breakdown starts below the prefix");
    assert_eq!(
        lines[1],
        format!("[ND 0:NC 4] Current Usage Total: {}", human(used4))
    );
    assert_eq!(lines[2], "        shared scratchpad: 512.000MB");
    assert_eq!(lines[3], "Per NEFF memory usage breakdown for [neff_one]:");
    let total = lines[4].strip_prefix("        Total: ").unwrap();
    let items: Vec<(&str, &str)> = lines[5..]
        .iter()
        .map(|l| {
            l.strip_prefix("        * ")
                .unwrap()
                .split_once(": ")
                .unwrap()
        })
        .collect();
    let names: Vec<&str> = items.iter().map(|i| i.0).collect();
    assert_eq!(
        names,
        [
            "model code",
            "model constants",
            "scratchpad",
            "runtime",
            "dma rings io",
            "dma rings spill",
            "dma rings collectives",
            "dma rings runtime",
            "collectives"
        ]
    );
    assert_eq!(items[1].1, human(WEIGHT));
    assert_eq!(items[2].1, "0.000B");
    // The items add up to the total, to within the rounding of each.
    let sizes: Vec<(f64, f64)> = items.iter().map(|i| size_of(i.1)).collect();
    let sum: f64 = sizes.iter().map(|(v, u)| v * u).sum();
    let (t, t_unit) = size_of(total);
    let slack: f64 = sizes.iter().map(|(_, u)| 0.0005 * u).sum::<f64>() + 0.0005 * t_unit;
    assert!(
        (sum - t * t_unit).abs() <= slack,
        "{sum} vs {total} (slack {slack})"
    );
}

/// The breakdown follows `NEURON_RT_LOG_LEVEL` too, and neither level set
/// logs only the refusals (at ERROR, the default).
#[test]
fn the_breakdown_is_logged_at_info_only() {
    if let Ok(paths) = std::env::var(CHILD) {
        return child(&paths);
    }
    let all = run(
        "the_breakdown_is_logged_at_info_only",
        &[("NEURON_RT_LOG_LEVEL", "info")],
    );
    assert_eq!(the(&all, "TDRV:dml_log_dev_neff_mem").len(), 1);
    let quiet = run("the_breakdown_is_logged_at_info_only", &[]);
    assert!(the(&quiet, "TDRV:dml_log_dev_neff_mem").is_empty());
    assert_eq!(the(&quiet, "TDRV:log_dev_mem").len(), 2);
    assert!(
        quiet.records.iter().all(|r| r.level == "ERROR"),
        "{:?}",
        quiet.records
    );
    // The per-component variables: NRT for every line but TDRV's (it was
    // read for TDRV alone).
    let nrt = |r: &&Record| r.function.starts_with("NRT:");
    let nrt_quiet = run(
        "the_breakdown_is_logged_at_info_only",
        &[
            ("NEURON_RT_LOG_LEVEL", "info"),
            ("NEURON_RT_LOG_LEVEL_NRT", "error"),
        ],
    );
    assert_eq!(the(&nrt_quiet, "TDRV:dml_log_dev_neff_mem").len(), 1);
    assert!(
        nrt_quiet
            .records
            .iter()
            .filter(nrt)
            .all(|r| r.level == "ERROR"),
        "{:?}",
        nrt_quiet.records
    );
    let nrt_info = run(
        "the_breakdown_is_logged_at_info_only",
        &[("NEURON_RT_LOG_LEVEL_NRT", "info")],
    );
    assert!(the(&nrt_info, "TDRV:dml_log_dev_neff_mem").is_empty());
    assert!(
        nrt_info
            .records
            .iter()
            .filter(nrt)
            .any(|r| r.level == "INFO"),
        "{:?}",
        nrt_info.records
    );
}

/// From 2.33, `NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG=0` silences the
/// report of a refusal (its log lines and the table file) while the
/// allocations still fail (the child checks their statuses); `1` and the
/// older lines keep it; another value fails `nrt_init` naming the variable.
#[test]
fn the_oom_report_can_be_silenced_from_2_33() {
    if let Ok(paths) = std::env::var(CHILD) {
        return child(&paths);
    }
    let tag = "the_oom_report_can_be_silenced_from_2_33";
    let report = |run: &Run| {
        let lines = the(run, "TDRV:log_dev_mem").len()
            + the(run, "TDRV:log_dev_mem_usage_table").len()
            + the(run, "TDRV:print_lnc_hbm_details").len();
        let files = std::fs::read_dir(&run.table_dir)
            .unwrap()
            .filter(|e| {
                let name = e.as_ref().unwrap().file_name();
                name.to_string_lossy().starts_with("neuron_mem_table_")
            })
            .count();
        (lines, files)
    };
    let var = "NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG";
    let silent = run(tag, &[(var, "0")]);
    assert_eq!(report(&silent), (0, 0), "{:?}", silent.records);
    let on = run(tag, &[(var, "1")]);
    assert_eq!(report(&on), (6, 1));
    let old = run(tag, &[(var, "0"), ("NEFFLD_RUNTIME", "2.32")]);
    assert_eq!(report(&old), (6, 1));
    // Before 2.26.42 the report had no table with a row per NEFF (nor
    // its file): the refused request's lines only, two of the six.
    let older = run(tag, &[("NEFFLD_RUNTIME", "2.25")]);
    assert_eq!(report(&older), (4, 0), "{:?}", older.records);
    assert!(the(&older, "TDRV:log_dev_mem_usage_table").is_empty());

    let out = Alone::new(module_path!(), tag)
        .env(CHILD, "a.neff;b.neff")
        .env(var, "no")
        .env_remove("NEFFLD_LOG")
        .env_remove("NEURON_RT_LOG_LEVEL")
        .output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("invalid value \"no\" for NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG"),
        "{stderr}"
    );
}

/// Runtime 2.35 (the default) reserves 64 MiB per NeuronCore for DMA
/// profiling when it starts (SDK 2.33's runtime notes): at LNC 1 on every
/// physical core, in the usage table's Profiler Buffers column and in
/// `nrt_get_vnc_memory_stats`, exactly that much more than under 2.34;
/// `NEFFLD_DMA_PROFILING=0` starts without it.
#[test]
fn the_2_35_dma_profiling_reservation_is_in_the_table_and_the_stats() {
    if let Ok(paths) = std::env::var(CHILD) {
        return child(&paths);
    }
    let tag = "the_2_35_dma_profiling_reservation_is_in_the_table_and_the_stats";
    const PROFILER_BUFFERS: usize = 13;
    let seen = |env: &[(&str, &str)]| {
        let run = run(tag, env);
        let tables = the(&run, "TDRV:log_dev_mem_usage_table");
        let rows = rows(&tables[0].text);
        let cells = [4, 5].map(|nc| rows[&format!("\\_NC {nc}")][PROFILER_BUFFERS].clone());
        (run.stats[&4][0].0, run.stats[&5][0].0, cells)
    };
    let reserved = neffld_testkit::reserved_per_logical_core(neffld::RuntimeLine::NEWEST);
    let (new4, new5, new_cells) = seen(&[]);
    let (old4, old5, old_cells) = seen(&[("NEFFLD_RUNTIME", "2.34")]);
    assert_eq!((new4 - old4, new5 - old5), (reserved, reserved));
    let cell = format!("{:.3}MB", reserved as f64 / MIB as f64);
    assert_eq!(new_cells, [cell.clone(), cell]);
    assert_eq!(old_cells, ["0.000B", "0.000B"]);
    let (off4, off5, off_cells) = seen(&[("NEFFLD_DMA_PROFILING", "0")]);
    assert_eq!((off4, off5, off_cells), (old4, old5, old_cells));
}

/// Issue 29 row 8: the memory table's file, planted beforehand as a
/// symbolic link (or a hard link) to a victim, is replaced, never written
/// through: the victim keeps its bytes.
#[test]
fn the_memory_table_never_writes_through_a_planted_link() {
    if let Ok(paths) = std::env::var(CHILD) {
        return child(&paths);
    }
    let victim = Path::new(env!("CARGO_TARGET_TMPDIR")).join("memory_log_victim");
    let hard_victim = Path::new(env!("CARGO_TARGET_TMPDIR")).join("memory_log_hard_victim");
    std::fs::write(&victim, "keep").unwrap();
    std::fs::write(&hard_victim, "keep").unwrap();
    let run = run_with(
        "the_memory_table_never_writes_through_a_planted_link",
        &[],
        |dir| {
            std::os::unix::fs::symlink(&victim, dir.join("neuron_mem_table_device_0_hbm_2.log"))
                .unwrap();
        },
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    let table = run.table_dir.join("neuron_mem_table_device_0_hbm_2.log");
    assert!(!table.is_symlink());
    assert!(std::fs::read_to_string(&table)
        .unwrap()
        .contains("NEFF id to name mapping"));
    let run = run_with(
        "the_memory_table_never_writes_through_a_planted_link",
        &[],
        |dir| {
            std::fs::hard_link(
                &hard_victim,
                dir.join("neuron_mem_table_device_0_hbm_2.log"),
            )
            .unwrap();
        },
    );
    assert_eq!(std::fs::read_to_string(&hard_victim).unwrap(), "keep");
    let leftovers: Vec<_> = std::fs::read_dir(&run.table_dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
