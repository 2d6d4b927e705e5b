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
//!
//! A file that cannot be read or written is also an `OSError`: the
//! exception is an instance of a class deriving from both `NeffError` and
//! the `OSError` subclass Python raises for the same cause
//! (`NeffFileNotFoundError`, `NeffPermissionError`, else `NeffOSError`),
//! with `errno`, `strerror` and `filename` set where the cause is known, so
//! `except FileNotFoundError` and `except NeffError` both catch it.

use std::io::ErrorKind;
use std::path::Path;

use neffld::api::LoadError;
use neffld::text::escape;
use neffld::NrtStatus;
use pyo3::create_exception;
use pyo3::exceptions::{
    PyBaseException, PyException, PyFileNotFoundError, PyOSError, PyOverflowError,
    PyPermissionError,
};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

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
    /// The operating system's cause of an "io" failure, when known.
    pub os: Option<OsCause>,
}

/// Why the operating system refused a file, for the `OSError` side of the
/// exception.
#[derive(Debug)]
pub struct OsCause {
    kind: ErrorKind,
    errno: Option<i32>,
    filename: String,
}

/// The three `OSError` classes of `NeffError`, made once: each derives from
/// `NeffError` and a built-in `OSError` class, and prints as `NeffError`
/// does (its text), not as `OSError` formats errno and filename.
static OS_CLASSES: PyOnceLock<[Py<PyType>; 3]> = PyOnceLock::new();

/// The classes' names and built-in bases, in [`OS_CLASSES`] order.
pub fn os_classes(py: Python<'_>) -> PyResult<[(&'static str, &Bound<'_, PyType>); 3]> {
    let classes = OS_CLASSES.get_or_try_init(py, || -> PyResult<[Py<PyType>; 3]> {
        let make = |name: &str, base: Bound<'_, PyType>, doc: &str| -> PyResult<Py<PyType>> {
            let dict = PyDict::new(py);
            dict.set_item("__module__", "neffld")?;
            dict.set_item("__doc__", doc)?;
            dict.set_item("__str__", py.get_type::<PyBaseException>().getattr("__str__")?)?;
            let bases = PyTuple::new(py, [py.get_type::<NeffError>(), base])?;
            Ok(py
                .get_type::<PyType>()
                .call1((name, bases, dict))?
                .cast_into::<PyType>()?
                .unbind())
        };
        Ok([
            make(
                "NeffFileNotFoundError",
                py.get_type::<PyFileNotFoundError>(),
                "A file neffld was given does not exist: a NeffError (stage \"io\") and a FileNotFoundError.",
            )?,
            make(
                "NeffPermissionError",
                py.get_type::<PyPermissionError>(),
                "A file neffld may not read or write: a NeffError (stage \"io\") and a PermissionError.",
            )?,
            make(
                "NeffOSError",
                py.get_type::<PyOSError>(),
                "Any other file neffld cannot read or write: a NeffError (stage \"io\") and an OSError.",
            )?,
        ])
    })?;
    let [a, b, c] = classes;
    Ok([
        ("NeffFileNotFoundError", a.bind(py)),
        ("NeffPermissionError", b.bind(py)),
        ("NeffOSError", c.bind(py)),
    ])
}

impl Failure {
    pub fn new(stage: &'static str, status: NrtStatus, message: impl Into<String>) -> Failure {
        Failure {
            stage,
            status,
            message: message.into(),
            lines: false,
            os: None,
        }
    }

    /// This "io" failure, caused by `e` on `path`: raised as the `OSError`
    /// class of the cause, with its errno and the file name.
    pub fn with_os_error(self, e: &std::io::Error, path: &Path) -> Failure {
        Failure {
            os: Some(OsCause {
                kind: e.kind(),
                errno: e.raw_os_error(),
                filename: path.display().to_string(),
            }),
            ..self
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

    /// The `NeffError` raised for this failure, its text [`Failure::text`]:
    /// of stage "io", one of the `OSError` classes ([`os_classes`]).
    pub fn into_pyerr(self, py: Python<'_>) -> PyErr {
        match self.exception(py) {
            Ok(value) => PyErr::from_value(value),
            Err(e) => e,
        }
    }

    fn exception<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let value = if self.stage == "io" {
            let [not_found, permission, other] = os_classes(py)?;
            let class = match self.os.as_ref().map(|o| o.kind) {
                Some(ErrorKind::NotFound) => not_found.1,
                Some(ErrorKind::PermissionDenied) => permission.1,
                _ => other.1,
            };
            let value = class.call1((self.text(),))?;
            if let Some(os) = &self.os {
                if let Some(errno) = os.errno {
                    value.setattr("errno", errno)?;
                    let strerror = py.import("os")?.call_method1("strerror", (errno,))?;
                    value.setattr("strerror", strerror)?;
                }
                value.setattr("filename", &os.filename)?;
            }
            value
        } else {
            NeffError::new_err(self.text())
                .into_value(py)
                .into_bound(py)
                .into_any()
        };
        value.setattr("status", self.status.code())?;
        value.setattr("status_name", self.status.as_str())?;
        value.setattr("stage", self.stage)?;
        value.setattr("message", &self.message)?;
        Ok(value)
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
