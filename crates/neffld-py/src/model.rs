//! `neffld.load`: a model staged on a simulated device, as Python sees it —
//! where each subgraph landed, what it charged, its relocated images — and
//! unloaded when the `with` block (or an explicit `unload()`) ends.
//!
//! Each model gets a runtime and simulated device of its own, so the memory
//! figures of a core are exactly this model's, and models in one process
//! never compete for logical cores.

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use neffld::api::{self, LoadError, Runtime, Timings};
use neffld::config::DeviceKind;
use neffld::report::staged::StagedCore;
use neffld::report::StagedView;
use neffld::settings::{Asked, Settings};
use neffld::{Arch, RuntimeLine};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use crate::error::{int_arg, raise, FResult, Failure};
use crate::info::{Collective, Tensor};
use crate::source;
use crate::weight;

/// One variable of a subgraph and where the plan put it.
#[pyclass(frozen, get_all, module = "neffld")]
pub struct Variable {
    pub var_id: u32,
    pub name: String,
    /// The def.json type: "file", "input", "state-buffer", "virtual", ...
    #[pyo3(name = "type")]
    pub kind: &'static str,
    /// "state-buffer", "hbm", "scratchpad", "io" (bound at execute) or "host".
    pub placement: &'static str,
    /// Device address as the runtime writes it, `None` for I/O and
    /// host-only variables.
    pub address: Option<u64>,
    /// Bytes at that address, `None` where nothing is placed.
    pub size: Option<u64>,
}

#[pymethods]
impl Variable {
    fn __repr__(&self) -> String {
        let at = self.address.map_or("-".into(), |a| format!("{a:#x}"));
        format!(
            "Variable({}, {:?}, {}, {} at {at})",
            self.var_id, self.name, self.kind, self.placement
        )
    }
}

/// What a load does not hold: the model's input and output tensors, which
/// a framework binds at execute; measured as `plan` charges them after a
/// load (`neffld load` prints the same figure).
#[pyclass(frozen, get_all, module = "neffld")]
pub struct IoTensors {
    /// Input and output tensors with bytes.
    pub count: usize,
    /// Their sizes summed.
    pub bytes: u64,
    /// Whether they fit beside the load.
    pub fits: bool,
    /// Bytes used on each HBM of the model with them allocated, by HBM
    /// index (empty when they do not fit).
    pub hbm_used: BTreeMap<u32, u64>,
    /// Bytes free on each of those HBMs with them allocated.
    pub hbm_free: BTreeMap<u32, u64>,
    /// Why they do not fit (the runtime's refusal), else None.
    pub error: Option<String>,
}

impl IoTensors {
    /// The measurement, on the HBMs `hbms`.
    fn of(io: neffld::report::IoTensors, hbms: &[u32]) -> IoTensors {
        let (mut hbm_used, mut hbm_free) = (BTreeMap::new(), BTreeMap::new());
        let error = match io.with_them {
            Ok(report) => {
                for h in report.hbms.iter().filter(|h| hbms.contains(&h.hbm)) {
                    hbm_used.insert(h.hbm, h.usage().total());
                    hbm_free.insert(h.hbm, h.free());
                }
                None
            }
            Err(e) => Some(e.to_string()),
        };
        IoTensors {
            count: io.count,
            bytes: io.bytes,
            fits: error.is_none(),
            hbm_used,
            hbm_free,
            error,
        }
    }
}

#[pymethods]
impl IoTensors {
    fn __repr__(&self) -> String {
        let fits = if self.fits { "True" } else { "False" };
        format!(
            "IoTensors(count={}, bytes={}, fits={fits})",
            self.count, self.bytes
        )
    }
}

/// One physical core of the model's logical core and what landed on it.
#[pyclass(frozen, get_all, module = "neffld")]
pub struct Core {
    /// Physical core index on the device.
    pub pcore: u32,
    /// HBM channel the core allocates from.
    pub hbm: u32,
    /// The subgraph staged on this core.
    pub subgraph: String,
    /// Device bytes charged to this core: every row of the runtime's memory
    /// list, in its order, keyed by its usage type (the library's names).
    pub memory: Py<PyDict>,
    /// Every engine's final instruction image: the bytes the load relocated
    /// and copied to the device, as the staged model keeps them (the
    /// library's `StagedView`), not read back from the device — so the same
    /// on the "null" device, which keeps no bytes.
    pub images: BTreeMap<String, Py<PyBytes>>,
    /// Device address of every engine's image.
    pub image_addresses: BTreeMap<String, u64>,
    /// Per engine, the 64-byte slots of its image that are placeholders
    /// (`ff6e6566666c643f`…), not the runtime's own code, which is not
    /// known for every line and chip: 0 where the image is the runtime's
    /// byte for byte (`neffld load --json`'s `filler_slots`).
    pub image_filler_slots: BTreeMap<String, u32>,
    /// The subgraph's variables in var_id order.
    pub variables: Vec<Py<Variable>>,
}

#[pymethods]
impl Core {
    fn __repr__(&self) -> String {
        format!("Core(pcore={}, subgraph={:?})", self.pcore, self.subgraph)
    }
}

/// A core of the library's staged view as Python objects.
fn core_to_py(py: Python<'_>, v: StagedCore) -> PyResult<Core> {
    let mut images = BTreeMap::new();
    let mut image_addresses = BTreeMap::new();
    let mut image_filler_slots = BTreeMap::new();
    for img in v.images {
        let engine = img.engine.key().to_string();
        images.insert(engine.clone(), PyBytes::new(py, &img.bytes).unbind());
        image_addresses.insert(engine.clone(), img.address);
        image_filler_slots.insert(engine, img.filler_slots());
    }
    let memory = PyDict::new(py);
    for row in v.memory {
        memory.set_item(row.usage_type, row.bytes)?;
    }
    let variables = v
        .variables
        .into_iter()
        .map(|var| {
            Py::new(
                py,
                Variable {
                    var_id: var.var_id,
                    name: var.name,
                    kind: var.kind,
                    placement: var.placement,
                    address: var.address,
                    size: var.size,
                },
            )
        })
        .collect::<PyResult<_>>()?;
    Ok(Core {
        pcore: v.pcore,
        hbm: v.hbm,
        subgraph: v.subgraph,
        memory: memory.unbind(),
        images,
        image_addresses,
        image_filler_slots,
        variables,
    })
}

/// What a load leaves to report, gathered before the GIL is taken back.
struct Loaded {
    rt: Runtime,
    handle: api::Model,
    cores: Vec<StagedCore>,
    tensors: Vec<api::TensorInfo>,
    io: IoTensors,
    warnings: Vec<String>,
    timings: Timings,
    collectives: std::sync::Arc<[neffld::report::Collective]>,
}

fn device_kind(name: &str) -> FResult<DeviceKind> {
    name.parse().map_err(Failure::usage)
}

fn run_load(
    bytes: &[u8],
    arch: Option<Arch>,
    runtime: Option<RuntimeLine>,
    kind: DeviceKind,
    start_core: i32,
) -> FResult<Loaded> {
    let asked = Asked {
        arch,
        runtime,
        device: Some(kind),
        follow_neff_lnc: true,
        ..Asked::default()
    };
    let settings = Settings::from_env(&asked)
        .map_err(|e| Failure::new("config", e.status(), e.to_string()))?;
    // S1 once, here: the NEFF's own target picks the device when nothing
    // names an architecture, and its declared logical-core size the size
    // when NEURON_LOGICAL_NC_CONFIG does not.
    let t1 = Instant::now();
    let opened = neffld::neff::open(bytes, &settings.open_options());
    let s1 = t1.elapsed();
    let config = settings.for_neff(opened.as_ref().ok());
    let rt = Runtime::new(config)?;
    let handle = match opened {
        Ok(neff) => rt.load_opened(bytes, neff, u32::try_from(start_core).ok())?,
        Err(e) => return Err(LoadError::Container(e).into()),
    };
    let cores = StagedView::of(&rt, &handle)?.cores;
    let summary = rt.summary(&handle)?;
    let (warnings, mut timings, collectives) =
        (summary.warnings, summary.timings, summary.collectives);
    timings.container = s1;
    let tensors = rt.tensor_info(&handle)?;
    let hbms: Vec<u32> = cores.iter().map(|c| c.hbm).collect();
    let io = IoTensors::of(neffld::report::IoTensors::measure(&rt, &handle)?, &hbms);
    Ok(Loaded {
        rt,
        handle,
        cores,
        tensors: tensors.to_vec(),
        io,
        warnings,
        timings,
        collectives,
    })
}

/// A model loaded on a simulated device. Use it as a context manager (the
/// model is unloaded when the block ends) or call `unload()`.
#[pyclass(frozen, module = "neffld")]
pub struct Model {
    rt: Runtime,
    handle: Mutex<Option<api::Model>>,
    /// The NEFF, kept for the weights (read lazily, without a copy).
    bytes: Vec<u8>,
    weights: OnceLock<Py<PyDict>>,
    /// The model name stored in the header.
    #[pyo3(get)]
    name: String,
    uuid: [u8; 16],
    /// Architecture of the simulated device: "trn1", "trn2" or "trn3".
    #[pyo3(get)]
    arch: &'static str,
    /// The runtime line the load reproduced: "2.23" … the newest.
    #[pyo3(get)]
    runtime: String,
    /// "sim" or "null".
    #[pyo3(get)]
    device: String,
    /// The logical core the model was placed on, as the runtime numbers
    /// it: among the visible cores (`NEURON_RT_VISIBLE_CORES`), from 0.
    #[pyo3(get)]
    vnc: u32,
    /// The same core as the device numbers it: `vnc` unless only some
    /// cores are visible.
    #[pyo3(get)]
    instance_vnc: u32,
    /// One entry per physical core, in logical-core order.
    #[pyo3(get)]
    cores: Vec<Py<Core>>,
    /// What `nrt_get_model_tensor_info` reports: inputs, then outputs,
    /// each in name order.
    #[pyo3(get)]
    tensors: Vec<Py<Tensor>>,
    /// What the load does not hold: its input and output tensors, bound
    /// at execute, and the memory with them (as `plan` counts them).
    #[pyo3(get)]
    io_tensors: Py<IoTensors>,
    /// Non-fatal findings of the parse and the plan.
    #[pyo3(get)]
    warnings: Vec<String>,
    /// The NEFF's collectives, subgraph by subgraph in record order.
    #[pyo3(get)]
    collectives: Vec<Py<Collective>>,
    /// What the memory figures leave out: "collectives memory not counted:
    /// N collectives in G replica groups" when the NEFF has collectives
    /// (their engine's device memory is not public), else None.
    #[pyo3(get)]
    collectives_memory: Option<String>,
    timings: Timings,
}

#[pymethods]
impl Model {
    /// The 16 uuid bytes of the NEFF header.
    #[getter]
    fn uuid(&self) -> &[u8] {
        &self.uuid
    }

    /// What the model's runtime took when it started beyond the captured
    /// rows its line carries over, and why, as `neffld load --json`'s
    /// `notes` (2.35's 64 MiB per NeuronCore for DMA profiling).
    #[getter]
    fn notes(&self) -> Vec<String> {
        let config = self.rt.config();
        config.start_notes(config.started_vnc_count())
    }

    /// Where the runtime line's behaviour comes from, as `neffld load
    /// --json` reports it: "line", "captured_by" (the captured line whose
    /// rules the load follows), "captured_on" (the chip its captures were
    /// taken on), "documented" and "carried_over" (what comes from the
    /// line's documentation, and from `captured_by`: empty for a captured
    /// line on its own chip), "notes" (the documented facts of the lines
    /// after `captured_by`: "line", "fact", "source", "reproduced").
    #[getter]
    fn runtime_provenance<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let config = self.rt.config();
        let p = config.line().provenance(config.topology.arch);
        let d = PyDict::new(py);
        d.set_item("line", p.line.to_string())?;
        d.set_item("captured_by", p.captured_by.to_string())?;
        d.set_item("captured_on", p.captured_on)?;
        d.set_item("documented", p.documented)?;
        d.set_item("carried_over", p.carried_over)?;
        let notes = PyList::empty(py);
        for n in &p.notes {
            let note = PyDict::new(py);
            note.set_item("line", n.line.to_string())?;
            note.set_item("fact", n.note.fact)?;
            note.set_item("source", n.note.source)?;
            note.set_item("reproduced", n.note.reproduced)?;
            notes.append(note)?;
        }
        d.set_item("notes", notes)?;
        Ok(d)
    }

    /// Whether the model is still loaded.
    #[getter]
    fn loaded(&self) -> bool {
        self.handle.lock().map(|h| h.is_some()).unwrap_or(false)
    }

    /// The input tensors (name order).
    #[getter]
    fn inputs(&self, py: Python<'_>) -> Vec<Py<Tensor>> {
        self.of_usage(py, "input")
    }

    /// The output tensors (name order).
    #[getter]
    fn outputs(&self, py: Python<'_>) -> Vec<Py<Tensor>> {
        self.of_usage(py, "output")
    }

    /// Physical core indices, one per subgraph.
    #[getter]
    fn pcores(&self) -> Vec<u32> {
        self.cores.iter().map(|c| c.get().pcore).collect()
    }

    /// Wall time of each load stage, in seconds.
    #[getter]
    fn timings(&self) -> BTreeMap<&'static str, f64> {
        let t = &self.timings;
        BTreeMap::from([
            ("guard", t.guard.as_secs_f64()),
            ("container", t.container.as_secs_f64()),
            ("parse", t.parse.as_secs_f64()),
            ("cache_wait", t.cache_wait.as_secs_f64()),
            ("stage", t.stage.as_secs_f64()),
            ("relocate", t.relocate.as_secs_f64()),
        ])
    }

    /// `nrt_get_vnc_memory_stats` of the model's logical core: a dict with
    /// "used" and "limit" in bytes. After `unload()`, "used" is what the
    /// runtime itself keeps on the core (its start-up memory), no more.
    fn memory_stats(&self, py: Python<'_>) -> PyResult<BTreeMap<&'static str, u64>> {
        let s = raise(
            py,
            neffld::report::MemoryStats::of_vnc(&self.rt, self.vnc).map_err(Failure::from),
        )?;
        Ok(BTreeMap::from([("used", s.used), ("limit", s.limit)]))
    }

    /// The weights (`file` variables) by name, each a read-only buffer over
    /// the NEFF's own payload bytes — the bytes the load copied to the
    /// device — so `numpy.asarray(w)` or `w.numpy()` makes no copy.
    #[getter]
    fn weights(&self, py: Python<'_>) -> PyResult<Py<PyDict>> {
        if let Some(d) = self.weights.get() {
            return Ok(d.clone_ref(py));
        }
        let dict = weight::collect(py, &self.bytes, self.rt.config())?;
        Ok(self.weights.get_or_init(|| dict).clone_ref(py))
    }

    /// Unloads the model (`nrt_unload`); a second call does nothing.
    fn unload(&self, py: Python<'_>) -> PyResult<()> {
        let taken = self.handle.lock().ok().and_then(|mut h| h.take());
        match taken {
            Some(h) => raise(py, self.rt.unload(&h).map_err(Failure::from)),
            None => Ok(()),
        }
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.unload(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!(
            "Model({:?}, arch={}, vnc={}, cores={}, {})",
            self.name,
            self.arch,
            self.vnc,
            self.cores.len(),
            if self.loaded() { "loaded" } else { "unloaded" }
        )
    }
}

impl Model {
    fn of_usage(&self, py: Python<'_>, usage: &str) -> Vec<Py<Tensor>> {
        self.tensors
            .iter()
            .filter(|t| t.get().usage == usage)
            .map(|t| t.clone_ref(py))
            .collect()
    }
}

/// `start_core`: any Python integer, checked against `nrt_load`'s
/// `int32_t` core (-1: the first free one). A value out of it is a refused
/// value (2**31 used to raise a bare OverflowError), any other type a
/// TypeError (pyo3 names the argument).
fn logical_core(obj: &Bound<'_, PyAny>) -> PyResult<i32> {
    let rule = format!(
        "a logical core is -1 (the first free one) or 0 to {}",
        i32::MAX
    );
    let c = int_arg(obj, "start_core", -1..=i128::from(i32::MAX), &rule)?;
    Ok(c as i32)
}

/// load(path_or_bytes, arch=None, device="sim", start_core=-1, runtime=None) -> Model
///
/// Loads a NEFF the way `nrt_load` does (S0–S5) onto a fresh simulated
/// device: `arch` is "trn1", "trn2" or "trn3" (default: the architecture
/// `NEFFLD_ARCH` or `NEFFLD_INSTANCE` names, else the NEFF's own target;
/// a NEFF for another architecture is refused unless
/// `NEURON_RT_ALLOW_LEGACY_NEFF=1`), `device` is "sim" (keeps every
/// byte) or "null" (keeps no bytes), `start_core` the logical core (-1: the first free one),
/// `runtime` the runtime line to reproduce ("2.23" … the newest, or a
/// version such as "2.27.23"; default: `NEFFLD_RUNTIME`, else the newest
/// line, the runtime users run). The runtime's
/// environment variables apply (`NEURON_RT_*`, `NEURON_LOGICAL_NC_CONFIG`);
/// the logical-core size defaults to the one the NEFF was compiled for.
/// Raises NeffError.
///
/// The logical core is named `start_core` only: nrtpy's `core_id` (0 by
/// default, no "first free") is `neffld.nrtpy`'s, and `load(core_id=...)`
/// is a TypeError that says so.
#[pyfunction]
#[pyo3(
    signature = (path_or_bytes, arch=None, device="sim", start_core=-1, runtime=None, **unknown),
    text_signature = "(path_or_bytes, arch=None, device='sim', start_core=-1, runtime=None)"
)]
pub fn load(
    py: Python<'_>,
    path_or_bytes: &Bound<'_, PyAny>,
    arch: Option<&str>,
    device: &str,
    #[pyo3(from_py_with = logical_core)] start_core: i32,
    runtime: Option<&str>,
    unknown: Option<&Bound<'_, PyDict>>,
) -> PyResult<Model> {
    if let Some((name, _)) = unknown.and_then(|k| k.iter().next()) {
        let hint = if name.extract::<String>().is_ok_and(|n| n == "core_id") {
            ": the logical core is start_core (-1: the first free one, as nrt_load's \
             start_nc); core_id is nrtpy's, in neffld.nrtpy.NrtpyModel.load_from_neff"
        } else {
            ""
        };
        return Err(PyTypeError::new_err(format!(
            "load() got an unexpected keyword argument {}{hint}",
            name.repr()?
        )));
    }
    let src = source::read("path_or_bytes", path_or_bytes)?;
    let arch = raise(
        py,
        arch.map(|a| a.parse::<Arch>().map_err(Failure::usage))
            .transpose(),
    )?;
    let runtime = raise(
        py,
        runtime
            .map(|r| r.parse::<RuntimeLine>().map_err(Failure::usage))
            .transpose(),
    )?;
    let kind = raise(py, device_kind(device))?;
    let loaded = raise(
        py,
        py.detach(|| run_load(&src.bytes, arch, runtime, kind, start_core))
            .map_err(|f| src.hinted(f)),
    )?;
    let cores = loaded
        .cores
        .into_iter()
        .map(|c| core_to_py(py, c).and_then(|c| Py::new(py, c)))
        .collect::<PyResult<_>>()?;
    let tensors = loaded
        .tensors
        .iter()
        .map(|t| Py::new(py, Tensor::from_info(t)))
        .collect::<PyResult<_>>()?;
    Ok(Model {
        arch: loaded.rt.config().topology.arch.instance(),
        runtime: loaded.rt.config().line().to_string(),
        device: device.to_string(),
        name: loaded.handle.name.clone(),
        uuid: loaded.handle.uuid,
        vnc: loaded.handle.vnc,
        instance_vnc: loaded.handle.lcore.0,
        handle: Mutex::new(Some(loaded.handle)),
        rt: loaded.rt,
        bytes: src.bytes,
        weights: OnceLock::new(),
        cores,
        tensors,
        io_tensors: Py::new(py, loaded.io)?,
        warnings: loaded.warnings,
        collectives: Collective::list(py, loaded.collectives.iter())?,
        collectives_memory: neffld::report::Collective::uncounted_note(&loaded.collectives),
        timings: loaded.timings,
    })
}
