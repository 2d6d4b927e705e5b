//! `neffld.plan`: a deployment built from Python's arguments with the
//! library's own parsers (a load is always a file, never an option), planned
//! by the library, and returned as objects over its report
//! ([`neffld::plan::PlanReport`]): `plan.fits`, `plan.steps[i].status`,
//! `plan.refusal.log`, `plan.advice[i].argv`, ... `to_dict()` gives the
//! document `neffld plan --json` prints.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use neffld::instance::Instance;
use neffld::plan::report as r;
use neffld::plan::{self as lib, Deployment, PlanError, PlanReport, StepBudget};
use neffld::RuntimeLine;
use neffld_cli::PlanFiles;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::error::{int_arg, raise, FResult, Failure};

fn usage(e: impl ToString) -> Failure {
    Failure::usage(e.to_string())
}

/// A refused argument named as Python names it (`tensors 'kv'`), not by
/// the command's flag (`--tensor 'kv'`) the parser names.
fn named(place: String) -> impl FnOnce(lib::DeploymentError) -> Failure {
    move |e| {
        usage(lib::DeploymentError {
            place,
            what: e.what,
        })
    }
}

/// What Python's `neffld.plan` was given. Words are taken as the OS takes
/// paths (a `str` of `os.fsdecode`'s undecodable bytes included): a file
/// may be any path; a word that must be text is checked by [`text`].
pub struct Args {
    pub loads: Vec<OsString>,
    pub instance: Option<OsString>,
    pub lnc: Option<u32>,
    pub runtime: Option<OsString>,
    pub env: Vec<(OsString, OsString)>,
    pub tensors: Vec<OsString>,
    pub unloads: Vec<OsString>,
    pub frees: Vec<OsString>,
    pub io_tensors: bool,
    pub solve: Option<OsString>,
    pub max_inflated: Option<u64>,
    pub world: Option<u32>,
    pub hosts: Option<u32>,
}

/// A word that must be text (a tensor's name, an instance, a variable):
/// one holding bytes that are not UTF-8 is the value refused it is, never
/// Python's `UnicodeEncodeError`.
fn text(what: &str, word: &OsStr) -> FResult<String> {
    word.to_str().map(str::to_string).ok_or_else(|| {
        usage(format!(
            "{what} '{}': not text (it holds bytes that are not UTF-8)",
            word.display()
        ))
    })
}

/// `env`'s variables as the library takes them, each checked.
fn env(a: &Args) -> FResult<Vec<(String, String)>> {
    a.env
        .iter()
        .map(|(k, v)| {
            let (k, v) = (text("env", k)?, text("env", v)?);
            lib::parse_env(&format!("{k}={v}")).map_err(named(format!("env {k}={v:?}")))
        })
        .collect()
}

/// The deployment the arguments describe: a deployment file with the
/// arguments over it, or the loads; then the tensors, unloads and frees;
/// the process's runtime variables first, `env` over them.
fn deployment(a: &Args) -> FResult<Deployment> {
    // `env={"NEFFLD_MAX_STEPS": n}` over the process's, as for every variable.
    let max_steps = lib::step_ceiling(&env(a)?).map_err(|e| Failure::config(&e))?;
    let mut budget = StepBudget::new(max_steps);
    let file = lib::deployment_file(&a.loads).map_err(usage)?;
    let mut d = match file {
        Some(path) => {
            let text = lib::read_deployment(path).map_err(|e| {
                Failure::io(format!("cannot read {}: {e}", path.display())).with_os_error(&e, path)
            })?;
            let base = path.parent().unwrap_or(Path::new("."));
            let mut d =
                lib::parse_toml_within(&text, &path.display().to_string(), base, &mut budget)
                    .map_err(usage)?;
            d.origins.resize(d.steps.len(), String::new());
            d
        }
        None => Deployment {
            io_tensors: true,
            ..Deployment::default()
        },
    };
    let mut add = |steps: Vec<lib::Step>, place: String, d: &mut Deployment| -> FResult<()> {
        budget.take(steps.len(), place.clone()).map_err(usage)?;
        d.origins.extend(std::iter::repeat_n(place, steps.len()));
        d.steps.extend(steps);
        Ok(())
    };
    if file.is_none() {
        for l in &a.loads {
            let place = format!("load '{}'", l.display());
            add(
                lib::parse_load(l).map_err(named(place.clone()))?,
                place,
                &mut d,
            )?;
        }
    }
    for t in &a.tensors {
        let t = text("tensors", t)?;
        let place = format!("tensors '{t}'");
        add(
            lib::parse_tensor(&t).map_err(named(place.clone()))?,
            place,
            &mut d,
        )?;
    }
    for u in &a.unloads {
        let place = format!("unloads '{}'", u.display());
        add(
            lib::parse_unload(u).map_err(named(place.clone()))?,
            place,
            &mut d,
        )?;
    }
    for f in &a.frees {
        let f = text("frees", f)?;
        let place = format!("frees '{f}'");
        add(
            lib::parse_free(&f).map_err(named(place.clone()))?,
            place,
            &mut d,
        )?;
    }
    // In the order the mistakes are reported: variables, instance, line,
    // question.
    let overrides = lib::Overrides {
        env: env(a)?,
        instance: match &a.instance {
            Some(i) => Some(
                Instance::named(&text("instance", i)?)
                    .map_err(|e| usage(format!("instance: {e}")))?,
            ),
            None => None,
        },
        runtime: match &a.runtime {
            Some(l) => Some(
                text("runtime", l)?
                    .parse::<RuntimeLine>()
                    .map_err(|e| usage(format!("runtime: {e}")))?,
            ),
            None => None,
        },
        solve: a
            .solve
            .as_deref()
            .map(|q| lib::parse_solve(q).map_err(named(format!("solve '{}'", q.display()))))
            .transpose()?,
        lnc: a.lnc.map(|l| (l, "lnc".to_string())),
        max_inflated: a.max_inflated,
        io_tensors: a.io_tensors,
        world: a.world,
        hosts: a.hosts,
    };
    let d = d.overridden(overrides, |k| std::env::var(k).ok());
    d.has_work().map_err(usage)?;
    Ok(d)
}

/// Plans `d` and writes the files asked for (the map, neuron-monitor's
/// report, the sysfs tree): the report and the `--json` document. A file
/// that cannot be written is the I/O error the caller asked for a file and
/// did not get (the command exits as one, after its report). A stream of
/// reports (`--monitor -`, `--monitor-period`) is the command's: a call
/// returns once, so it writes one report to a file.
fn answer(d: &Deployment, files: &PlanFiles) -> FResult<(PlanReport, String)> {
    if files.streams() {
        return Err(usage(
            "a Plan writes neuron-monitor's report to a file (monitor=PATH); \
             reports on standard output, and streams of them (--monitor - \
             --monitor-period), are the command's: `neffld plan ... --monitor -`",
        ));
    }
    let p = lib::plan(d).map_err(|e| {
        let f = neffld_cli::plan_failure(&e, d);
        let failure = Failure::new(f.stage, f.status, f.message);
        match &e {
            PlanError::Io { path, source } => failure.with_os_error(source, path),
            _ => failure,
        }
    })?;
    let (doc, unwritten) = neffld_cli::plan_output(&p, files);
    if let Some(f) = unwritten.into_iter().next() {
        return Err(Failure::new(f.stage, f.status, f.message));
    }
    let json = doc.json_line();
    Ok((doc.report, json))
}

/// Plans a deployment described by Python's arguments (see `neffld.plan`).
#[pyfunction]
#[pyo3(signature = (loads, instance, lnc, runtime, env, tensors, unloads, frees, io_tensors, map, monitor, sysfs, solve, max_inflated, world, hosts))]
#[allow(clippy::too_many_arguments)]
pub fn _plan(
    py: Python<'_>,
    loads: Vec<OsString>,
    instance: Option<OsString>,
    lnc: Option<Bound<'_, PyAny>>,
    runtime: Option<OsString>,
    env: Vec<(OsString, OsString)>,
    tensors: Vec<OsString>,
    unloads: Vec<OsString>,
    frees: Vec<OsString>,
    io_tensors: bool,
    map: Option<PathBuf>,
    monitor: Option<PathBuf>,
    sysfs: Option<PathBuf>,
    solve: Option<OsString>,
    max_inflated: Option<Bound<'_, PyAny>>,
    world: Option<Bound<'_, PyAny>>,
    hosts: Option<Bound<'_, PyAny>>,
) -> PyResult<Plan> {
    // plan() has checked their types; their values are checked here, any
    // Python integer taken (no OverflowError).
    let lnc = lnc
        .map(|l| {
            let rule = "a logical-core size is a positive integer (1 or 2)";
            int_arg(&l, "lnc", 1..=i128::from(u32::MAX), rule).map(|l| l as u32)
        })
        .transpose()?;
    let max_inflated = max_inflated
        .map(|m| {
            let rule = "a number of bytes (0 or more)";
            int_arg(&m, "max_inflated", 0..=i128::from(u64::MAX), rule).map(|m| m as u64)
        })
        .transpose()?;
    let count = |v: Option<Bound<'_, PyAny>>, name: &str, rule: &str| {
        v.map(|v| int_arg(&v, name, 1..=i128::from(u32::MAX), rule).map(|n| n as u32))
            .transpose()
    };
    let world = count(world, "world", "a world has 1 rank or more")?;
    let hosts = count(hosts, "hosts", "a world spans 1 host or more")?;
    let a = Args {
        loads,
        instance,
        lnc,
        runtime,
        env,
        tensors,
        unloads,
        frees,
        io_tensors,
        solve,
        max_inflated,
        world,
        hosts,
    };
    let out = py.detach(|| {
        // The parse reads no NEFF: its messages are the caller's words.
        let files = PlanFiles {
            map,
            monitor,
            sysfs,
            ..PlanFiles::default()
        };
        // The checks of the command's flags, in Python's names.
        if files.sysfs.as_deref().is_some_and(|p| p.as_os_str() == "-") {
            return Err(usage("sysfs: a tree of files needs a directory, not '-'"));
        }
        let d = deployment(&a).map_err(Failure::of_callers_words)?;
        answer(&d, &files)
    });
    let (report, json) = raise(py, out)?;
    Plan::new(py, &report, json)
}

/// Whether a `neffld plan` command line asks for the command's help: a
/// `--help`, or a cluster of short flags starting with `-h` (plan has no
/// other short flag), before any `--`.
fn asks_for_help(args: &[OsString]) -> bool {
    args.iter()
        .map(|w| w.as_bytes())
        .take_while(|w| *w != b"--")
        .any(|w| w == b"--help" || (w.starts_with(b"-h") && !w.starts_with(b"--")))
}

/// Plans a `neffld plan` command line (an advice's `argv`, the words after
/// `plan`), read by the command's own parser. Its messages (usage errors,
/// a deployment file's) keep their lines; a command line that asks for
/// the command's help is refused as one that plans nothing, naming where
/// the help is, since `plan_argv` returns a Plan.
#[pyfunction]
pub fn _plan_argv(py: Python<'_>, args: Vec<OsString>) -> PyResult<Plan> {
    let out = py.detach(|| {
        let parsed = neffld_cli::plan_command(args.iter().cloned()).map_err(|f| {
            if f.stage == "usage" && asks_for_help(&args) {
                return usage(
                    "plan_argv plans a `neffld plan` command line and returns its Plan; \
                     --help asks the command for its help, which `neffld plan --help` \
                     (or `python -m neffld plan --help`) prints, and help(neffld.plan_argv) \
                     describes this call",
                );
            }
            Failure::new(f.stage, f.status, f.message).of_callers_words()
        });
        let (d, files) = parsed?;
        d.has_work().map_err(usage)?;
        answer(&d, &files)
    });
    let (report, json) = raise(py, out)?;
    Plan::new(py, &report, json)
}

/// The instance a plan ran on.
#[pyclass(frozen, get_all, module = "neffld")]
pub struct PlanInstance {
    /// Instance type (None: one chip of `arch`).
    pub name: Option<&'static str>,
    pub chip: Option<&'static str>,
    pub arch: &'static str,
    pub chips: u32,
    pub cores_per_chip: u32,
    pub hbms_per_chip: u32,
    pub hbm_size: u64,
    pub lnc: u32,
    pub logical_cores: u32,
    /// The logical cores the process sees when a variable restricts them
    /// (None: all), and the setting that did.
    pub visible_cores: Option<Vec<u32>>,
    pub visible_by: Option<String>,
}

/// Why a step was refused.
#[pyclass(frozen, get_all, module = "neffld")]
pub struct StepError {
    pub stage: &'static str,
    pub status: u32,
    pub status_name: &'static str,
    pub message: String,
    /// neffld's own ceiling, not the runtime's: the setting that raises it.
    pub own_limit: Option<&'static str>,
    /// The NEFF's own bytes are damaged: no change to the deployment loads it.
    pub damaged: bool,
}

fn step_error(py: Python<'_>, e: &r::StepError) -> PyResult<Py<StepError>> {
    Py::new(
        py,
        StepError {
            stage: e.stage,
            status: e.status_code,
            status_name: e.status,
            message: e.message.clone(),
            own_limit: e.own_limit,
            damaged: e.damaged,
        },
    )
}

/// One step of a plan as it ran.
#[pyclass(frozen, get_all, module = "neffld")]
pub struct PlanStep {
    pub index: usize,
    /// "load", "tensor", "unload" or "free".
    pub kind: &'static str,
    pub file: Option<String>,
    pub name: Option<String>,
    pub size: Option<u64>,
    /// The logical core it ran on.
    pub core: Option<u32>,
    pub device: Option<u32>,
    pub pcores: Vec<u32>,
    /// "ok" or "refused".
    pub status: &'static str,
    pub error: Option<Py<StepError>>,
    pub held_after: u64,
}

#[pymethods]
impl PlanStep {
    fn __repr__(&self) -> String {
        format!(
            "PlanStep({} {} on core {}: {})",
            self.kind,
            self.file.as_deref().or(self.name.as_deref()).unwrap_or(""),
            self.core.map_or("?".into(), |c| c.to_string()),
            self.status
        )
    }
}

/// One line of the runtime's log.
#[pyclass(frozen, get_all, module = "neffld")]
pub struct LogLine {
    pub function: &'static str,
    pub message: String,
}

/// The free bytes of one allocator pool of an HBM.
#[pyclass(frozen, get_all, module = "neffld")]
pub struct Pool {
    /// "main" or "small".
    pub pool: &'static str,
    pub capacity: u64,
    pub free: u64,
    pub longest: u64,
}

/// The first refusal for want of device memory, as the runtime logs it.
#[pyclass(frozen, get_all, module = "neffld")]
pub struct PlanRefusal {
    pub step: usize,
    pub device: u32,
    pub pcore: u32,
    pub hbm: Option<u32>,
    pub size: u64,
    pub alignment: u64,
    pub usage: &'static str,
    pub category: &'static str,
    pub what: String,
    pub explain: Option<String>,
    pub pools: Vec<Py<Pool>>,
    pub log: Vec<Py<LogLine>>,
}

/// A NEFF loaded where the plan stopped.
#[pyclass(frozen, get_all, module = "neffld")]
pub struct PlanNeff {
    pub id: u32,
    pub name: String,
    pub file: String,
    pub device: u32,
    pub core: u32,
    pub pcores: Vec<u32>,
    /// Its rank, for a rank of a world (`world=`).
    pub rank: Option<u32>,
    /// The device memory of its collectives, which its rows leave out, in
    /// words (None without collectives).
    pub collectives_not_counted: Option<String>,
}

/// One rank of a world (`world=`).
#[pyclass(frozen, get_all, module = "neffld")]
pub struct WorldRank {
    pub rank: u32,
    /// Its load step's index.
    pub step: usize,
    pub file: String,
    /// The logical core (numbered across the hosts) and its host, when the
    /// plan reached its load.
    pub core: Option<u32>,
    pub host: Option<u32>,
    pub loaded: bool,
    pub collectives: usize,
    pub groups: usize,
}

#[pymethods]
impl WorldRank {
    fn __repr__(&self) -> String {
        format!(
            "WorldRank({} of {} on host {}, core {})",
            self.rank,
            self.file,
            self.host.map_or("?".into(), |h| h.to_string()),
            self.core.map_or("?".into(), |c| c.to_string())
        )
    }
}

/// Two ranks of a world that do not agree.
#[pyclass(frozen, get_all, module = "neffld")]
pub struct Disagreement {
    /// "world_size", "mismatch" or "deadlock".
    pub kind: &'static str,
    /// The replica group's ranks (None: a send and its receive, or the
    /// world).
    pub group: Option<Vec<u32>>,
    /// The collective's place in the group's ordered list.
    pub index: Option<usize>,
    /// The rank compared against (or waited for), and the rank whose load
    /// step is refused.
    pub ranks: (u32, u32),
    pub what: String,
    /// What the line's runtime logs for it, where known.
    pub runtime_log: Vec<String>,
    /// Whether the line's runtime finds it at load.
    pub runtime_finds: bool,
    pub step: usize,
}

#[pymethods]
impl Disagreement {
    fn __repr__(&self) -> String {
        format!(
            "Disagreement({} of ranks {} and {})",
            self.kind, self.ranks.0, self.ranks.1
        )
    }
}

/// A world of ranks (`world=`): its shape, its ranks and whether they agree.
#[pyclass(frozen, get_all, module = "neffld")]
pub struct PlanWorld {
    pub size: u32,
    pub hosts: u32,
    pub cores_per_host: u32,
    pub chips_per_host: u32,
    pub root_comm: String,
    /// NEURON_RT_ROOT_COMM_ID is not set: the plan loads as though the
    /// framework had set `root_comm`.
    pub root_comm_assumed: bool,
    /// The line's runtime compares a signature of each group's collectives
    /// (else how many there are).
    pub signature_check: bool,
    pub replica_group_cap: u32,
    pub ranks: Vec<Py<WorldRank>>,
    pub disagreements: Vec<Py<Disagreement>>,
    /// No disagreement.
    pub agrees: bool,
}

#[pymethods]
impl PlanWorld {
    fn __repr__(&self) -> String {
        format!(
            "PlanWorld({} ranks on {} host(s), {} disagreement(s))",
            self.size,
            self.hosts,
            self.disagreements.len()
        )
    }
}

fn world(py: Python<'_>, w: &lib::WorldPlan) -> PyResult<Py<PlanWorld>> {
    let ranks = w
        .ranks
        .iter()
        .map(|r| {
            Py::new(
                py,
                WorldRank {
                    rank: r.rank,
                    step: r.step,
                    file: r.file.display().to_string(),
                    core: r.core,
                    host: r.host,
                    loaded: r.loaded,
                    collectives: r.collectives,
                    groups: r.groups,
                },
            )
        })
        .collect::<PyResult<_>>()?;
    let disagreements = w
        .disagreements
        .iter()
        .map(|d| {
            Py::new(
                py,
                Disagreement {
                    kind: match d.kind {
                        lib::DisagreementKind::WorldSize => "world_size",
                        lib::DisagreementKind::Mismatch => "mismatch",
                        _ => "deadlock",
                    },
                    group: d.group.clone(),
                    index: d.index,
                    ranks: d.ranks,
                    what: d.what.clone(),
                    runtime_log: d.runtime_log.clone(),
                    runtime_finds: d.runtime_finds,
                    step: d.step,
                },
            )
        })
        .collect::<PyResult<_>>()?;
    let s = &w.shape;
    Py::new(
        py,
        PlanWorld {
            size: s.size,
            hosts: s.hosts,
            cores_per_host: s.cores_per_host,
            chips_per_host: s.chips_per_host,
            root_comm: w.root_comm.clone(),
            root_comm_assumed: s.root_comm_assumed,
            signature_check: w.signature_check,
            replica_group_cap: w.replica_group_cap,
            ranks,
            disagreements,
            agrees: w.agrees(),
        },
    )
}

/// A device tensor held where the plan stopped.
#[pyclass(frozen, get_all, module = "neffld")]
pub struct PlanTensor {
    pub name: String,
    pub size: u64,
    pub core: u32,
    pub device: u32,
    pub pcore: u32,
    pub hbm: u32,
    /// The load whose input or output it is (None: a named tensor).
    pub io_of: Option<u32>,
}

/// How many more copies of one NEFF fit on a core.
#[pyclass(frozen, get_all, module = "neffld")]
pub struct Copies {
    pub file: String,
    pub count: u32,
    pub at_least: bool,
    /// Why the NEFF cannot load on the core at all, memory aside.
    pub refused: Option<Py<StepError>>,
}

/// What more fits on one logical core.
#[pyclass(frozen, get_all, module = "neffld")]
pub struct Headroom {
    pub core: u32,
    pub device: u32,
    pub pcores: Vec<u32>,
    pub hbm: u32,
    pub hbm_free: u64,
    pub largest_tensor: u64,
    pub shared_with: Vec<u32>,
    pub pools: Vec<Py<Pool>>,
    pub explain: Option<String>,
    pub copies: Vec<Py<Copies>>,
}

/// One piece of advice, judged by planning again with it.
#[pyclass(frozen, get_all, module = "neffld")]
pub struct Advice {
    /// "scratchpad_page", "paged_scratchpad", "lnc", "placement",
    /// "spread", "tensor_size" or "without_neff".
    pub kind: &'static str,
    pub change: String,
    /// The whole `neffld plan` command line that applies it
    /// (`neffld.plan_argv(advice.argv)` plans it).
    pub argv: Vec<OsString>,
    /// A placement's or a spread's moves, (from, to) logical cores (a
    /// spread's first step moved is the document's `from_step`).
    pub moves: Option<Vec<(u32, u32)>>,
    /// A tensor size's bytes: the refused tensor at the largest size that fits.
    pub size: Option<u64>,
    pub reason: String,
    pub fits: bool,
    pub completed_before: usize,
    pub completed_after: usize,
    pub held_before: u64,
    pub held_after: u64,
    pub saves: i64,
    pub fullest_hbm_before: u64,
    pub fullest_hbm_after: u64,
    /// The refused step it lets through: (step, free before, free after).
    pub unblocked: Option<(usize, u64, u64)>,
}

#[pymethods]
impl LogLine {
    fn __repr__(&self) -> String {
        format!("LogLine({}: {})", self.function, self.message)
    }
}

#[pymethods]
impl Pool {
    fn __repr__(&self) -> String {
        format!(
            "Pool({}: {} of {} bytes free, longest {})",
            self.pool, self.free, self.capacity, self.longest
        )
    }
}

#[pymethods]
impl PlanInstance {
    fn __repr__(&self) -> String {
        format!(
            "PlanInstance({}: {} chip(s), LNC {}, {} logical cores{})",
            self.name.unwrap_or(self.arch),
            self.chips,
            self.lnc,
            self.logical_cores,
            match (&self.visible_cores, &self.visible_by) {
                (Some(c), Some(by)) => format!(", {} visible with {by}", c.len()),
                _ => String::new(),
            }
        )
    }
}

#[pymethods]
impl PlanRefusal {
    fn __repr__(&self) -> String {
        format!(
            "PlanRefusal(step={}: {} bytes of {} ({}) on ND {} NC {})",
            self.step, self.size, self.usage, self.what, self.device, self.pcore
        )
    }
}

#[pymethods]
impl PlanNeff {
    fn __repr__(&self) -> String {
        format!("PlanNeff({} {} on core {})", self.id, self.file, self.core)
    }
}

#[pymethods]
impl PlanTensor {
    fn __repr__(&self) -> String {
        format!(
            "PlanTensor({}: {} bytes on core {})",
            self.name, self.size, self.core
        )
    }
}

#[pymethods]
impl Copies {
    fn __repr__(&self) -> String {
        match &self.refused {
            Some(e) => format!(
                "Copies({}: cannot load, {})",
                self.file,
                e.get().status_name
            ),
            None => format!(
                "Copies({}: {}{} more)",
                self.file,
                if self.at_least { ">=" } else { "" },
                self.count
            ),
        }
    }
}

#[pymethods]
impl Headroom {
    fn __repr__(&self) -> String {
        format!(
            "Headroom(core {}: {} bytes free on HBM {}, largest tensor {})",
            self.core, self.hbm_free, self.hbm, self.largest_tensor
        )
    }
}

#[pymethods]
impl StepError {
    fn __repr__(&self) -> String {
        format!(
            "StepError({} ({}): {})",
            self.status_name, self.status, self.message
        )
    }
}

#[pymethods]
impl Solve {
    fn __repr__(&self) -> String {
        let answer = match (self.bytes, self.ranks, &self.unanswered) {
            (Some(b), _, _) => format!("{b} bytes"),
            (_, Some(n), _) => match (&self.ceiling, &self.stopped) {
                (Some(c), _) => format!("at least {n} copies, stopped at {c}"),
                (None, Some(e)) => format!("{n} copies, then {}", e.get().status_name),
                (None, None) => format!("{n} copies"),
            },
            (_, _, Some(why)) => format!("no answer: {why}"),
            _ => "no answer".into(),
        };
        format!("Solve({}: {answer})", self.query)
    }
}

#[pymethods]
impl Advice {
    fn __repr__(&self) -> String {
        format!(
            "Advice({}: fits={})",
            self.change,
            crate::repr::py_bool(self.fits)
        )
    }
}

/// A question (`solve=`) and its answer.
#[pyclass(frozen, get_all, module = "neffld")]
pub struct Solve {
    /// "tensor" or "ranks".
    pub kind: &'static str,
    pub query: String,
    pub name: Option<String>,
    pub file: Option<String>,
    pub cores: Option<Vec<u32>>,
    /// The largest tensor that fits on every listed core at once.
    pub bytes: Option<u64>,
    /// Copies of the NEFF that fit, every core together.
    pub ranks: Option<u32>,
    /// Each core counted: (core, copies it took).
    pub per_core: Option<Vec<(u32, u32)>>,
    /// Why the last core to stop took no further copy.
    pub stopped: Option<Py<StepError>>,
    /// The ceiling that stopped the count (then at least `ranks`).
    pub ceiling: Option<String>,
    /// Why there is no answer.
    pub unanswered: Option<String>,
}

/// A planned deployment.
#[pyclass(frozen, get_all, module = "neffld")]
pub struct Plan {
    /// Every step ran.
    pub fits: bool,
    pub instance: Py<PlanInstance>,
    pub runtime: String,
    /// What the runtime takes when it starts beyond its line's carried
    /// captured rows, and why (2.35's DMA-profiling reservation).
    pub notes: Vec<String>,
    pub scratchpad_page: u64,
    pub contiguous_scratchpad: bool,
    /// A page size `NEURON_SCRATCHPAD_PAGE_SIZE` asked for that the
    /// contiguous scratchpad does not use (None: none, or pages used).
    pub unused_page_size: Option<u64>,
    pub io_tensors: bool,
    pub planned_steps: usize,
    pub parses: u64,
    pub steps: Vec<Py<PlanStep>>,
    pub refusal: Option<Py<PlanRefusal>>,
    pub neffs: Vec<Py<PlanNeff>>,
    pub tensors: Vec<Py<PlanTensor>>,
    pub headroom: Vec<Py<Headroom>>,
    pub advice: Vec<Py<Advice>>,
    pub no_fix: Option<String>,
    pub solve: Option<Py<Solve>>,
    /// The world the loads were the ranks of (`world=`).
    pub world: Option<Py<PlanWorld>>,
    /// The document `neffld plan --json` prints, as text.
    pub json: String,
}

fn pools(py: Python<'_>, p: &[r::PoolEntry]) -> PyResult<Vec<Py<Pool>>> {
    p.iter()
        .map(|p| {
            Py::new(
                py,
                Pool {
                    pool: p.pool,
                    capacity: p.capacity,
                    free: p.free,
                    longest: p.longest,
                },
            )
        })
        .collect()
}

impl Plan {
    fn new(py: Python<'_>, r: &PlanReport, json: String) -> PyResult<Plan> {
        let i = &r.instance;
        let steps = r
            .steps
            .iter()
            .map(|s| {
                let error = s.error.as_ref().map(|e| step_error(py, e)).transpose()?;
                Py::new(
                    py,
                    PlanStep {
                        index: s.index,
                        kind: s.kind,
                        file: s.file.clone(),
                        name: s.name.clone(),
                        size: s.size,
                        core: s.core,
                        device: s.device,
                        pcores: s.pcores.clone(),
                        status: s.status,
                        error,
                        held_after: s.held_after,
                    },
                )
            })
            .collect::<PyResult<_>>()?;
        let refusal = r
            .refusal
            .as_ref()
            .map(|f| -> PyResult<_> {
                let log = f
                    .log
                    .iter()
                    .map(|l| {
                        Py::new(
                            py,
                            LogLine {
                                function: l.function,
                                message: l.message.clone(),
                            },
                        )
                    })
                    .collect::<PyResult<_>>()?;
                Py::new(
                    py,
                    PlanRefusal {
                        step: f.step,
                        device: f.device,
                        pcore: f.pcore,
                        hbm: f.hbm,
                        size: f.size,
                        alignment: f.alignment,
                        usage: f.usage,
                        category: f.category,
                        what: f.what.clone(),
                        explain: f.explain.clone(),
                        pools: pools(py, &f.pools)?,
                        log,
                    },
                )
            })
            .transpose()?;
        let neffs = r
            .neffs
            .iter()
            .map(|n| {
                Py::new(
                    py,
                    PlanNeff {
                        id: n.id,
                        name: n.name.clone(),
                        file: n.file.clone(),
                        device: n.device,
                        core: n.core,
                        pcores: n.pcores.clone(),
                        rank: n.rank,
                        collectives_not_counted: n.collectives_not_counted.clone(),
                    },
                )
            })
            .collect::<PyResult<_>>()?;
        let tensors = r
            .tensors
            .iter()
            .map(|t| {
                Py::new(
                    py,
                    PlanTensor {
                        name: t.name.clone(),
                        size: t.size,
                        core: t.core,
                        device: t.device,
                        pcore: t.pcore,
                        hbm: t.hbm,
                        io_of: t.io_of,
                    },
                )
            })
            .collect::<PyResult<_>>()?;
        let headroom = r
            .headroom
            .iter()
            .map(|h| {
                let copies = h
                    .copies
                    .iter()
                    .map(|c| {
                        Py::new(
                            py,
                            Copies {
                                file: c.file.clone(),
                                count: c.count,
                                at_least: c.at_least,
                                refused: c
                                    .refused
                                    .as_ref()
                                    .map(|e| step_error(py, e))
                                    .transpose()?,
                            },
                        )
                    })
                    .collect::<PyResult<_>>()?;
                Py::new(
                    py,
                    Headroom {
                        core: h.core,
                        device: h.device,
                        pcores: h.pcores.clone(),
                        hbm: h.hbm,
                        hbm_free: h.hbm_free,
                        largest_tensor: h.largest_tensor,
                        shared_with: h.shared_with.clone(),
                        pools: pools(py, &h.pools)?,
                        explain: h.explain.clone(),
                        copies,
                    },
                )
            })
            .collect::<PyResult<_>>()?;
        let advice = r
            .advice
            .iter()
            .map(|a| {
                Py::new(
                    py,
                    Advice {
                        kind: a.kind,
                        change: a.change.clone(),
                        argv: a.argv.clone(),
                        moves: a
                            .moves
                            .as_ref()
                            .map(|m| m.iter().map(|m| (m.from, m.to)).collect()),
                        size: a.size,
                        reason: a.reason.clone(),
                        fits: a.fits,
                        completed_before: a.completed_before,
                        completed_after: a.completed_after,
                        held_before: a.held_before,
                        held_after: a.held_after,
                        saves: a.saves,
                        fullest_hbm_before: a.fullest_hbm_before,
                        fullest_hbm_after: a.fullest_hbm_after,
                        unblocked: a
                            .unblocked
                            .as_ref()
                            .map(|u| (u.step, u.free_before, u.free_after)),
                    },
                )
            })
            .collect::<PyResult<_>>()?;
        let solve = r
            .solve
            .as_ref()
            .map(|s| {
                Py::new(
                    py,
                    Solve {
                        kind: s.kind,
                        query: s.query.clone(),
                        name: s.name.clone(),
                        file: s.file.clone(),
                        cores: s.cores.clone(),
                        bytes: s.bytes,
                        ranks: s.ranks,
                        per_core: s
                            .per_core
                            .as_ref()
                            .map(|p| p.iter().map(|c| (c.core, c.copies)).collect()),
                        stopped: s.stopped.as_ref().map(|e| step_error(py, e)).transpose()?,
                        ceiling: s.ceiling.clone(),
                        unanswered: s.unanswered.clone(),
                    },
                )
            })
            .transpose()?;
        Ok(Plan {
            fits: r.fits,
            instance: Py::new(
                py,
                PlanInstance {
                    name: i.name,
                    chip: i.chip,
                    arch: i.arch,
                    chips: i.chips,
                    cores_per_chip: i.cores_per_chip,
                    hbms_per_chip: i.hbms_per_chip,
                    hbm_size: i.hbm_size,
                    lnc: i.lnc,
                    logical_cores: i.logical_cores,
                    visible_cores: i.visible.as_ref().map(|v| v.cores.clone()),
                    visible_by: i.visible.as_ref().map(|v| format!("{}={}", v.var, v.value)),
                },
            )?,
            runtime: r.runtime.to_string(),
            notes: r.notes.clone(),
            scratchpad_page: r.scratchpad_page,
            contiguous_scratchpad: r.contiguous_scratchpad,
            unused_page_size: r.unused_page_size,
            io_tensors: r.io_tensors,
            planned_steps: r.planned_steps,
            parses: r.parses,
            steps,
            refusal,
            neffs,
            tensors,
            headroom,
            advice,
            no_fix: r.no_fix.clone(),
            solve,
            world: r.world.as_ref().map(|w| world(py, w)).transpose()?,
            json,
        })
    }
}

#[pymethods]
impl Plan {
    /// The document `neffld plan --json` prints, as a dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        py.import("json")?
            .call_method1("loads", (&self.json,))?
            .cast_into::<PyDict>()
            .map_err(Into::into)
    }

    /// Every device's memory where the plan stopped (`to_dict()["memory"]`).
    #[getter]
    fn memory<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(self
            .to_dict(py)?
            .get_item("memory")?
            .unwrap_or_else(|| py.None().into_bound(py)))
    }

    fn __repr__(&self) -> String {
        let failed = self
            .steps
            .iter()
            .find(|s| s.get().error.is_some())
            .map(|s| s.get().index + 1);
        match failed {
            None => format!("Plan(fits: all {} steps)", self.planned_steps),
            Some(n) => format!("Plan(does not fit: step {n} of {})", self.planned_steps),
        }
    }
}
