//! The `neffld` command inside the extension: `python -m neffld` and the
//! `neffld` console script run the command-line program itself (the
//! `neffld-cli` library linked in), so a Python environment has every
//! subcommand without a Rust toolchain.

use std::ffi::OsString;

use pyo3::prelude::*;

/// Runs `neffld ARGS...` (`argv[0]` is the program name) and returns its
/// exit status. Output goes to the process's standard streams.
#[pyfunction]
pub fn _main(py: Python<'_>, argv: Vec<String>) -> u8 {
    let args: Vec<OsString> = argv.into_iter().map(OsString::from).collect();
    py.detach(|| neffld_cli::exit_status(neffld_cli::main(args)))
}
