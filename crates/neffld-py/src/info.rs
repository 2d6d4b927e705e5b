//! `neffld.inspect`: what a NEFF declares — its name, uuid, target and I/O
//! tensors — read through S1–S3 without a device and without requiring the
//! payload hash (as `nrt_load` does by default).

use neffld::api::{NrtDtype, TensorInfo, TensorUsage};
use neffld::neff::{Neff, OpenOptions};
use neffld::report::examine::IoTensor;
use neffld::report::{Examination, ExamineOptions};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::error::{raise, FResult, Failure};
use crate::source;

/// The numpy name of an NRT dtype: the library's own name where numpy
/// spells it the same, FP32R as the float32 it stores, and the FP8 types
/// under their `ml_dtypes` names. UNKNOWN (a dtype string the runtime does
/// not know) is "unknown".
pub fn numpy_name(d: NrtDtype) -> &'static str {
    match d {
        NrtDtype::Fp32r => "float32",
        NrtDtype::Fp8E3 => "float8_e3m4",
        NrtDtype::Fp8E4 => "float8_e4m3",
        NrtDtype::Fp8E5 => "float8_e5m2",
        d => d.name(),
    }
}

/// One input or output tensor of a model.
#[pyclass(frozen, module = "neffld")]
pub struct Tensor {
    /// The name a client binds the tensor by.
    #[pyo3(get)]
    pub name: String,
    /// "input" or "output".
    #[pyo3(get)]
    pub usage: &'static str,
    /// The numpy dtype name ("float16", "bfloat16", ...).
    #[pyo3(get)]
    pub dtype: String,
    /// Bytes (`product(shape) × element size`).
    #[pyo3(get)]
    pub size: u64,
    shape_: Vec<u32>,
}

#[pymethods]
impl Tensor {
    /// The shape as a tuple of ints.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.shape_)
    }

    fn __repr__(&self) -> String {
        format!(
            "Tensor({:?}, {}, {}, shape={}, size={})",
            self.name,
            self.usage,
            self.dtype,
            crate::repr::py_tuple(&self.shape_),
            self.size
        )
    }
}

impl Tensor {
    /// A tensor as `neff.json` declares it; a dtype the runtime does not
    /// know keeps the NEFF's own spelling.
    pub fn from_io(t: &IoTensor, usage: TensorUsage) -> Tensor {
        let dtype = match t.dtype {
            NrtDtype::Unknown => t.dtype_name.clone(),
            d => numpy_name(d).to_string(),
        };
        Tensor {
            name: t.name.clone(),
            usage: TensorUsage::name(usage),
            dtype,
            size: t.size,
            shape_: t.shape.clone(),
        }
    }

    /// A tensor as `nrt_get_model_tensor_info` reports it.
    pub fn from_info(t: &TensorInfo) -> Tensor {
        Tensor {
            name: t.name.clone(),
            usage: TensorUsage::name(t.usage),
            dtype: numpy_name(t.dtype).to_string(),
            size: t.size,
            shape_: t.shape.clone(),
        }
    }
}

/// One collective of a NEFF (`neffld inspect --json`'s and `load
/// --json`'s `collectives`): where its record is, what it does, on how
/// much, with whom.
#[pyclass(frozen, get_all, module = "neffld")]
pub struct Collective {
    /// The subgraph whose stream holds it.
    pub subgraph: String,
    /// "pe", "act", "pool", "dve" or "sp".
    pub engine: &'static str,
    /// Its record's index in that engine's NEFF stream.
    pub index: u32,
    /// "ptc", "ptc2" or "psr": the record that carries it.
    pub form: &'static str,
    /// "all-reduce", "all-gather", "reduce-scatter", "all-to-all",
    /// "permute", …, "send" or "receive".
    pub operation: &'static str,
    /// "add", "mult", "max" or "min", for the operations that reduce.
    pub reduce: Option<&'static str>,
    /// The element type ("float32", "bfloat16", …; the ISA's names), None
    /// for a send or receive, which moves bytes.
    pub dtype: Option<&'static str>,
    /// Elements this rank contributes and receives, scaled by the group's
    /// ranks where the runtime scales them.
    pub elements_in: u64,
    pub elements_out: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// The replica group (an index of def.json's `replica_groups`).
    pub group: Option<u16>,
    /// Ranks per group.
    pub group_size: u32,
    /// The ranks of each group of that replica group.
    pub groups: Vec<Vec<u32>>,
    /// The other rank of a send or receive.
    pub peer: Option<u64>,
    /// The variables read and written.
    pub input: Option<String>,
    pub output: Option<String>,
    /// "none", "initial", "body" or "final".
    pub chaining: &'static str,
    pub stream: u16,
}

#[pymethods]
impl Collective {
    fn __repr__(&self) -> String {
        let with = match (self.group, self.peer) {
            (_, Some(p)) => format!("peer={p}"),
            (Some(g), None) => format!("group={g}"),
            (None, None) => String::new(),
        };
        format!(
            "Collective({:?}, {}#{}, {}, elements_in={}, elements_out={}, {with})",
            self.subgraph,
            self.engine,
            self.index,
            self.operation,
            self.elements_in,
            self.elements_out
        )
    }
}

impl Collective {
    pub fn of(c: &neffld::report::Collective) -> Collective {
        Collective {
            subgraph: c.subgraph.clone(),
            engine: c.engine,
            index: c.index,
            form: c.form,
            operation: c.operation,
            reduce: c.reduce,
            dtype: c.dtype,
            elements_in: c.elements_in,
            elements_out: c.elements_out,
            bytes_in: c.bytes_in,
            bytes_out: c.bytes_out,
            group: c.group,
            group_size: c.group_size,
            groups: c.groups.clone(),
            peer: c.peer,
            input: c.input.clone(),
            output: c.output.clone(),
            chaining: c.chaining,
            stream: c.stream,
        }
    }

    /// Each of `list` as a Python object.
    pub fn list<'a>(
        py: Python<'_>,
        list: impl IntoIterator<Item = &'a neffld::report::Collective>,
    ) -> PyResult<Vec<Py<Collective>>> {
        list.into_iter()
            .map(|c| Py::new(py, Collective::of(c)))
            .collect()
    }
}

/// What `inspect` reports about a NEFF.
#[pyclass(frozen, module = "neffld")]
pub struct NeffInfo {
    /// The model name stored in the header.
    #[pyo3(get)]
    pub name: String,
    uuid_: [u8; 16],
    /// The instance family it was compiled for: "trn1", "trn2" or "trn3".
    #[pyo3(get)]
    pub target: &'static str,
    /// The NEFF format version, "MAJOR.MINOR".
    #[pyo3(get)]
    pub neff_version: String,
    /// Logical-core size the NEFF was built for (header `vnc_size`).
    #[pyo3(get)]
    pub lnc: u32,
    /// Inputs in declaration order.
    #[pyo3(get)]
    pub inputs: Vec<Py<Tensor>>,
    /// Outputs in declaration order.
    #[pyo3(get)]
    pub outputs: Vec<Py<Tensor>>,
    /// Subgraph names, one per physical core of a logical core.
    #[pyo3(get)]
    pub subgraphs: Vec<String>,
    /// Archive member names.
    #[pyo3(get)]
    pub members: Vec<String>,
    /// Non-fatal findings of the container and manifest parsers.
    #[pyo3(get)]
    pub warnings: Vec<String>,
    /// Every collective of the subgraphs, subgraph by subgraph in record
    /// order.
    #[pyo3(get)]
    pub collectives: Vec<Py<Collective>>,
}

#[pymethods]
impl NeffInfo {
    /// The 16 uuid bytes of the header, in stored order.
    #[getter]
    fn uuid(&self) -> &[u8] {
        &self.uuid_
    }

    fn __repr__(&self) -> String {
        format!(
            "NeffInfo(name={:?}, target={:?}, inputs={}, outputs={})",
            self.name,
            self.target,
            self.inputs.len(),
            self.outputs.len()
        )
    }
}

/// Opens the container (S1) without requiring the hash.
pub fn open(bytes: &[u8], verify_hash: bool) -> FResult<Neff> {
    let opts = OpenOptions {
        verify_hash,
        ..OpenOptions::default()
    };
    neffld::neff::open(bytes, &opts)
        .map_err(|e| Failure::new("container", e.status(), e.to_string()))
}

fn tensors(py: Python<'_>, ts: &[IoTensor], usage: TensorUsage) -> PyResult<Vec<Py<Tensor>>> {
    ts.iter()
        .map(|t| Py::new(py, Tensor::from_io(t, usage)))
        .collect()
}

/// inspect(path_or_bytes) -> NeffInfo
///
/// Reads a NEFF (a path, or its bytes) through the container, manifest and
/// KBIN gates, without a device: name, uuid, target and I/O tensors. The
/// payload hash is not required (as `nrt_load` by default); use `verify`
/// for that. Raises NeffError when any gate refuses the file.
#[pyfunction]
pub fn inspect(py: Python<'_>, path_or_bytes: &Bound<'_, PyAny>) -> PyResult<NeffInfo> {
    let src = source::read("path_or_bytes", path_or_bytes)?;
    let opts = ExamineOptions {
        contents: true,
        ..ExamineOptions::default()
    };
    let x = py.detach(|| Examination::of(&src.bytes, &opts));
    let seen = || -> FResult<_> {
        if let Some(e) = x.problems.into_iter().next() {
            return Err(src.hinted(e.into()));
        }
        match (x.header, x.contents, x.archive) {
            (Some(h), Some(c), Some(a)) => Ok((h, c, a)),
            _ => Err(Failure::new(
                "container",
                neffld::NrtStatus::Invalid,
                "the NEFF did not examine",
            )),
        }
    };
    let (h, c, archive) = raise(py, seen())?;
    Ok(NeffInfo {
        name: h.name_str(),
        uuid_: h.uuid,
        target: c.arch.instance(),
        neff_version: format!("{}.{}", h.version_major, h.version_minor),
        lnc: h.vnc_size,
        inputs: tensors(py, &c.inputs, TensorUsage::Input)?,
        outputs: tensors(py, &c.outputs, TensorUsage::Output)?,
        subgraphs: c.subgraphs.iter().map(|k| k.name.clone()).collect(),
        collectives: Collective::list(py, c.subgraphs.iter().flat_map(|k| &k.collectives))?,
        members: archive.members().iter().map(|m| m.name.clone()).collect(),
        warnings: x.warnings,
    })
}
