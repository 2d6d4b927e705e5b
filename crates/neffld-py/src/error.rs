//! `neffld.NeffError`: one exception type for every failure, carrying the
//! NRT status, its name and the pipeline stage that refused the input.

use neffld::api::LoadError;
use neffld::text::escape;
use neffld::NrtStatus;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    neffld,
    NeffError,
    PyException,
    "A NEFF failure: `.status` (the NRT status int), `.status_name` \
     (e.g. \"NRT_INVALID\"), `.stage` (which gate refused it) and `.message`."
);

/// A failure on its way to Python: the stage, the status and the message.
#[derive(Debug)]
pub struct Failure {
    pub stage: &'static str,
    pub status: NrtStatus,
    pub message: String,
}

impl Failure {
    pub fn new(stage: &'static str, status: NrtStatus, message: impl Into<String>) -> Failure {
        Failure {
            stage,
            status,
            message: message.into(),
        }
    }

    /// A caller's mistake (wrong argument, unreadable file): `NRT_INVALID`.
    pub fn input(message: impl Into<String>) -> Failure {
        Failure::new("input", NrtStatus::Invalid, message)
    }

    /// The `NeffError` raised for this failure; its text reads as the
    /// `neffld` command prints a failure (names from the NEFF escaped,
    /// [`neffld::text::escape`]); `.message` keeps them exact.
    pub fn into_pyerr(self, py: Python<'_>) -> PyErr {
        let text = format!(
            "{} failed: {} [{}]",
            self.stage,
            escape(&self.message),
            self.status
        );
        let err = NeffError::new_err(text);
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

/// Results of the binding's own code, turned into `NeffError` at the edge.
pub type FResult<T> = Result<T, Failure>;

/// Converts at the Python boundary.
pub fn raise<T>(py: Python<'_>, r: FResult<T>) -> PyResult<T> {
    r.map_err(|f| f.into_pyerr(py))
}
