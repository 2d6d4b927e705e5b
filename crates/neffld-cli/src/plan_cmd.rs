//! `neffld plan`: a deployment, step by step, on one simulated instance
//! (the library's planner, `neffld::plan`); this module reads the command
//! line or the deployment file and renders the answer.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::ArgMatches;
use neffld::instance::Instance;
use neffld::plan::deployment::core_list;
use neffld::plan::{self, Deployment, Plan, PlanError, PlanReport, Solve, SolveAnswer, Step};
use neffld::report::MemoryReport;
use neffld::text::count;
use neffld::NrtStatus;
use neffld::RuntimeLine;
use serde::Serialize;

use crate::load_cmd::parse_runtime;
use crate::report::{
    emit, exit_after_report, print_json, unwritten_warning, write_html, Failure, Stamp,
};
use crate::style::Style;
use crate::{plan_map, units};

/// Options of `neffld plan`.
#[derive(clap::Args)]
pub struct PlanArgs {
    /// What to load, in order: FILE (the next free logical core) or
    /// FILE@CORES (3, 0-31, 0,2,4: one load per listed core); or one
    /// deployment file (*.toml) for anything longer.
    /// (None: a plan of tensors only, `--tensor`.)
    #[arg(value_name = "LOAD|DEPLOYMENT.toml")]
    pub loads: Vec<String>,
    /// Instance type: trn1.2xlarge, trn1.32xlarge, trn1n.32xlarge,
    /// inf2.xlarge, inf2.8xlarge, inf2.24xlarge, inf2.48xlarge,
    /// trn2.3xlarge, trn2.48xlarge, trn2u.48xlarge (default:
    /// NEFFLD_INSTANCE, else one chip of the first NEFF's architecture).
    #[arg(long, value_name = "TYPE")]
    pub instance: Option<String>,
    /// Logical-core size (NEURON_LOGICAL_NC_CONFIG; trn1 and inf2 take only 1).
    #[arg(long, value_name = "N")]
    pub lnc: Option<u32>,
    /// Runtime line to reproduce: 2.23, 2.25, 2.27, 2.30, 2.31, 2.32, 2.33 or
    /// 2.34 (default as for `load`: 2.34).
    #[arg(long, value_parser = parse_runtime, value_name = "LINE")]
    pub runtime: Option<RuntimeLine>,
    /// A runtime variable (repeatable): NEURON_SCRATCHPAD_PAGE_SIZE,
    /// NEURON_LOGICAL_NC_CONFIG, NEURON_RT_VISIBLE_CORES,
    /// NEURON_RT_PROFILE_BUF_<KIND>_MB, ... over the process environment.
    #[arg(long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Allocate a named device tensor of SIZE bytes (4096, 512MiB, 2GiB) on
    /// each listed logical core, in command-line order with the loads (repeatable).
    #[arg(long = "tensor", value_name = "NAME=SIZE@CORES")]
    pub tensors: Vec<String>,
    /// Unload the latest load of FILE on each listed core, in command-line
    /// order with the loads (repeatable).
    #[arg(long = "unload", value_name = "FILE@CORES")]
    pub unloads: Vec<String>,
    /// Free the tensor NAME of each listed core, in command-line order with
    /// the loads (repeatable).
    #[arg(long = "free", value_name = "NAME@CORES")]
    pub frees: Vec<String>,
    /// Solve instead of check: NAME@CORES, the largest tensor NAME that fits
    /// on every listed logical core at once beside the whole deployment; or
    /// FILE.neff[@CORES], how many more loads of FILE fit (on the listed
    /// cores in order, else each on the next free core).
    #[arg(long, value_name = "NAME@CORES|FILE.neff[@CORES]")]
    pub solve: Option<String>,
    /// Ceiling on a NEFF's inflated payload in bytes, neffld's own guard
    /// (NEFFLD_MAX_INFLATED; default: 64x the payload, 256 MiB to 32 GiB).
    #[arg(long, value_name = "BYTES")]
    pub max_inflated: Option<u64>,
    /// Do not allocate each load's input and output tensors (frameworks do).
    #[arg(long)]
    pub no_io_tensors: bool,
    /// Machine-readable output (stable schema, see docs/cli.md).
    #[arg(long)]
    pub json: bool,
    /// Write an HTML view of the whole instance (chips, HBMs, cores, NEFFs
    /// and tensors by category) to this file.
    #[arg(long, value_name = "FILE.html")]
    pub map: Option<PathBuf>,
}

/// The steps of the command line in the order written: loads, tensors and
/// unloads interleave by position.
fn command_line_steps(
    a: &PlanArgs,
    m: Option<&ArgMatches>,
    with_loads: bool,
    budget: &mut plan::StepBudget,
) -> Result<(Vec<Step>, Vec<String>), Failure> {
    let usage = |e: plan::DeploymentError| Failure::usage(e.to_string());
    let at = |id: &str, n: usize| -> Vec<usize> {
        m.and_then(|m| m.indices_of(id))
            .map(|i| i.collect())
            .unwrap_or_else(|| (0..n).collect())
    };
    let mut ordered: Vec<(usize, Vec<Step>, String)> = Vec::new();
    // Each argument expands to at most 65536 steps, counted against the
    // whole deployment's ceiling before the next is read.
    let mut push = |key: usize, steps: Vec<Step>, place: String| -> Result<(), Failure> {
        budget.take(steps.len(), place.clone()).map_err(usage)?;
        ordered.push((key, steps, place));
        Ok(())
    };
    if with_loads {
        for (i, arg) in at("loads", a.loads.len()).into_iter().zip(&a.loads) {
            let steps = plan::parse_load(arg).map_err(usage)?;
            push(i, steps, format!("LOAD '{arg}'"))?;
        }
    }
    for (i, arg) in at("tensors", a.tensors.len()).into_iter().zip(&a.tensors) {
        let steps = plan::parse_tensor(arg).map_err(usage)?;
        push(i, steps, format!("--tensor '{arg}'"))?;
    }
    for (i, arg) in at("unloads", a.unloads.len()).into_iter().zip(&a.unloads) {
        let steps = plan::parse_unload(arg).map_err(usage)?;
        push(i, steps, format!("--unload '{arg}'"))?;
    }
    for (i, arg) in at("frees", a.frees.len()).into_iter().zip(&a.frees) {
        let steps = plan::parse_free(arg).map_err(usage)?;
        push(i, steps, format!("--free '{arg}'"))?;
    }
    ordered.sort_by_key(|(key, _, _)| *key);
    let mut steps = Vec::new();
    let mut origins = Vec::new();
    for (_, s, place) in ordered {
        origins.extend(std::iter::repeat_n(place, s.len()));
        steps.extend(s);
    }
    Ok((steps, origins))
}

/// The deployment the command line describes: a deployment file with the
/// flags over it, or the LOADs; the process's runtime variables first.
fn deployment(a: &PlanArgs, m: Option<&ArgMatches>) -> Result<Deployment, Failure> {
    let usage = |e: plan::DeploymentError| Failure::usage(e.to_string());
    let file = plan::deployment_file(&a.loads).map_err(|e| Failure::usage(e.into()))?;
    let max_steps = neffld::config::max_steps(|k| std::env::var(k).ok())
        .map_err(|e| Failure::usage(e.to_string()))?;
    let mut budget = plan::StepBudget::new(max_steps);
    let d = match file {
        Some(path) => {
            let text = plan::read_deployment(path)
                .map_err(|e| Failure::io(format!("cannot read {}: {e}", path.display())))?;
            let base = path.parent().unwrap_or(Path::new("."));
            let mut d =
                plan::parse_toml_within(&text, &path.display().to_string(), base, &mut budget)
                    .map_err(usage)?;
            let (steps, origins) = command_line_steps(a, m, false, &mut budget)?;
            d.origins.resize(d.steps.len(), String::new());
            d.steps.extend(steps);
            d.origins.extend(origins);
            d
        }
        None => {
            let (steps, origins) = command_line_steps(a, m, true, &mut budget)?;
            Deployment {
                io_tensors: true,
                steps,
                origins,
                ..Deployment::default()
            }
        }
    };
    // In the order the mistakes were always reported: variables, instance, question.
    let overrides = plan::Overrides {
        env: a
            .env
            .iter()
            .map(|e| plan::parse_env(e))
            .collect::<Result<_, _>>()
            .map_err(usage)?,
        instance: match &a.instance {
            Some(i) => {
                Some(Instance::named(i).map_err(|e| Failure::usage(format!("--instance: {e}")))?)
            }
            None => None,
        },
        lnc: a.lnc.map(|l| (l, "--lnc".to_string())),
        runtime: a.runtime,
        max_inflated: a.max_inflated,
        solve: a
            .solve
            .as_deref()
            .map(plan::parse_solve)
            .transpose()
            .map_err(usage)?,
        io_tensors: !a.no_io_tensors,
    };
    Ok(d.overridden(overrides, |k| std::env::var(k).ok()))
}

fn plan_failure(e: &PlanError) -> Failure {
    match e {
        PlanError::Io { .. } => Failure::io(e.to_string()),
        PlanError::Start(le) if le.status() != NrtStatus::Invalid => Failure {
            stage: le.stage(),
            status: le.status(),
            message: e.to_string(),
        },
        _ => Failure::usage(e.to_string()),
    }
}

/// A failure to plan `d` as the command reports it: a file that cannot be
/// read is named where the deployment names it.
pub fn failure_of(e: &PlanError, d: &Deployment) -> Failure {
    let mut f = plan_failure(e);
    if let PlanError::Io { path, .. } = e {
        let at = d
            .steps
            .iter()
            .position(|s| matches!(s, Step::Load { file, .. } if file == path));
        if let Some(origin) = at.and_then(|i| d.origins.get(i)).filter(|o| !o.is_empty()) {
            f.message = format!("{origin}: {}", f.message);
        }
    }
    f
}

/// The `plan --json` document (docs/cli.md): the library's report, an
/// unwritten map among the warnings, and the contract's keys.
#[derive(Serialize)]
pub struct PlanDoc {
    #[serde(flatten)]
    pub report: PlanReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<String>>,
    #[serde(flatten)]
    pub stamp: Stamp,
}

impl PlanDoc {
    /// The document on one line, its keys sorted as `--json` prints them
    /// (Python's `Plan.json`).
    pub fn json_line(&self) -> String {
        serde_json::to_value(self)
            .expect("a plan document serialises")
            .to_string()
    }
}

/// What the command makes of a plan: its `--json` document, and the map
/// written to `map` when asked for (with the failure to write it: it costs
/// the map, not the plan).
pub fn output(p: &Plan, map: Option<&Path>) -> (PlanDoc, Option<Failure>) {
    let failure = p.failed_step().map(|(_, _, f)| Failure {
        stage: f.stage,
        status: f.status,
        message: f.message.clone(),
    });
    let mut doc = PlanDoc {
        report: p.report(),
        warnings: None,
        stamp: Stamp::new("plan", failure.as_ref()),
    };
    let unwritten = map.and_then(|path| write_html(path, &plan_map::render(&doc.report)));
    if let Some(f) = &unwritten {
        unwritten_warning(&mut doc.warnings, f, true);
    }
    (doc, unwritten)
}

/// The deployment a `neffld plan` command line describes (`args`: the
/// words after `plan`) and the map it asks for, read by the command's own
/// parser: what Python's `neffld.plan_argv` plans (an advice's `argv`).
pub fn command_deployment(
    args: impl IntoIterator<Item = std::ffi::OsString>,
) -> Result<(Deployment, Option<PathBuf>), Failure> {
    use clap::{CommandFactory, FromArgMatches};
    let argv: Vec<std::ffi::OsString> = ["neffld", "plan"]
        .into_iter()
        .map(std::ffi::OsString::from)
        .chain(args)
        .collect();
    let usage = |e: clap::Error| {
        Failure::usage(
            e.render()
                .to_string()
                .trim()
                .trim_start_matches("error: ")
                .to_string(),
        )
    };
    let matches = crate::Cli::command()
        .try_get_matches_from(&argv)
        .map_err(usage)?;
    match crate::Cli::from_arg_matches(&matches)
        .map_err(usage)?
        .command
    {
        crate::Command::Plan(a) => {
            let d = deployment(&a, matches.subcommand_matches("plan"))?;
            Ok((d, a.map))
        }
        _ => Err(Failure::usage("not a plan".into())),
    }
}

/// The command's plan of what the arguments describe; with `guard`, a
/// NEFF shortened by another process while the plan has it mapped ends the
/// command as the I/O failure it is (exit status 2, the files named, as
/// JSON when asked) instead of a kill by `SIGBUS` ([`crate::sigbus`]).
fn evaluate(
    a: &PlanArgs,
    m: Option<&ArgMatches>,
) -> Result<(Plan, PlanDoc, Option<Failure>), Failure> {
    let d = deployment(a, m)?;
    if d.steps.is_empty() {
        return Err(Failure::usage("the deployment has no step".into()));
    }
    let _shortened = {
        let mut seen = std::collections::BTreeSet::new();
        let mut files: Vec<String> = Vec::new();
        for s in &d.steps {
            if let Step::Load { file, .. } = s {
                if seen.insert(file) {
                    files.push(file.display().to_string());
                }
            }
        }
        let f = Failure::io(format!(
            "cannot read a NEFF of the plan ({}): a file was shortened by another process while it was mapped",
            files.join(", ")
        ));
        let (message, fd) = crate::input::guard_message("plan", &f, a.json);
        crate::sigbus::guard_range(1, usize::MAX, message, fd)
    };
    let p = plan::plan(&d).map_err(|e| failure_of(&e, &d))?;
    let (doc, unwritten) = output(&p, a.map.as_deref());
    Ok((p, doc, unwritten))
}

pub fn run(a: &PlanArgs, m: Option<&ArgMatches>, style: Style) -> Result<ExitCode, Failure> {
    let (p, doc, unwritten) = evaluate(a, m)?;
    if a.json {
        print_json(&doc);
    } else {
        emit(&human(&p, &doc.report, style));
    }
    Ok(exit_after_report(
        "plan",
        unwritten,
        p.fits(),
        a.json,
        style,
    ))
}

/// The solve line of the human report.
fn solve_text(p: &Plan) -> Option<String> {
    let s = p.solve.as_ref()?;
    Some(match (&s.solve, &s.answer) {
        (Solve::Tensor { name, cores }, Ok(SolveAnswer::Bytes(b))) => format!(
            "solve     {name}: at most {b} bytes ({}) on each of {} at once (one 4 KiB granule more is refused)",
            units::human_floor(*b),
            count(cores.len() as u64, "logical core")
        ),
        (Solve::Ranks { file, cores }, Ok(SolveAnswer::Ranks { count: n, tried })) => format!(
            "solve     {}: {n} more load{} fit, of {tried} tried ({})",
            file.display(),
            if *n == 1 { "" } else { "s" },
            match cores {
                Some(c) => format!("on cores {} in order", plan::deployment::core_list(c)),
                None => "each on the next free logical core".into(),
            }
        ),
        (q, Err(e)) => format!("solve     {q}: no answer: {e}"),
        (q, Ok(_)) => format!("solve     {q}: no answer"),
    })
}

fn step_text(s: &Step) -> String {
    match s {
        Step::Load { file, .. } => format!("load {}", file.display()),
        Step::Tensor { name, size, .. } => format!("tensor {name} ({})", units::human(*size)),
        Step::Unload { file, .. } => format!("unload {}", file.display()),
        Step::Free { name, .. } => format!("free {name}"),
    }
}

/// An HBM is shown when something of a model or a client is on it.
fn shown(m: &MemoryReport) -> impl Iterator<Item = &neffld::report::HbmMemory> {
    m.hbms
        .iter()
        .filter(|h| h.cores.iter().any(|c| c.model.iter().any(|&b| b > 0)))
}

fn human(p: &Plan, r: &PlanReport, style: Style) -> String {
    use std::fmt::Write as _;
    let mut t = String::new();
    let i = &r.instance;
    let _ = writeln!(
        t,
        "plan      {}: {} chip{} of {} cores and {} HBMs of {}; LNC {} ({} logical cores); runtime {}; {}",
        p.instance.map_or(format!("one {} chip", p.arch.instance()), |i| i.name.to_string()),
        p.chips,
        if p.chips == 1 { "" } else { "s" },
        i.cores_per_chip,
        i.hbms_per_chip,
        units::human(i.hbm_size),
        p.lnc,
        i.logical_cores,
        p.line,
        if p.contiguous_scratchpad {
            format!(
                "contiguous scratchpad in {} steps",
                units::human(p.scratchpad_page)
            )
        } else {
            format!("scratchpad pages {}", units::human(p.scratchpad_page))
        },
    );
    match p.failed_step() {
        None => {
            let _ = writeln!(
                t,
                "{}",
                style.ok(&format!(
                    "fits      yes: all {}",
                    count(p.planned as u64, "step")
                ))
            );
        }
        Some((n, s, f)) => {
            let _ = writeln!(
                t,
                "{}",
                style.fail(&format!(
                    "fits      no: step {} of {} ({} on core {}) {}: {}",
                    n + 1,
                    p.planned,
                    step_text(&s.step),
                    s.vnc.map_or("?".into(), |v| v.to_string()),
                    if f.own_limit.is_some() {
                        "stopped by neffld's own limit".to_string()
                    } else {
                        format!("refused [{}]", f.status)
                    },
                    f.message
                ))
            );
        }
    }
    if let Some(line) = solve_text(p) {
        let _ = writeln!(t, "{line}");
    }
    let mut busy: Vec<(u32, &neffld::report::HbmMemory)> = p
        .devices
        .iter()
        .flat_map(|m| shown(m).map(move |h| (m.device, h)))
        .collect();
    let line = |(nd, h): &(u32, &neffld::report::HbmMemory)| {
        format!(
            "ND {nd} HBM {} {} used, {} free",
            h.hbm,
            units::human(h.usage().total()),
            units::human(h.free())
        )
    };
    if busy.len() > 4 {
        // Many HBMs: the fullest and the emptiest of those in use.
        busy.sort_by_key(|(_, h)| std::cmp::Reverse(h.held));
        let _ = writeln!(
            t,
            "memory    {} HBMs in use; fullest {}; least used {}",
            busy.len(),
            line(&busy[0]),
            line(&busy[busy.len() - 1])
        );
    } else if !busy.is_empty() {
        let all: Vec<String> = busy.iter().map(line).collect();
        let _ = writeln!(t, "memory    {}", all.join("; "));
    }
    if let Some(r) = &p.refusal {
        let _ = writeln!(t, "\nthe refusal, as the runtime logs it");
        for (f, m) in &r.log {
            let _ = writeln!(t, "ERROR  TDRV:{f:<40}{m}");
        }
        if let Some(why) = r.explain() {
            let _ = writeln!(t, "why       {why}");
        }
    }
    // Consecutive steps of one file or tensor with one result (the ranks
    // of one NEFF) are one line, their cores listed together: the JSON
    // keeps every step.
    let rows = runs(p.steps.iter().map(|s| {
        let result = match &s.outcome {
            Ok(()) => "ok".to_string(),
            Err(f) if f.own_limit.is_some() => "neffld's own limit".to_string(),
            Err(f) => format!("refused [{}]", f.status),
        };
        (step_text(&s.step), result)
    }));
    let rows: Vec<(usize, usize, String)> = rows
        .into_iter()
        .map(|(first, n, (text, result))| {
            let run = &p.steps[first..first + n];
            // One step's physical cores as they are; a run's, short.
            let pcores = if run.iter().all(|s| s.pcores == run[0].pcores) {
                let cores: Vec<String> = run[0].pcores.iter().map(|c| format!("nc{c}")).collect();
                cores.join(",")
            } else {
                let all = short_list(run.iter().flat_map(|s| s.pcores.iter().copied()).collect());
                format!("nc{}", all.replace(',', ",nc").replace('-', "-nc"))
            };
            let row = format!(
                "{text:<48} {:>5} {:>4}  {:<12} {result}",
                short_list(run.iter().filter_map(|s| s.vnc).collect()),
                short_list(run.iter().filter_map(|s| s.device).collect()),
                pcores,
            );
            (first, n, row)
        })
        .collect();
    let numbers: Vec<String> = rows
        .iter()
        .map(|&(first, n, _)| match n {
            1 => (first + 1).to_string(),
            _ => format!("{}-{}", first + 1, first + n),
        })
        .collect();
    let w = numbers.iter().map(String::len).max().unwrap_or(0).max(5);
    let _ = writeln!(t, "\nsteps");
    let _ = writeln!(
        t,
        "  {:>w$}  {:<48} {:>5} {:>4}  {:<12} result",
        "#", "step", "core", "ND", "cores"
    );
    for (number, (_, _, row)) in numbers.iter().zip(&rows) {
        let _ = writeln!(t, "  {number:>w$}  {row}");
    }
    if p.steps.len() < p.planned {
        let _ = writeln!(
            t,
            "  ({} not run)",
            count((p.planned - p.steps.len()) as u64, "further step")
        );
    }
    // HBMs whose tables differ only in their labels (the HBMs of ranks
    // of one NEFF) are the first one's table and one line.
    let hbms = runs_by(
        p.devices.iter().flat_map(|m| shown(m).map(move |h| (m, h))),
        |(_, a), (_, b)| a.reads_as(b),
    );
    if !hbms.is_empty() {
        let _ = writeln!(
            t,
            "\nmemory where the plan stopped (the runtime's usage table; MB and GB are MiB and GiB)"
        );
        let all: Vec<(u32, u32)> = p
            .devices
            .iter()
            .flat_map(|m| shown(m).map(move |h| (m.device, h.hbm)))
            .collect();
        for (first, n, (m, h)) in hbms {
            t.push_str(&m.usage_table_grouped(h));
            if n > 1 {
                let name = |(nd, hbm): (u32, u32)| format!("ND {nd} HBM {hbm}");
                let _ = writeln!(
                    t,
                    "the next {} HBMs in use, {} to {}: each as {}",
                    n - 1,
                    name(all[first + 1]),
                    name(all[first + n - 1]),
                    name(all[first])
                );
            }
        }
        let _ = writeln!(t, "NEFF id to name mapping:");
        // Consecutive ids of one file are one line: a run's ids less their
        // positions are one number.
        let names = runs(
            p.neffs
                .iter()
                .enumerate()
                .map(|(i, n)| (i64::from(n.id.0) - i as i64, &n.name, &n.file)),
        );
        for (first, count, (_, name, file)) in names {
            let id = p.neffs[first].id.0;
            let ids = match count {
                1 => id.to_string(),
                _ => format!("{id}-{}", id + count as u32 - 1),
            };
            let _ = writeln!(t, "{ids}: \"{name}\" ({})", file.display());
        }
    }
    if !p.headroom.is_empty() {
        let _ = writeln!(
            t,
            "\nheadroom (found by allocating, where the plan stopped)"
        );
        let files: Vec<String> = p.headroom[0]
            .copies
            .iter()
            .map(|(f, _)| {
                f.file_name().map_or(f.display().to_string(), |n| {
                    n.to_string_lossy().into_owned()
                })
            })
            .collect();
        let _ = writeln!(
            t,
            "  {:>5} {:>4} {:>4} {:>12} {:>15}   more copies of: {}",
            "core",
            "ND",
            "HBM",
            "HBM free",
            "largest tensor",
            files.join(", ")
        );
        // An HBM's rows: its first core's, then those of the cores that
        // share it (its figures are theirs together, shown once).
        let sharer =
            |h: &neffld::plan::Headroom| h.shared_with.iter().copied().filter(|&o| o < h.vnc).min();
        let mut hbm_rows: Vec<&[neffld::plan::Headroom]> = Vec::new();
        let mut at = 0;
        while at < p.headroom.len() {
            let end = at
                + 1
                + p.headroom[at + 1..]
                    .iter()
                    .take_while(|h| sharer(h) == Some(p.headroom[at].vnc))
                    .count();
            hbm_rows.push(&p.headroom[at..end]);
            at = end;
        }
        let copies = |h: &neffld::plan::Headroom| {
            let c: Vec<String> = h
                .copies
                .iter()
                .map(|(_, c)| format!("{}{}", if c.at_least { "≥" } else { "" }, c.count))
                .collect();
            c.join(", ")
        };
        let hbm = |h: &neffld::plan::Headroom| {
            if h.shared_with.is_empty() {
                h.hbm.to_string()
            } else {
                format!("{}*", h.hbm)
            }
        };
        // Consecutive HBMs with the same figures and as many cores each
        // (ranks of one NEFF) are one line, the figures each HBM's.
        let figures = |rows: &&[neffld::plan::Headroom]| {
            let h = &rows[0];
            let c: Vec<_> = h.copies.iter().map(|(_, c)| *c).collect();
            (
                rows.len(),
                sharer(h).is_none(),
                h.hbm_free,
                h.largest_tensor,
                c,
            )
        };
        for (first, n, rows) in runs_by(hbm_rows.iter(), |a, b| figures(a) == figures(b)) {
            let h = &rows[0];
            if n > 1 {
                let run: Vec<&neffld::plan::Headroom> = hbm_rows[first..first + n]
                    .iter()
                    .flat_map(|r| r.iter())
                    .collect();
                let each = match rows.len() {
                    1 => format!("each of {n} cores"),
                    k => format!("each of {n} HBMs, {k} cores on each"),
                };
                let _ = writeln!(
                    t,
                    "  {:>5} {:>4} {:>4} {:>12} {:>15}   {}   ({each})",
                    short_list(run.iter().map(|h| h.vnc).collect()),
                    short_list(run.iter().map(|h| h.device).collect()),
                    short_list(run.iter().map(|h| h.hbm).collect())
                        + if rows.len() > 1 { "*" } else { "" },
                    units::human_floor(h.hbm_free),
                    units::human_floor(h.largest_tensor),
                    copies(h)
                );
                continue;
            }
            for h in rows.iter() {
                match sharer(h) {
                    // An HBM shared by several cores of the list is one
                    // HBM: its figures once, on its first core.
                    Some(first) => {
                        let _ = writeln!(
                            t,
                            "  {:>5} {:>4} {:>4} {:>12} {:>15}   (the HBM of core {first}: its figures are shared, not more)",
                            h.vnc, h.device, hbm(h), "", ""
                        );
                    }
                    None => {
                        let _ = writeln!(
                            t,
                            "  {:>5} {:>4} {:>4} {:>12} {:>15}   {}",
                            h.vnc,
                            h.device,
                            hbm(h),
                            units::human_floor(h.hbm_free),
                            units::human_floor(h.largest_tensor),
                            copies(h)
                        );
                    }
                }
            }
        }
        // Why "largest" is under "free", once per distinct explanation.
        let mut said: Vec<String> = Vec::new();
        for h in p
            .headroom
            .iter()
            .filter(|h| h.shared_with.iter().all(|&o| o > h.vnc))
        {
            if let Some(why) = h.explain() {
                if !said.contains(&why) {
                    let _ = writeln!(t, "  core {}: largest tensor under HBM free: {why}", h.vnc);
                    said.push(why);
                }
                if said.len() >= 4 {
                    break;
                }
            }
        }
        if p.headroom.iter().any(|h| !h.shared_with.is_empty()) {
            let _ = writeln!(
                t,
                "  * an HBM shared by several cores of the plan: its free bytes, largest tensor and copies are for all of them together, counted once"
            );
        }
    }
    if !p.advice.is_empty() {
        let _ = writeln!(t, "\nadvice (each judged by planning the deployment again)");
        for a in &p.advice {
            let _ = writeln!(t, "  - {}: {}", a.change, a.reason);
            let _ = writeln!(
                t,
                "    fits: {}; run: {}",
                if a.fits { "yes" } else { "no" },
                shell_words(&a.argv)
            );
        }
    }
    if let Some(n) = &p.no_fix {
        let _ = writeln!(t, "\n{}", style.fail(&format!("no fix    {n}")));
    }
    t
}

/// Consecutive equal items once each: the index of a run's first, how
/// many it holds, and the item.
fn runs<T: PartialEq>(items: impl IntoIterator<Item = T>) -> Vec<(usize, usize, T)> {
    runs_by(items, |a, b| a == b)
}

/// [`runs`] of the items `alike` takes for one another (each compared with
/// its run's first).
fn runs_by<T>(
    items: impl IntoIterator<Item = T>,
    alike: impl Fn(&T, &T) -> bool,
) -> Vec<(usize, usize, T)> {
    let mut out: Vec<(usize, usize, T)> = Vec::new();
    for (i, x) in items.into_iter().enumerate() {
        match out.last_mut() {
            Some((_, n, first)) if alike(first, &x) => *n += 1,
            _ => out.push((i, 1, x)),
        }
    }
    out
}

/// Numbers as a short sorted list (`0-63`, `0-1,3`), `-` for none.
fn short_list(mut v: Vec<u32>) -> String {
    v.sort_unstable();
    v.dedup();
    if v.is_empty() {
        "-".to_string()
    } else {
        core_list(&v)
    }
}

/// A command line as a POSIX shell reads it back: words of plain
/// characters as they are, others in single quotes.
fn shell_words(argv: &[String]) -> String {
    argv.iter()
        .map(|w| {
            let plain = !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_./@=,:+-%".contains(c));
            if plain {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
