//! The `neffld` command inside the extension: `python -m neffld` and the
//! `neffld` console script run the command-line program itself (the
//! `neffld-cli` library linked in), so a Python environment has every
//! subcommand without a Rust toolchain; and `neffld.plan` returns the
//! document `neffld plan --json` prints.

use std::ffi::OsString;

use pyo3::prelude::*;

use crate::error::{raise, Failure};

/// Runs `neffld ARGS...` (`argv[0]` is the program name) and returns its
/// exit status. Output goes to the process's standard streams.
#[pyfunction]
pub fn _main(py: Python<'_>, argv: Vec<String>) -> u8 {
    let args: Vec<OsString> = argv.into_iter().map(OsString::from).collect();
    py.detach(|| neffld_cli::exit_status(neffld_cli::main(args)))
}

/// The JSON text of `neffld plan ARGS... --json`; a usage or I/O error is a
/// `NeffError`.
#[pyfunction]
pub fn _plan(py: Python<'_>, args: Vec<String>) -> PyResult<String> {
    let args: Vec<OsString> = args.into_iter().map(OsString::from).collect();
    let doc = py.detach(|| {
        neffld_cli::plan_document(args).map_err(|f| Failure::new(f.stage, f.status, f.message))
    });
    raise(py, doc).map(|v| v.to_string())
}
