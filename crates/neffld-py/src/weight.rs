//! Weights as Python buffers over the NEFF's own payload bytes.
//!
//! A weight is exported through the buffer protocol as a read-only byte
//! buffer that points into the inflated archive the weight object keeps
//! alive, so `numpy.frombuffer`/`numpy.asarray` wrap it without a copy. The
//! element type and shape come from the `.npy` header (`Weight.numpy()`
//! applies them).

use std::ffi::{c_int, c_void};

use neffld::config::RuntimeConfig;
use neffld::report::weights;
use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::error::{raise, FResult};
use crate::info;

/// One `file` variable: its payload in the NEFF, and how numpy reads it.
#[pyclass(frozen, module = "neffld")]
pub struct Weight {
    weight: weights::Weight,
    /// The variable name.
    #[pyo3(get)]
    name: String,
    /// The subgraph that declares it (the first one, when several share it).
    #[pyo3(get)]
    subgraph: String,
    /// The archive member it was read from.
    #[pyo3(get)]
    file_name: String,
    /// The `.npy` descr ("<f2"), `None` for a raw member.
    #[pyo3(get)]
    descr: Option<String>,
    /// The numpy dtype name ("float16"), or the descr when it has no name here.
    #[pyo3(get)]
    dtype: String,
    shape_: Vec<u64>,
}

impl Weight {
    fn data(&self) -> &[u8] {
        self.weight.bytes()
    }
}

/// The numpy name of a `.npy` descr such as `<f2` (byte order dropped).
fn descr_name(descr: &str) -> Option<&'static str> {
    let code = descr.trim_start_matches(['<', '>', '|', '=']);
    Some(match code {
        "f2" => "float16",
        "f4" => "float32",
        "f8" => "float64",
        "i1" => "int8",
        "i2" => "int16",
        "i4" => "int32",
        "i8" => "int64",
        "u1" => "uint8",
        "u2" => "uint16",
        "u4" => "uint32",
        "u8" => "uint64",
        "b1" => "bool",
        _ => return None,
    })
}

#[pymethods]
impl Weight {
    /// Bytes of payload.
    #[getter]
    fn size(&self) -> usize {
        self.data().len()
    }

    /// The `.npy` shape as a tuple (the payload as bytes when there is none).
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.shape_)
    }

    /// The weight as a read-only numpy array over the NEFF's bytes (no copy).
    /// Needs numpy; a dtype numpy lacks (bfloat16) needs `ml_dtypes`.
    fn numpy<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let np = py.import("numpy")?;
        let w = slf.get();
        let dtype = match &w.descr {
            Some(d) => np.getattr("dtype")?.call1((d.as_str(),))?,
            None if w.dtype == "bfloat16" => py.import("ml_dtypes")?.getattr("bfloat16")?,
            None => np.getattr("dtype")?.call1((w.dtype.as_str(),))?,
        };
        np.getattr("frombuffer")?
            .call1((slf, dtype))?
            .call_method1("reshape", (w.shape(py)?,))
    }

    fn __len__(&self) -> usize {
        self.size()
    }

    fn __repr__(&self) -> String {
        format!(
            "Weight({:?}, {}, shape={}, {} bytes)",
            self.name,
            self.dtype,
            crate::repr::py_tuple(&self.shape_),
            self.size()
        )
    }

    /// Exports the payload as a read-only, C-contiguous byte buffer.
    ///
    /// # Safety
    /// Called by CPython with a valid `view` to fill.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        if view.is_null() {
            return Err(PyBufferError::new_err("null view"));
        }
        if (flags & ffi::PyBUF_WRITABLE) == ffi::PyBUF_WRITABLE {
            return Err(PyBufferError::new_err("a NEFF weight is read-only"));
        }
        let (ptr, len) = {
            let data = slf.get().data();
            (data.as_ptr(), data.len())
        };
        // SAFETY: CPython hands a valid, writable Py_buffer. `buf` points
        // into the shared archive buffer the exporter's weight holds and never
        // mutates; `view.obj` holds a strong reference to the exporter, so
        // the bytes outlive the view. `shape` and `strides` point at the
        // view's own `len` and `itemsize` fields (1-D bytes), and the format
        // is a static string, so nothing needs releasing.
        unsafe {
            (*view).obj = slf.into_any().into_ptr();
            (*view).buf = ptr as *mut c_void;
            (*view).len = len as isize;
            (*view).readonly = 1;
            (*view).itemsize = 1;
            (*view).format = if (flags & ffi::PyBUF_FORMAT) == ffi::PyBUF_FORMAT {
                c"B".as_ptr().cast_mut()
            } else {
                std::ptr::null_mut()
            };
            (*view).ndim = 1;
            (*view).shape = if (flags & ffi::PyBUF_ND) == ffi::PyBUF_ND {
                &mut (*view).len
            } else {
                std::ptr::null_mut()
            };
            (*view).strides = if (flags & ffi::PyBUF_STRIDES) == ffi::PyBUF_STRIDES {
                &mut (*view).itemsize
            } else {
                std::ptr::null_mut()
            };
            (*view).suboffsets = std::ptr::null_mut();
            (*view).internal = std::ptr::null_mut();
        }
        Ok(())
    }
}

/// Every weight of a NEFF by name, parsed as a load under `config` parses it.
pub fn collect(py: Python<'_>, bytes: &[u8], config: &RuntimeConfig) -> PyResult<Py<PyDict>> {
    let weights = raise(
        py,
        py.detach(|| -> FResult<Vec<weights::Weight>> {
            let neff = info::open(bytes, false)?;
            Ok(weights::weights(&neff, config)?)
        }),
    )?;
    let dict = PyDict::new(py);
    for w in weights {
        let dtype = match &w.npy_descr {
            Some(d) => descr_name(d).map_or(d.to_string(), str::to_string),
            None => w.dtype.clone().unwrap_or_else(|| "uint8".into()),
        };
        let weight = Weight {
            name: w.name.clone(),
            subgraph: w.subgraph.clone(),
            file_name: w.file_name.clone(),
            descr: w.npy_descr.clone(),
            dtype,
            shape_: w.shape.clone(),
            weight: w,
        };
        dict.set_item(weight.name.clone(), Py::new(py, weight)?)?;
    }
    Ok(dict.unbind())
}
