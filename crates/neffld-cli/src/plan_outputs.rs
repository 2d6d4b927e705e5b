//! The files `neffld plan` writes beside its report: the HTML map
//! (`--map`), neuron-monitor's report of the deployment (`--monitor`,
//! once to a file, or streamed to standard output with
//! `--monitor-period`) and the driver's sysfs tree (`--sysfs`). The
//! library decides what each holds (`Plan::monitor`, `Plan::sysfs`); this
//! module only writes them, by the file-system policy (`neffld::tree`):
//! never through a symbolic link, never half.
//!
//! A file that cannot be written costs that file, not the plan: the
//! report is printed, then the failure (exit status 2), and `--json`'s
//! document lists it among its warnings and says where the others went
//! (`written`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use neffld::plan::monitor::DEFAULT_PERIOD;
use neffld::plan::{Plan, PlanReport};
use serde::Serialize;

use crate::plan_map;
use crate::report::{shown_path, write_html, Failure};

/// What a plan is asked to write besides its report.
#[derive(Clone, Debug, Default)]
pub struct PlanFiles {
    /// The HTML map.
    pub map: Option<PathBuf>,
    /// neuron-monitor's report: a file, or `-` for standard output.
    pub monitor: Option<PathBuf>,
    /// The sysfs tree's directory.
    pub sysfs: Option<PathBuf>,
    /// Stream a report every this many seconds (`--monitor -` only).
    pub period: Option<f64>,
    /// Stop a stream after this many reports.
    pub count: Option<u64>,
}

/// Where each file was written (`plan --json`'s `written`): the path as
/// given, `-` for standard output; `None` when not asked for or not
/// written.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Written {
    pub map: Option<String>,
    pub monitor: Option<String>,
    pub sysfs: Option<String>,
}

/// `--monitor-period`'s value: seconds, a number (`5`, `0.5`) with an
/// optional `s`, from a millisecond to a day.
pub fn parse_period(s: &str) -> Result<f64, String> {
    let n = s.strip_suffix('s').unwrap_or(s);
    match n.trim().parse::<f64>() {
        Ok(v) if (0.001..=86_400.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "'{s}' is not a period: seconds from 0.001 to 86400 (5, 0.5, 2s)"
        )),
    }
}

fn is_stdout(p: &Path) -> bool {
    p.as_os_str() == "-"
}

impl PlanFiles {
    /// The command line's own mistakes, found before anything is planned.
    pub fn check(&self) -> Result<(), Failure> {
        let stream = self.monitor.as_deref().is_some_and(is_stdout);
        if self.period.is_some() && !stream {
            return Err(Failure::usage(
                "--monitor-period streams reports to standard output, as neuron-monitor does: give --monitor - (a file gets one report)".into(),
            ));
        }
        if self.count.is_some() && self.period.is_none() {
            return Err(Failure::usage(
                "--monitor-count ends a stream: give --monitor - --monitor-period SECONDS".into(),
            ));
        }
        if self.count == Some(0) {
            return Err(Failure::usage(
                "--monitor-count 0 streams nothing: give 1 or more".into(),
            ));
        }
        if self.sysfs.as_deref().is_some_and(is_stdout) {
            return Err(Failure::usage(
                "--sysfs writes a tree of files: give a directory, not -".into(),
            ));
        }
        Ok(())
    }

    /// Whether neuron-monitor's reports go to standard output (the plan's
    /// own report then goes to standard error).
    pub fn streams(&self) -> bool {
        self.monitor.as_deref().is_some_and(is_stdout)
    }

    /// Writes every file asked for (`report`: the plan's report, built
    /// when a map needs it and none is given): where each went, and what
    /// could not be written.
    pub fn write(&self, p: &Plan, report: Option<&PlanReport>) -> (Written, Vec<Failure>) {
        let mut written = Written::default();
        let mut failed = Vec::new();
        let mut note = |slot: &mut Option<String>, path: &Path, r: Result<(), Failure>| match r {
            Ok(()) => *slot = Some(path.display().to_string()),
            Err(f) => failed.push(f),
        };
        if let Some(path) = &self.map {
            let html = match report {
                Some(r) => plan_map::render(r),
                None => plan_map::render(&p.report()),
            };
            let r = write_html(path, &html).map_or(Ok(()), Err);
            note(&mut written.map, path, r);
        }
        if let Some(path) = &self.monitor {
            let r = if is_stdout(path) {
                Ok(())
            } else {
                let line = p.monitor(DEFAULT_PERIOD).line();
                neffld::tree::replace_file(path, line.as_bytes()).map_err(|e| {
                    Failure::io(format!(
                        "cannot write the neuron-monitor report {}: {e}",
                        shown_path(path)
                    ))
                })
            };
            note(&mut written.monitor, path, r);
        }
        if let Some(dir) = &self.sysfs {
            let r = p.sysfs().write(dir).map_err(|why| {
                Failure::io(format!(
                    "cannot write the sysfs tree {}: {}",
                    shown_path(dir),
                    crate::report::shown(&why)
                ))
            });
            note(&mut written.sysfs, dir, r);
        }
        (written, failed)
    }

    /// With `--monitor -`: neuron-monitor's report on standard output, one
    /// line each, once, or every `--monitor-period` seconds until
    /// `--monitor-count` reports, an interrupt, or the reader closing the
    /// pipe (which ends the stream quietly, as `| head` would want).
    pub fn stream(&self, p: &Plan) -> Result<(), Failure> {
        if !self.streams() {
            return Ok(());
        }
        let line = p.monitor(self.period.unwrap_or(DEFAULT_PERIOD)).line();
        let mut sent = 0u64;
        loop {
            let mut out = std::io::stdout().lock();
            match out.write_all(line.as_bytes()).and_then(|()| out.flush()) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
                Err(e) => {
                    return Err(Failure::io(format!(
                        "cannot write the neuron-monitor report to standard output: {e}"
                    )))
                }
            }
            drop(out);
            sent += 1;
            let Some(period) = self.period else {
                return Ok(());
            };
            if self.count.is_some_and(|c| sent >= c) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_secs_f64(period));
        }
    }
}

/// Writes a report to standard error (with `--monitor -`, standard
/// output is the stream's), ending in a newline.
pub fn to_stderr(text: &str) -> Result<(), Failure> {
    let mut err = std::io::stderr().lock();
    let newline: &[u8] = if text.ends_with('\n') { b"" } else { b"\n" };
    err.write_all(text.as_bytes())
        .and_then(|()| err.write_all(newline))
        .and_then(|()| err.flush())
        .map_err(|e| Failure::io(format!("cannot write the report to standard error: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_are_seconds_within_bounds() {
        assert_eq!(parse_period("5"), Ok(5.0));
        assert_eq!(parse_period("0.5"), Ok(0.5));
        assert_eq!(parse_period("2s"), Ok(2.0));
        for bad in ["0", "-1", "nan", "inf", "1e9", "", "s", "5m"] {
            assert!(parse_period(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_stream_is_asked_for_on_standard_output_only() {
        let stdout = || Some(PathBuf::from("-"));
        let file = || Some(PathBuf::from("m.json"));
        let ok = |f: PlanFiles| f.check().is_ok();
        assert!(ok(PlanFiles {
            monitor: stdout(),
            period: Some(1.0),
            count: Some(3),
            ..PlanFiles::default()
        }));
        assert!(ok(PlanFiles {
            monitor: file(),
            ..PlanFiles::default()
        }));
        assert!(!ok(PlanFiles {
            monitor: file(),
            period: Some(1.0),
            ..PlanFiles::default()
        }));
        assert!(!ok(PlanFiles {
            monitor: stdout(),
            count: Some(3),
            ..PlanFiles::default()
        }));
        assert!(!ok(PlanFiles {
            monitor: stdout(),
            period: Some(1.0),
            count: Some(0),
            ..PlanFiles::default()
        }));
        assert!(!ok(PlanFiles {
            sysfs: stdout(),
            ..PlanFiles::default()
        }));
    }
}
