//! `neffld plan`: a deployment, step by step, on one simulated instance
//! (the library's planner, `neffld::plan`); this module reads the command
//! line or the deployment file and renders the answer.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::ArgMatches;
use neffld::instance::Instance;
use neffld::plan::{self, Deployment, Plan, PlanError, PlanReport, Step};
use neffld::NrtStatus;
use neffld::RuntimeLine;
use serde::Serialize;

use crate::load_cmd::{parse_runtime, runtime_help};
use crate::plan_outputs::{PlanFiles, Written};
use crate::plan_text;
use crate::report::{emit, failed, print_json, report_failure, unwritten_warning, Failure, Stamp};
use crate::style::Style;

/// Options of `neffld plan`.
#[derive(clap::Args)]
pub struct PlanArgs {
    /// What to load, in order: FILE (the next free logical core) or
    /// FILE@CORES (3, 0-31, 0,2,4: one load per listed core); or one
    /// deployment file (*.toml) for anything longer.
    /// (None: a plan of tensors only, `--tensor`.)
    #[arg(value_name = "LOAD|DEPLOYMENT.toml")]
    pub loads: Vec<OsString>,
    /// Instance type: trn1.2xlarge, trn1.32xlarge, trn1n.32xlarge,
    /// inf2.xlarge, inf2.8xlarge, inf2.24xlarge, inf2.48xlarge,
    /// trn2.3xlarge, trn2.48xlarge, trn2u.48xlarge (default:
    /// NEFFLD_INSTANCE, else one chip of the first NEFF's architecture).
    #[arg(long, value_name = "TYPE")]
    pub instance: Option<String>,
    /// Logical-core size (NEURON_LOGICAL_NC_CONFIG; trn1 and inf2 take only 1).
    #[arg(long, value_name = "N")]
    pub lnc: Option<u32>,
    // The help names every line of the library's table.
    #[arg(long, value_parser = parse_runtime, value_name = "LINE", help = runtime_help())]
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
    pub unloads: Vec<OsString>,
    /// Free the tensor NAME of each listed core, in command-line order with
    /// the loads (repeatable).
    #[arg(long = "free", value_name = "NAME@CORES")]
    pub frees: Vec<String>,
    /// Solve instead of check: NAME@CORES, the largest tensor NAME that fits
    /// on every listed logical core at once beside the whole deployment; or
    /// FILE.neff[@CORES], how many copies of FILE fit on the listed cores
    /// (else on every logical core) beside it. Needs no LOAD: asked alone,
    /// of the empty instance.
    #[arg(long, value_name = "NAME@CORES|FILE.neff[@CORES]")]
    pub solve: Option<OsString>,
    /// Ceiling on a NEFF's inflated payload in bytes, neffld's own guard
    /// (NEFFLD_MAX_INFLATED; default: 64x the payload, 256 MiB to 32 GiB).
    #[arg(long, value_name = "BYTES")]
    pub max_inflated: Option<u64>,
    /// Do not allocate each load's input and output tensors (frameworks do).
    #[arg(long)]
    pub no_io_tensors: bool,
    /// The loads are the N ranks of one collectives world: rank r is the
    /// r-th load, loaded as nrt_load_collectives(..., r, N) loads it; the
    /// ranks' collectives are compared before any load (a disagreement or
    /// a rank that waits for a peer that never loads exits 1).
    #[arg(long, value_name = "N")]
    pub world: Option<u32>,
    /// Instances of the --instance type the world spans, each with its own
    /// devices; logical cores are numbered across them, host by host
    /// (default: as many as the world's ranks need).
    #[arg(long, value_name = "K")]
    pub hosts: Option<u32>,
    /// Machine-readable output (stable schema, see docs/cli.md).
    #[arg(long)]
    pub json: bool,
    /// Write an HTML view of the whole instance (chips, HBMs, cores, NEFFs
    /// and tensors by category) to this file.
    #[arg(long, value_name = "FILE.html")]
    pub map: Option<PathBuf>,
    /// Write the deployment as neuron-monitor reports it (one line of
    /// JSON) to this file; `-`: to standard output, the plan's own report
    /// then going to standard error.
    #[arg(long, value_name = "FILE|-")]
    pub monitor: Option<PathBuf>,
    /// With `--monitor -`: a report every SECONDS, as neuron-monitor
    /// streams, until interrupted or the reader closes the pipe (for its
    /// frontends: `| neuron-monitor-prometheus.py`).
    #[arg(long, value_name = "SECONDS", value_parser = crate::plan_outputs::parse_period)]
    pub monitor_period: Option<f64>,
    /// End a `--monitor-period` stream after N reports.
    #[arg(long, value_name = "N")]
    pub monitor_count: Option<u64>,
    /// Write the deployment as the Neuron driver's sysfs tree shows it
    /// (neuron<N>/neuron_core<M>/stats/...) as this directory, which must
    /// be missing, empty or an earlier such tree.
    #[arg(long, value_name = "DIR")]
    pub sysfs: Option<PathBuf>,
}

impl PlanArgs {
    /// The files the command line asks for besides the report.
    pub fn files(&self) -> PlanFiles {
        PlanFiles {
            map: self.map.clone(),
            monitor: self.monitor.clone(),
            sysfs: self.sysfs.clone(),
            period: self.monitor_period,
            count: self.monitor_count,
        }
    }
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
            push(i, steps, format!("LOAD '{}'", arg.display()))?;
        }
    }
    for (i, arg) in at("tensors", a.tensors.len()).into_iter().zip(&a.tensors) {
        let steps = plan::parse_tensor(arg).map_err(usage)?;
        push(i, steps, format!("--tensor '{arg}'"))?;
    }
    for (i, arg) in at("unloads", a.unloads.len()).into_iter().zip(&a.unloads) {
        let steps = plan::parse_unload(arg).map_err(usage)?;
        push(i, steps, format!("--unload '{}'", arg.display()))?;
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
    let env: Vec<(String, String)> = a
        .env
        .iter()
        .map(|e| plan::parse_env(e))
        .collect::<Result<_, _>>()
        .map_err(usage)?;
    // `--env NEFFLD_MAX_STEPS=N` over the process's, as for every variable.
    let max_steps = plan::step_ceiling(&env).map_err(|e| Failure::config(&e))?;
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
    // In the order the mistakes were always reported: instance, question.
    let overrides = plan::Overrides {
        env,
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
        world: a.world,
        hosts: a.hosts,
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
        PlanError::Config(c) => Failure::config(c),
        PlanError::HostMemory { oom, .. } => Failure {
            stage: "neffld",
            status: oom.status(),
            message: e.to_string(),
        },
        _ => Failure::usage(e.to_string()),
    }
}

/// A failure to plan `d` as the command reports it: a file that cannot be
/// read is named where the deployment names it.
pub fn failure_of(e: &PlanError, d: &Deployment) -> Failure {
    let mut f = plan_failure(e);
    let origin = match e {
        PlanError::Io { path, .. } => d
            .steps
            .iter()
            .position(|s| matches!(s, Step::Load { file, .. } if file == path))
            .and_then(|i| d.origins.get(i)),
        PlanError::Config(c) => d
            .env_origins
            .iter()
            .find(|(k, _)| k == c.var)
            .map(|(_, place)| place),
        _ => None,
    };
    if let Some(origin) = origin.filter(|o| !o.is_empty()) {
        f.message = format!("{origin}: {}", f.message);
    }
    f
}

/// The `plan --json` document (docs/cli.md): the library's report, where
/// the files asked for were written, an unwritten one among the warnings,
/// and the contract's keys.
#[derive(Serialize)]
pub struct PlanDoc {
    #[serde(flatten)]
    pub report: PlanReport,
    pub written: Written,
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

/// What the command makes of a plan: its `--json` document, and the
/// files asked for written (with the failures to write them: each costs
/// its file, not the plan).
pub fn output(p: &Plan, files: &PlanFiles) -> (PlanDoc, Vec<Failure>) {
    let failure = p.failed_step().map(|(_, _, f)| Failure {
        stage: f.stage,
        status: f.status,
        message: f.message.clone(),
    });
    let report = p.report();
    let (written, unwritten) = files.write(p, Some(&report));
    let mut doc = PlanDoc {
        report,
        written,
        warnings: None,
        stamp: Stamp::new("plan", failure.as_ref()),
    };
    for f in &unwritten {
        unwritten_warning(&mut doc.warnings, f, true);
    }
    (doc, unwritten)
}

/// The deployment a `neffld plan` command line describes (`args`: the
/// words after `plan`) and the files it asks for, read by the command's
/// own parser: what Python's `neffld.plan_argv` plans (an advice's `argv`).
pub fn command_deployment(
    args: impl IntoIterator<Item = std::ffi::OsString>,
) -> Result<(Deployment, PlanFiles), Failure> {
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
            let files = a.files();
            files.check()?;
            let d = deployment(&a, matches.subcommand_matches("plan"))?;
            Ok((d, files))
        }
        _ => Err(Failure::usage("not a plan".into())),
    }
}

/// The command's plan of what the arguments describe; with `guard`, a
/// NEFF shortened by another process while the plan has it mapped ends the
/// command as the I/O failure it is (exit status 2, the files named, as
/// JSON when asked) instead of a kill by `SIGBUS` ([`crate::sigbus`]).
fn evaluate(a: &PlanArgs, m: Option<&ArgMatches>) -> Result<Plan, Failure> {
    let d = deployment(a, m)?;
    d.has_work().map_err(|e| Failure::usage(e.to_string()))?;
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
    plan::plan(&d).map_err(|e| failure_of(&e, &d))
}

/// `out` and `err` colour standard output and standard error: with
/// `--monitor -` the report goes to standard error, standard output
/// carrying neuron-monitor's reports only.
pub fn run(
    a: &PlanArgs,
    m: Option<&ArgMatches>,
    out: Style,
    err: Style,
) -> Result<ExitCode, Failure> {
    let files = a.files();
    files.check()?;
    let p = evaluate(a, m)?;
    let to_stderr = files.streams();
    let style = if to_stderr { err } else { out };
    // The typed report (every step, NEFF and tensor) is built for the
    // document and the map; the human report reads the plan itself.
    let unwritten = if a.json {
        let (doc, unwritten) = output(&p, &files);
        if to_stderr {
            crate::plan_outputs::to_stderr(&crate::report::json_text(&doc))?;
        } else {
            print_json(&doc)?;
        }
        unwritten
    } else {
        let (_, unwritten) = files.write(&p, None);
        let text = plan_text::human(&p, style);
        if to_stderr {
            crate::plan_outputs::to_stderr(&text)?;
        } else {
            emit(&text)?;
        }
        unwritten
    };
    // A file that could not be written is told after the report.
    if !a.json {
        for f in &unwritten {
            report_failure("plan", f, false, err);
        }
    }
    files.stream(&p)?;
    Ok(match unwritten.first() {
        Some(f) => f.exit_code(),
        None if p.fits() => ExitCode::SUCCESS,
        None => failed(),
    })
}
