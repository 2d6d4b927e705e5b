//! The device side of `neffld.nrtpy`, the Neuron SDK's Python binding
//! (nrtpy) over neffld's runtime: the process's one runtime, started on
//! first use and closed by `reset()`; device tensors whose bytes live on the
//! simulated device; loaded models; and the two exception types, with
//! nrtpy's documented text. The numpy side (shapes, dtypes, arrays) is
//! `python/neffld/nrtpy.py`; every decision about a load, a tensor or an
//! execution is the library's.
//!
//! The runtime is configured as the C library's `nrt_init` configures it:
//! the process environment through the library's settings resolver
//! (`NEFFLD_ARCH` / `NEFFLD_INSTANCE`, else trn2; `NEFFLD_RUNTIME`; the
//! runtime's own variables, `NEURON_RT_VISIBLE_CORES` among them, which is
//! all `nrtpy.configure` sets).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use neffld::api::{self, DeviceTensor, LoadError, NrtDtype, Runtime, TensorInfo, TensorUsage};
use neffld::execute::{self, ExecuteError};
use neffld::settings::{Asked, Settings};
use neffld::tensor_ops::{ComputeOp, Operand, TensorOpError};
use neffld::text::escape;
use neffld::NrtStatus;
use pyo3::buffer::PyBuffer;
use pyo3::create_exception;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

create_exception!(
    neffld.nrtpy,
    NrtpyError,
    PyRuntimeError,
    "A misuse of nrtpy itself: a tensor used after free_tensor() or after \
     reset(), a model of a runtime reset since, configure() while the runtime \
     is active."
);

create_exception!(
    neffld.nrtpy,
    NrtError,
    PyRuntimeError,
    "The runtime refused a call: `str(e)` is \"NRT Error NRT_<NAME>(<code>): \
     <what failed>: <why>\"; `.status` is the NRT status code, `.status_name` \
     its name, `.message` the why."
);

/// The process's one runtime: `None` before the first tensor or model, and
/// again after `reset()`.
static RUNTIME: Mutex<Option<Arc<Runtime>>> = Mutex::new(None);

fn slot() -> MutexGuard<'static, Option<Arc<Runtime>>> {
    RUNTIME.lock().unwrap_or_else(|p| p.into_inner())
}

/// An `NrtError`: nrtpy's documented text for `status` and the call that
/// failed (`what`: "Failed to load model"), then neffld's reason, which
/// libnrt prints as a log line before nrtpy raises. Control characters of
/// names taken from a file are escaped in the text; `.message` keeps them.
pub fn nrt_error(py: Python<'_>, status: NrtStatus, what: &str, reason: &str) -> PyErr {
    let err = NrtError::new_err(format!(
        "NRT Error {}({}): {what}: {}",
        status.as_str(),
        status.code(),
        escape(reason)
    ));
    let value = err.value(py);
    let set = || -> PyResult<()> {
        value.setattr("status", status.code())?;
        value.setattr("status_name", status.as_str())?;
        value.setattr("message", reason)
    };
    match set() {
        Ok(()) => err,
        Err(e) => e,
    }
}

fn load_error(py: Python<'_>, what: &str, e: &LoadError) -> PyErr {
    nrt_error(py, e.status(), what, &e.to_string())
}

/// The runtime, started now if it is not: `nrt_init` under the process
/// environment, as the C library starts it.
fn runtime(py: Python<'_>) -> PyResult<Arc<Runtime>> {
    let mut slot = slot();
    if let Some(rt) = &*slot {
        return Ok(Arc::clone(rt));
    }
    const WHAT: &str = "Failed to initialize runtime";
    let config = Settings::from_env(&Asked::default())
        .map_err(|e| nrt_error(py, e.status(), WHAT, &e.to_string()))?
        .for_neff(None);
    let rt = Arc::new(Runtime::new(config).map_err(|e| load_error(py, WHAT, &e))?);
    *slot = Some(Arc::clone(&rt));
    Ok(rt)
}

/// Whether `rt` is the runtime now active (no `reset()` came since).
fn is_current(rt: &Arc<Runtime>) -> bool {
    matches!(&*slot(), Some(cur) if Arc::ptr_eq(cur, rt))
}

/// Whether the runtime has started (and `configure` is refused).
#[pyfunction]
pub fn _nrtpy_active() -> bool {
    slot().is_some()
}

/// `nrt_close` of the active runtime, if any: every model is unloaded, and
/// every tensor and model of it refuses further use.
#[pyfunction]
pub fn _nrtpy_reset(py: Python<'_>) {
    let rt = slot().take();
    if let Some(rt) = rt {
        py.detach(|| rt.close());
    }
}

/// A visible logical core given as a Python int: a negative one is refused
/// as a core past the visible ones is (`NRT_INVALID`), since a tensor or
/// a model has no "any core" here.
fn visible_core(py: Python<'_>, rt: &Runtime, what: &str, core_id: i64) -> PyResult<u32> {
    u32::try_from(core_id).map_err(|_| {
        let reason = format!(
            "Invalid vnc {core_id}, visible vncs: {}",
            rt.visible_vnc_count()
        );
        nrt_error(py, NrtStatus::Invalid, what, &reason)
    })
}

/// A device tensor of the active runtime (`nrt_tensor_allocate`, device
/// placement): its bytes are on the simulated device, and its memory is
/// freed when the object is collected, by `free_tensor`, or with the
/// runtime at `reset()`.
#[pyclass(frozen, module = "neffld.nrtpy")]
pub struct NrtTensor {
    tensor: Mutex<Option<Arc<DeviceTensor>>>,
    /// Bytes.
    #[pyo3(get)]
    size: u64,
    /// The name it was allocated under.
    #[pyo3(get)]
    name: String,
    /// The visible logical core it is on.
    #[pyo3(get)]
    core_id: u32,
}

impl NrtTensor {
    /// The device tensor, if it is usable: not freed, and of the runtime
    /// now active. The tensor's lock is not held past this call, so one
    /// tensor may stand for several arguments of one call, and a
    /// `free_tensor` meanwhile releases the memory once the call is done.
    fn live(&self) -> PyResult<Arc<DeviceTensor>> {
        let guard = self.tensor.lock().unwrap_or_else(|p| p.into_inner());
        let Some(t) = &*guard else {
            return Err(NrtpyError::new_err(format!(
                "tensor \"{}\" was freed (free_tensor); allocate a new one",
                escape(&self.name)
            )));
        };
        if !slot().as_ref().is_some_and(|rt| t.is_on(rt)) {
            return Err(NrtpyError::new_err(format!(
                "tensor \"{}\" belongs to a runtime closed by reset(); its device memory is gone",
                escape(&self.name)
            )));
        }
        Ok(Arc::clone(t))
    }
}

#[pymethods]
impl NrtTensor {
    /// Allocates `size` bytes on visible logical core `core_id`.
    #[staticmethod]
    fn _allocate(py: Python<'_>, size: u64, core_id: i64, name: String) -> PyResult<NrtTensor> {
        const WHAT: &str = "Failed to allocate tensor";
        let rt = runtime(py)?;
        let vnc = visible_core(py, &rt, WHAT, core_id)?;
        let t = rt
            .allocate_tensor(vnc, size, &name)
            .map_err(|e| load_error(py, WHAT, &e))?;
        Ok(NrtTensor {
            tensor: Mutex::new(Some(Arc::new(t))),
            size,
            name,
            core_id: vnc,
        })
    }

    /// Reads the whole tensor into `out`, a writable byte buffer of its size.
    fn _read_into(&self, py: Python<'_>, out: PyBuffer<u8>) -> PyResult<()> {
        let t = self.live()?;
        let mut bytes = vec![0u8; self.size as usize];
        py.detach(|| t.read(0, &mut bytes))
            .map_err(|e| nrt_error(py, e.status(), "Failed to read tensor", &e.to_string()))?;
        out.copy_from_slice(py, &bytes)
    }

    /// Writes `data`, a byte buffer of the tensor's size, over the tensor.
    fn _write_from(&self, py: Python<'_>, data: PyBuffer<u8>) -> PyResult<()> {
        let t = self.live()?;
        let bytes = data.to_vec(py)?;
        py.detach(|| t.write(0, &bytes))
            .map_err(|e| nrt_error(py, e.status(), "Failed to write tensor", &e.to_string()))
    }

    /// Frees the device memory now; the tensor refuses any later use.
    fn _free(&self) -> PyResult<()> {
        self.live()?;
        self.tensor.lock().unwrap_or_else(|p| p.into_inner()).take();
        Ok(())
    }

    fn __repr__(&self) -> String {
        format!(
            "NrtTensor({:?}, {} bytes, core_id={})",
            self.name, self.size, self.core_id
        )
    }
}

/// One input or output of a loaded model: its shape (a list, as nrtpy
/// prints it) and its size in bytes.
#[pyclass(frozen, get_all, module = "neffld.nrtpy")]
pub struct TensorMetadata {
    pub shape: Vec<u32>,
    pub size: u64,
}

#[pymethods]
impl TensorMetadata {
    fn __repr__(&self) -> String {
        format!("TensorMetadata(shape={:?}, size={})", self.shape, self.size)
    }
}

/// A model loaded on the active runtime, unloaded when collected (or with
/// the runtime at `reset()`).
#[pyclass(frozen, module = "neffld.nrtpy")]
pub struct _LoadedModel {
    rt: Arc<Runtime>,
    handle: Mutex<Option<api::Model>>,
    tensors: Arc<[TensorInfo]>,
    /// The visible logical core it was loaded on.
    vnc: u32,
}

impl Drop for _LoadedModel {
    fn drop(&mut self) {
        let handle = self.handle.get_mut().unwrap_or_else(|p| p.into_inner());
        if let Some(h) = handle.take() {
            // A runtime closed since has unloaded it already.
            let _ = self.rt.unload(&h);
        }
    }
}

impl _LoadedModel {
    fn check_live(&self) -> PyResult<()> {
        if is_current(&self.rt) {
            return Ok(());
        }
        Err(NrtpyError::new_err(
            "the model belongs to a runtime closed by reset(); load it again",
        ))
    }
}

/// A tensor a caller binds to an execution: its name and device tensor.
type Binding<'py> = Vec<(String, Bound<'py, NrtTensor>)>;

/// The names and sizes of a binding, every tensor checked usable.
fn sizes(b: &Binding<'_>) -> PyResult<Vec<(String, u64)>> {
    b.iter()
        .map(|(name, t)| {
            let t = t.get();
            t.live().map(|_| (name.clone(), t.size))
        })
        .collect()
}

fn view(b: &[(String, u64)]) -> Vec<(&str, u64)> {
    b.iter().map(|(n, s)| (n.as_str(), *s)).collect()
}

#[pymethods]
impl _LoadedModel {
    /// `nrt_load` (or, with `cc_enabled`, `nrt_load_collectives` as rank
    /// `rank_id` of `world_size`) of the NEFF at `path` on visible logical
    /// core `core_id`.
    #[staticmethod]
    fn _load(
        py: Python<'_>,
        path: PathBuf,
        core_id: i64,
        cc_enabled: bool,
        rank_id: i64,
        world_size: i64,
    ) -> PyResult<_LoadedModel> {
        const WHAT: &str = "Failed to load model";
        let rt = runtime(py)?;
        let vnc = visible_core(py, &rt, WHAT, core_id)?;
        let collective = if cc_enabled {
            let (Ok(rank), Ok(world)) = (u32::try_from(rank_id), u32::try_from(world_size)) else {
                let reason = format!(
                    "rank_id {rank_id} of world_size {world_size}: a rank is 0 or more and below the world size"
                );
                return Err(nrt_error(py, NrtStatus::Invalid, WHAT, &reason));
            };
            Some((rank, world))
        } else {
            None
        };
        let loaded = py.detach(|| -> Result<_, (NrtStatus, String)> {
            let bytes = neffld::neff::read_file(&path).map_err(|e| {
                let reason = format!("cannot read {}: {e}", path.display());
                (NrtStatus::Failure, reason)
            })?;
            let refused = |e: LoadError| (e.status(), e.to_string());
            let model = match collective {
                Some((rank, world)) => rt.load_collectives(&bytes, Some(vnc), rank, world),
                None => rt.load(&bytes, Some(vnc)),
            }
            .map_err(refused)?;
            match rt.tensor_info(&model) {
                Ok(tensors) => Ok((model, tensors)),
                Err(e) => {
                    let _ = rt.unload(&model);
                    Err(refused(e))
                }
            }
        });
        let (model, tensors) =
            loaded.map_err(|(status, reason)| nrt_error(py, status, WHAT, &reason))?;
        Ok(_LoadedModel {
            rt,
            handle: Mutex::new(Some(model)),
            tensors,
            vnc,
        })
    }

    /// The model's inputs (`usage` "input") or outputs by name, in the
    /// runtime's order (name order).
    fn _tensors_info<'py>(&self, py: Python<'py>, usage: &str) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        for t in self.tensors.iter().filter(|t| t.usage.name() == usage) {
            let meta = TensorMetadata {
                shape: t.shape.clone(),
                size: t.size,
            };
            dict.set_item(&t.name, Py::new(py, meta)?)?;
        }
        Ok(dict)
    }

    /// The visible logical core the model is on.
    #[getter]
    fn _core_id(&self) -> u32 {
        self.vnc
    }

    /// An execution with `inputs` and `outputs` bound (`None`: outputs the
    /// runtime allocates, as nrtpy does, on the model's core): every tensor
    /// must be usable, the binding right, and then the execution is refused
    /// as the C library refuses it. Never returns normally.
    #[pyo3(signature = (inputs, outputs))]
    fn _execute(
        &self,
        py: Python<'_>,
        inputs: Binding<'_>,
        outputs: Option<Binding<'_>>,
    ) -> PyResult<()> {
        const WHAT: &str = "Failed to execute model";
        self.check_live()?;
        let inputs = sizes(&inputs)?;
        let outputs = outputs.map(|o| sizes(&o)).transpose()?;
        if outputs.is_none() {
            // What nrtpy allocates before it executes, released at once:
            // a model whose outputs do not fit fails here, as it would.
            for t in self
                .tensors
                .iter()
                .filter(|t| t.usage == TensorUsage::Output)
            {
                self.rt
                    .allocate_tensor(self.vnc, t.size, &t.name)
                    .map_err(|e| load_error(py, "Failed to allocate output tensor", &e))?;
            }
        }
        let e: ExecuteError = execute::refusal(
            &self.tensors,
            &view(&inputs),
            outputs.as_deref().map(view).as_deref(),
        );
        Err(nrt_error(py, e.status(), WHAT, &e.to_string()))
    }

    fn __repr__(&self) -> String {
        let name = self
            .handle
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map_or_else(String::new, |h| h.name.clone());
        format!("_LoadedModel({name:?}, core_id={})", self.vnc)
    }
}

/// An enum's members as Python builds it: (name, value).
type Members = Vec<(&'static str, u32)>;

/// The members of nrtpy's `NrtDtype` and `NrtComputeOp` as (name, code):
/// the header's enumerators (`NRT_DTYPE_FLOAT32` → `FLOAT32`, 10) and the
/// operations `tensor_compute` takes (`ADD`, 0), from the library's tables.
#[pyfunction]
pub fn _nrtpy_enums() -> (Members, Members) {
    let dtypes = NrtDtype::ALL
        .iter()
        .map(|d| (d.c_name().trim_start_matches("NRT_DTYPE_"), d.code()))
        .collect();
    let ops = ComputeOp::ALL
        .iter()
        .map(|o| (o.name(), o.code()))
        .collect();
    (dtypes, ops)
}

/// A tensor argument of a tensor operation: the device tensor, held for
/// the call, and the device dtype attached to it (its code; an unknown
/// code is no dtype, which the library refuses naming the argument).
type Typed<'py> = (Bound<'py, NrtTensor>, u32);

/// The held device tensors of `args`, checked usable.
fn held(args: &[&Typed<'_>]) -> PyResult<Vec<(Arc<DeviceTensor>, NrtDtype)>> {
    args.iter()
        .map(|(t, dtype)| {
            let dtype = NrtDtype::from_code(*dtype).unwrap_or(NrtDtype::Unknown);
            Ok((t.get().live()?, dtype))
        })
        .collect()
}

fn operand<'a>(t: &'a NrtTensor, held: &'a (Arc<DeviceTensor>, NrtDtype)) -> Operand<'a> {
    Operand::device(&held.0, 0, t.size, held.1, &t.name)
}

fn tensor_op_error(py: Python<'_>, what: &str, e: &TensorOpError) -> PyErr {
    nrt_error(py, e.status(), what, &e.to_string())
}

/// `nrt_tensor_cast`: `count` elements of `src` from its device dtype into
/// `dst`'s, from element 0, on the active runtime.
#[pyfunction]
pub fn _tensor_cast(py: Python<'_>, src: Typed<'_>, dst: Typed<'_>, count: u64) -> PyResult<()> {
    let rt = runtime(py)?;
    let h = held(&[&src, &dst])?;
    let (s, d) = (src.0.get(), dst.0.get());
    py.detach(|| rt.tensor_cast(operand(s, &h[0]), operand(d, &h[1]), count))
        .map_err(|e| tensor_op_error(py, "Failed to cast tensor", &e))
}

/// `nrt_tensor_compute`: `op` (its `nrt_op_type_t` code) across `srcs`
/// element by element into `dst`, `count` elements from element 0.
#[pyfunction]
pub fn _tensor_compute(
    py: Python<'_>,
    op: u32,
    srcs: Vec<Typed<'_>>,
    dst: Typed<'_>,
    count: u64,
) -> PyResult<()> {
    const WHAT: &str = "Failed to compute tensor";
    let rt = runtime(py)?;
    let op = ComputeOp::from_code(op).map_err(|e| tensor_op_error(py, WHAT, &e))?;
    let args: Vec<&Typed<'_>> = srcs.iter().chain([&dst]).collect();
    let h = held(&args)?;
    let tensors: Vec<&NrtTensor> = args.iter().map(|(t, _)| t.get()).collect();
    let mut operands: Vec<Operand<'_>> =
        tensors.iter().zip(&h).map(|(t, h)| operand(t, h)).collect();
    let dst = operands.pop().expect("dst is the last argument");
    py.detach(|| rt.tensor_compute(op, &operands, dst, count))
        .map_err(|e| tensor_op_error(py, WHAT, &e))
}
