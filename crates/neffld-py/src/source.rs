//! What `path_or_bytes` may be: a path (`str` or `os.PathLike`) to read, or
//! the NEFF's bytes (`bytes`, `bytearray`, `memoryview` or any object with
//! the buffer protocol). Anything else is a `TypeError`; a path that cannot
//! be read is a `NeffError` of stage "io" (`NRT_FAILURE`), as the `neffld`
//! command reports it, and the `OSError` of its cause (`FileNotFoundError`,
//! `PermissionError`, ...). Bytes are always contents; a short buffer naming an
//! existing file that fails as one gets a hint ([`Source::hinted`]).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyMemoryView, PyString};

use crate::error::Failure;

/// What a `path_or_bytes` argument gave: the bytes, and whether they were
/// given as a buffer (contents) rather than read from a path.
pub struct Source {
    pub bytes: Vec<u8>,
    given: bool,
    /// "NEFF" or "capture".
    what: &'static str,
    /// The stage that refuses bytes that are not one.
    gate: &'static str,
}

impl Source {
    /// `f`, a failure of these bytes. Bytes are always contents; when the
    /// gate refused a short buffer that names an existing file (as a bytes
    /// path would), the message says how to name a file instead.
    pub fn hinted(&self, mut f: Failure) -> Failure {
        if let Some(path) = self.names_a_file().filter(|_| f.stage == self.gate) {
            f.message = format!(
                "{}; these bytes were read as a {}'s contents; to name a file, pass a str \
                 or a pathlib.Path (they name {}; os.fsdecode decodes a bytes path)",
                f.message,
                self.what,
                path.display()
            );
        }
        f
    }

    /// The existing file the bytes name, when they were given as a buffer
    /// short enough to be a path (`PATH_MAX`) and hold no NUL.
    fn names_a_file(&self) -> Option<&Path> {
        let b = &self.bytes;
        if !self.given || b.is_empty() || b.len() > 4096 || b.contains(&0) {
            return None;
        }
        let path = Path::new(OsStr::from_bytes(b));
        path.exists().then_some(path)
    }
}

/// The NEFF bytes behind the argument `arg`.
pub fn read(arg: &str, obj: &Bound<'_, PyAny>) -> PyResult<Source> {
    let (bytes, given) = read_with(arg, "a NEFF's", obj, read_path)?;
    Ok(Source {
        bytes,
        given,
        what: "NEFF",
        gate: "container",
    })
}

/// A profiler capture's bytes behind the argument `arg`: a path must name
/// a regular file (a capture declares no length a stream could be read to).
pub fn read_capture(arg: &str, obj: &Bound<'_, PyAny>) -> PyResult<Source> {
    let (bytes, given) = read_with(arg, "a capture's", obj, |path| {
        if !std::fs::metadata(path)?.is_file() {
            return Err(std::io::Error::other("not a regular file"));
        }
        std::fs::read(path)
    })?;
    Ok(Source {
        bytes,
        given,
        what: "capture",
        gate: "capture",
    })
}

/// `obj`, the argument `arg`: `whose` bytes (then true: given as
/// contents), or a path to read them from.
fn read_with(
    arg: &str,
    whose: &str,
    obj: &Bound<'_, PyAny>,
    read_path: fn(&Path) -> std::io::Result<Vec<u8>>,
) -> PyResult<(Vec<u8>, bool)> {
    let py = obj.py();
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok((b.as_bytes().to_vec(), true));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok((b.to_vec(), true));
    }
    if obj.is_instance_of::<PyString>() || obj.hasattr("__fspath__").unwrap_or(false) {
        let path: PathBuf = obj.extract().map_err(|e| {
            let err = PyTypeError::new_err(format!("{arg}: not a usable path: {e}"));
            err.set_cause(py, Some(e));
            err
        })?;
        let bytes = read_path(&path).map_err(|e| {
            Failure::io(format!("cannot read {}: {e}", path.display()))
                .with_os_error(&e, &path)
                .into_pyerr(py)
        })?;
        return Ok((bytes, false));
    }
    // Anything else exporting a buffer (memoryview, numpy arrays, mmap).
    let bytes = py
        .get_type::<PyMemoryView>()
        .call1((obj,))
        .and_then(|m| m.call_method0("tobytes"))
        .and_then(|b| Ok(b.cast_into::<PyBytes>()?.as_bytes().to_vec()))
        .map_err(|_| {
            PyTypeError::new_err(format!(
                "{arg}: expected a path (str or os.PathLike) or {whose} bytes, got {}",
                obj.get_type()
                    .name()
                    .map_or_else(|_| "?".to_string(), |n| n.to_string())
            ))
        })?;
    Ok((bytes, true))
}

/// A NEFF's bytes ([`neffld::neff::read_file`]): a stream only as far as
/// its header says.
fn read_path(path: &Path) -> std::io::Result<Vec<u8>> {
    neffld::neff::read_file(path)
}
