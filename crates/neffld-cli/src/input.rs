//! Reading the NEFF named on the command line; `-` is standard input.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use neffld::container::{self, ContainerError, MappedFile, Neff, OpenOptions, HEADER_LEN};

use crate::report::{failure_document, Failure};
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
    let mut f = File::open(path).map_err(err)?;
    if !f.metadata().map_err(err)?.is_file() {
        return Err(Failure::io(format!(
            "cannot read {}: not a regular file",
            display(path)
        )));
    }
    let mut out = Vec::new();
    f.read_to_end(&mut out).map_err(err)?;
    Ok(out)
}

/// A NEFF as a load reads it: a regular file is mapped (its pages come from
/// the page cache, a few fault-around batches instead of a fresh page per
/// 4 KiB and a copy; whole `load --device null` processes on matmul_large
/// took 0.95× the time of one exact read); a large payload's pages are also
/// released as the decoder passes them, so they are not resident next to the
/// inflated payload. Standard input, and a file that cannot be mapped, is
/// read whole.
pub enum Source {
    Read(Vec<u8>),
    Mapped(MappedFile),
}

impl Source {
    pub fn bytes(&self) -> &[u8] {
        match self {
            Source::Read(b) => b,
            Source::Mapped(m) => m.bytes(),
        }
    }

    /// While the result lives, a mapped file shortened by another process
    /// ends `command` as the I/O failure it is, named for `path`, in JSON
    /// when `json` (see [`sigbus`]), instead of a silent kill.
    pub fn guard_shortening(
        &self,
        command: &str,
        path: &Path,
        json: bool,
    ) -> Option<sigbus::Guard> {
        let Source::Mapped(m) = self else {
            return None;
        };
        let f = Failure::io(format!(
            "cannot read {}: the file was shortened by another process while it was mapped",
            display(path)
        ));
        Some(if json {
            let doc = serde_json::to_string_pretty(&failure_document(command, &f))
                .expect("JSON values always serialise");
            sigbus::guard(m.bytes(), format!("{doc}\n"), 1)
        } else {
            sigbus::guard(m.bytes(), format!("neffld {command}: {}\n", f.human()), 2)
        })
    }

    /// S1 on these bytes, releasing a mapped file's pages as they are read.
    pub fn open(&self, opts: &OpenOptions) -> Result<Neff, ContainerError> {
        match self {
            Source::Read(b) => container::open(b, opts),
            Source::Mapped(m) => container::open_mapped(m, opts),
        }
    }
}

/// The file (or stdin) as a [`Source`]. A regular file that cannot be
/// mapped is read whole; a stream (stdin, a pipe, a device) only as far as
/// its header says ([`container::read_neff`]), so an endless one is refused
/// at once. An unreadable input is an `io` failure.
pub fn source(path: &Path) -> Result<Source, Failure> {
    let err = |e: std::io::Error| Failure::io(format!("cannot read {}: {e}", display(path)));
    if is_stdin(path) {
        return container::read_neff(&mut std::io::stdin().lock())
            .map(Source::Read)
            .map_err(err);
    }
    let mut f = File::open(path).map_err(err)?;
    let meta = f.metadata().map_err(err)?;
    if !meta.is_file() {
        return container::read_neff(&mut f).map(Source::Read).map_err(err);
    }
    if meta.len() >= HEADER_LEN as u64 {
        if let Ok(m) = MappedFile::map(&f) {
            return Ok(Source::Mapped(m));
        }
    }
    // One read into a buffer of the file's size (std reserves it from the
    // metadata); a file that grew meanwhile is read to its end.
    let mut out = Vec::new();
    f.read_to_end(&mut out)
        .map(|_| Source::Read(out))
        .map_err(err)
}
