//! `neffld.NeffError`: one exception type for every failure but a wrong
//! argument type, carrying the NRT status, its name and the stage that
//! refused the input.
//!
//! The contract (the stub and the README say it too): an argument of a
//! type a function does not take is Python's `TypeError`; everything else
//! is `NeffError` — a value neffld refuses (an unknown architecture, a
//! logical core out of range, a word of a plan) with stage "usage" and
//! `NRT_INVALID`, a file that cannot be read or written with stage "io"
//! and `NRT_FAILURE` (as the `neffld` command reports both), a variable's
//! value with "config", and what the loader, the planner or a capture
//! refuses with its own stage and status.

use neffld::api::LoadError;
use neffld::text::escape;
use neffld::NrtStatus;
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyOverflowError};
use pyo3::prelude::*;

create_exception!(
    neffld,
    NeffError,
    PyException,
    "Every failure but a wrong argument type (TypeError): `.status` (the NRT \
     status int), `.status_name` (e.g. \"NRT_INVALID\"), `.stage` (\"usage\": \
     a refused argument value, \"io\": a file, else the gate that refused \
     it) and `.message`."
);

/// A failure on its way to Python: the stage, the status and the message.
#[derive(Debug)]
pub struct Failure {
    pub stage: &'static str,
    pub status: NrtStatus,
    pub message: String,
    /// The message's line breaks are its own: it was written from the
    /// caller's own words (a command line, a deployment file, as the
    /// command's parser reports them, usage and help alike), never from a
    /// NEFF or a capture, so `str(e)` keeps them as lines. Otherwise a line
    /// break in the message can only come from a name taken from a file,
    /// and is escaped with the rest.
    pub lines: bool,
}

impl Failure {
    pub fn new(stage: &'static str, status: NrtStatus, message: impl Into<String>) -> Failure {
        Failure {
            stage,
            status,
            message: message.into(),
            lines: false,
        }
    }

    /// This failure, its message written from the caller's own words: its
    /// line breaks are kept in `str(e)` ([`Failure::lines`]).
    pub fn of_callers_words(self) -> Failure {
        Failure {
            lines: true,
            ..self
        }
    }

    /// An argument's value neffld refuses (its type was right): stage
    /// "usage", `NRT_INVALID`, as the command reports a refused flag.
    pub fn usage(message: impl Into<String>) -> Failure {
        Failure::new("usage", NrtStatus::Invalid, message)
    }

    /// A variable's value the runtime refuses: stage "config", as `load`
    /// and the command report it.
    pub fn config(e: &neffld::config::ConfigError) -> Failure {
        Failure::new("config", e.status(), e.to_string())
    }

    /// A file that cannot be read or written: stage "io", `NRT_FAILURE`,
    /// as the command and `neffld.plan` report it.
    pub fn io(message: impl Into<String>) -> Failure {
        Failure::new("io", NrtStatus::Failure, message)
    }

    /// The text of `str(e)`: as the `neffld` command prints a failure
    /// (`Failure::human` there) — a usage or I/O error as its message
    /// alone, any other as "STAGE failed: MESSAGE [STATUS]" — each line of
    /// the message escaped ([`neffld::text::escape`]: no control character
    /// of a name reaches a terminal); a line break is kept only in a
    /// message of the caller's own words ([`Failure::lines`]). `.message`
    /// keeps everything exact.
    pub fn text(&self) -> String {
        let message = if self.lines {
            let lines: Vec<_> = self.message.split('\n').map(escape).collect();
            lines.join("\n")
        } else {
            escape(&self.message).into_owned()
        };
        match self.stage {
            "usage" | "io" => message,
            stage => format!("{stage} failed: {message} [{}]", self.status),
        }
    }

    /// The `NeffError` raised for this failure, its text [`Failure::text`].
    pub fn into_pyerr(self, py: Python<'_>) -> PyErr {
        let err = NeffError::new_err(self.text());
        let value = err.value(py);
        let set = || -> PyResult<()> {
            value.setattr("status", self.status.code())?;
            value.setattr("status_name", self.status.as_str())?;
            value.setattr("stage", self.stage)?;
            value.setattr("message", &self.message)
        };
        if let Err(e) = set() {
            return e;
        }
        err
    }
}

impl From<LoadError> for Failure {
    fn from(e: LoadError) -> Failure {
        Failure::new(e.stage(), e.status(), e.to_string())
    }
}

/// An integer argument `name`: any Python integer (or object with
/// `__index__`) within `range`, else a refused value (stage "usage") whose
/// message gives the value and `rule` — never a bare OverflowError. Another
/// type is the TypeError the extraction raises.
pub fn int_arg(
    obj: &Bound<'_, PyAny>,
    name: &str,
    range: std::ops::RangeInclusive<i128>,
    rule: &str,
) -> PyResult<i128> {
    let refused = || {
        let mut shown = obj.repr().map_or_else(|_| "?".into(), |r| r.to_string());
        if shown.len() > 40 {
            shown = format!(
                "an integer of {} digits",
                shown.trim_start_matches('-').len()
            );
        }
        Failure::usage(format!("{name}={shown}: {rule}")).into_pyerr(obj.py())
    };
    match obj.extract::<i128>() {
        Ok(v) if range.contains(&v) => Ok(v),
        Ok(_) => Err(refused()),
        Err(e) if e.is_instance_of::<PyOverflowError>(obj.py()) => Err(refused()),
        Err(e) => Err(e),
    }
}

/// Results of the binding's own code, turned into `NeffError` at the edge.
pub type FResult<T> = Result<T, Failure>;

/// Converts at the Python boundary.
pub fn raise<T>(py: Python<'_>, r: FResult<T>) -> PyResult<T> {
    r.map_err(|f| f.into_pyerr(py))
}
