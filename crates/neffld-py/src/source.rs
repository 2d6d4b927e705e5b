//! What `path_or_bytes` may be: a path (`str` or `os.PathLike`) to read, or
//! the NEFF's bytes (`bytes`, `bytearray`, `memoryview` or any object with
//! the buffer protocol).

use std::path::{Path, PathBuf};

use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyMemoryView, PyString};

use crate::error::{FResult, Failure};

/// The NEFF bytes behind a `path_or_bytes` argument, and a label for messages.
pub fn read(obj: &Bound<'_, PyAny>) -> FResult<(Vec<u8>, String)> {
    read_with(obj, read_path)
}

/// A profiler capture's bytes behind a `path_or_bytes` argument: a path
/// must name a regular file (a capture declares no length a stream could
/// be read to).
pub fn read_capture(obj: &Bound<'_, PyAny>) -> FResult<(Vec<u8>, String)> {
    read_with(obj, |path| {
        if !std::fs::metadata(path)?.is_file() {
            return Err(std::io::Error::other("not a regular file"));
        }
        std::fs::read(path)
    })
}

fn read_with(
    obj: &Bound<'_, PyAny>,
    read_path: fn(&Path) -> std::io::Result<Vec<u8>>,
) -> FResult<(Vec<u8>, String)> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok((b.as_bytes().to_vec(), "<bytes>".into()));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok((b.to_vec(), "<bytearray>".into()));
    }
    if obj.is_instance_of::<PyString>() || obj.hasattr("__fspath__").unwrap_or(false) {
        let path: PathBuf = obj
            .extract()
            .map_err(|e| Failure::input(format!("not a usable path: {e}")))?;
        let bytes = read_path(&path)
            .map_err(|e| Failure::input(format!("cannot read {}: {e}", path.display())))?;
        return Ok((bytes, path.display().to_string()));
    }
    // Anything else exporting a buffer (memoryview, numpy arrays, mmap).
    let bytes = obj
        .py()
        .get_type::<PyMemoryView>()
        .call1((obj,))
        .and_then(|m| m.call_method0("tobytes"))
        .and_then(|b| Ok(b.cast_into::<PyBytes>()?.as_bytes().to_vec()))
        .map_err(|_| {
            Failure::input(format!(
                "expected a path or the NEFF's bytes, got {}",
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
