//! What `path_or_bytes` may be: a path (`str` or `os.PathLike`) to read, or
//! the NEFF's bytes (`bytes`, `bytearray`, `memoryview` or any object with
//! the buffer protocol). Anything else is a `TypeError`; a path that cannot
//! be read is a `NeffError` of stage "io" (`NRT_FAILURE`), as the `neffld`
//! command reports it.

use std::path::{Path, PathBuf};

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyMemoryView, PyString};

use crate::error::Failure;

/// The NEFF bytes behind the argument `arg`, and a label for messages.
pub fn read(arg: &str, obj: &Bound<'_, PyAny>) -> PyResult<(Vec<u8>, String)> {
    read_with(arg, "a NEFF's", obj, read_path)
}

/// A profiler capture's bytes behind a `path_or_bytes` argument: a path
/// must name a regular file (a capture declares no length a stream could
/// be read to).
pub fn read_capture(arg: &str, obj: &Bound<'_, PyAny>) -> PyResult<(Vec<u8>, String)> {
    read_with(arg, "a capture's", obj, |path| {
        if !std::fs::metadata(path)?.is_file() {
            return Err(std::io::Error::other("not a regular file"));
        }
        std::fs::read(path)
    })
}

/// `obj`, the argument `arg`: `whose` bytes, or a path to read them from.
fn read_with(
    arg: &str,
    whose: &str,
    obj: &Bound<'_, PyAny>,
    read_path: fn(&Path) -> std::io::Result<Vec<u8>>,
) -> PyResult<(Vec<u8>, String)> {
    let py = obj.py();
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok((b.as_bytes().to_vec(), "<bytes>".into()));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok((b.to_vec(), "<bytearray>".into()));
    }
    if obj.is_instance_of::<PyString>() || obj.hasattr("__fspath__").unwrap_or(false) {
        let path: PathBuf = obj.extract().map_err(|e| {
            let err = PyTypeError::new_err(format!("{arg}: not a usable path: {e}"));
            err.set_cause(py, Some(e));
            err
        })?;
        let bytes = read_path(&path).map_err(|e| {
            Failure::io(format!("cannot read {}: {e}", path.display())).into_pyerr(py)
        })?;
        return Ok((bytes, path.display().to_string()));
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
    Ok((bytes, "<buffer>".into()))
}

/// A NEFF's bytes ([`neffld::neff::read_file`]): a stream only as far as
/// its header says.
fn read_path(path: &Path) -> std::io::Result<Vec<u8>> {
    neffld::neff::read_file(path)
}
