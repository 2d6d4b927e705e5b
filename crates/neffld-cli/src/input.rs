//! Reading the NEFF named on the command line; `-` is standard input.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use neffld::container::{
    self, ContainerError, MappedFile, Neff, OpenOptions, HEADER_LEN, STREAM_MIN,
};

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

/// A NEFF as a load reads it: mapped when its payload is large enough to be
/// inflated as a stream (the pages of the file are then released as the
/// decoder passes them, so they are not resident next to the inflated
/// payload), otherwise read whole in one exact read.
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

    /// S1 on these bytes, releasing a mapped file's pages as they are read.
    pub fn open(&self, opts: &OpenOptions) -> Result<Neff, ContainerError> {
        match self {
            Source::Read(b) => container::open(b, opts),
            Source::Mapped(m) => container::open_mapped(m, opts),
        }
    }
}

/// The file (or stdin) as a [`Source`]. A file that cannot be mapped (a
/// pipe, a device) is read instead; an unreadable one is an `io` failure.
pub fn source(path: &Path) -> Result<Source, Failure> {
    if !is_stdin(path) {
        let err = |e: std::io::Error| Failure::io(format!("cannot read {}: {e}", display(path)));
        let f = File::open(path).map_err(err)?;
        let meta = f.metadata().map_err(err)?;
        if meta.is_file() && meta.len() >= HEADER_LEN as u64 + STREAM_MIN {
            if let Ok(m) = MappedFile::map(&f) {
                return Ok(Source::Mapped(m));
            }
        }
        return read_exact(f, meta.len()).map(Source::Read).map_err(err);
    }
    read(path).map(Source::Read)
}

/// The whole file in one read into a buffer of its size (no bounce buffer,
/// no copy); a file that grew meanwhile is read to its end.
fn read_exact(mut f: File, len: u64) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    out.try_reserve_exact(usize::try_from(len).unwrap_or(usize::MAX))
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::OutOfMemory, e))?;
    f.read_to_end(&mut out)?;
    Ok(out)
}
