//! Reading the NEFF named on the command line; `-` is standard input.

use std::io::Read;
use std::path::Path;

use neffld::neff::{ContainerError, Neff, OpenOptions};

use crate::report::{failure_document, json_text, Failure};
use crate::sigbus;

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

/// A file that is not a NEFF (a profiler capture), read whole. It must be
/// a regular file: its length is known before reading, where a stream's
/// would not be (`/dev/zero` never ends).
pub fn read_regular(path: &Path) -> Result<Vec<u8>, Failure> {
    let err = |e: std::io::Error| Failure::io(format!("cannot read {}: {e}", display(path)));
    let mut f = neffld::neff::open_regular(path).map_err(err)?;
    let mut out = Vec::new();
    f.read_to_end(&mut out).map_err(err)?;
    Ok(out)
}

/// A NEFF as a load reads it ([`neffld::neff::Source`]): a regular file
/// mapped (whole `load --device null` processes on matmul_large took less
/// time than with one exact read; docs/performance.md), anything else read.
pub struct Source(neffld::neff::Source);

impl Source {
    pub fn bytes(&self) -> &[u8] {
        self.0.bytes()
    }

    /// The library's view, for the calls that open the file themselves.
    pub fn neff(&self) -> &neffld::neff::Source {
        &self.0
    }

    /// While the result lives, a mapped file shortened by another process
    /// ends `command` as the I/O failure it is, named for `path`, in JSON
    /// when `json` (see [`sigbus`]), instead of a silent kill.
    pub fn guard_shortening(
        &self,
        command: &'static str,
        path: &Path,
        json: bool,
    ) -> Option<sigbus::Guard> {
        let m = self.0.mapped()?;
        let f = Failure::io(format!(
            "cannot read {}: the file was shortened by another process while it was mapped",
            display(path)
        ));
        let (message, fd) = guard_message(command, &f, json);
        Some(sigbus::guard(m.bytes(), message, fd))
    }

    /// S1 on these bytes, releasing a mapped file's pages as they are read.
    pub fn open(&self, opts: &OpenOptions) -> Result<Neff, ContainerError> {
        self.0.open(opts)
    }
}

/// What a [`sigbus`] guard writes, and where: the failure as `command`
/// reports it (one JSON document on stdout when `json`).
pub fn guard_message(command: &'static str, f: &Failure, json: bool) -> (String, i32) {
    if json {
        let doc = json_text(&failure_document(command, f));
        (format!("{doc}\n"), 1)
    } else {
        (format!("neffld {command}: {}\n", f.human()), 2)
    }
}

/// The file (or stdin) as a [`Source`]; an unreadable input is an `io`
/// failure.
pub fn source(path: &Path) -> Result<Source, Failure> {
    let named = (!is_stdin(path)).then_some(path);
    neffld::neff::Source::read(named)
        .map(Source)
        .map_err(|e| Failure::io(format!("cannot read {}: {e}", display(path))))
}
