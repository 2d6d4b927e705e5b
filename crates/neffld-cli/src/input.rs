//! Reading the NEFF named on the command line; `-` is standard input.

use std::io::Read;
use std::path::Path;

use crate::report::Failure;

/// Whether the argument names standard input.
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// How the input is called in reports.
pub fn display(path: &Path) -> String {
    if is_stdin(path) {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    }
}

/// The whole file (or all of stdin); an unreadable input is an `io` failure
/// naming the file and the system's reason.
pub fn read(path: &Path) -> Result<Vec<u8>, Failure> {
    let err = |e: std::io::Error| Failure::io(format!("cannot read {}: {e}", display(path)));
    if is_stdin(path) {
        let mut out = Vec::new();
        std::io::stdin().lock().read_to_end(&mut out).map_err(err)?;
        return Ok(out);
    }
    std::fs::read(path).map_err(err)
}
