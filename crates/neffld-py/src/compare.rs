//! `neffld.compare`: a real hardware capture (NTFF) held against neffld's
//! load of the same NEFF — the library's comparison, as Python objects.

use neffld::capture::{self, CaptureError};
use neffld::report::compare::{self as cmp, CompareError, ImageSide};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::error::{raise, Failure};
use crate::repr::py_bool;
use crate::source;

/// One memory row on both sides (bytes; `None` where a side lacks the row).
#[pyclass(frozen, get_all, module = "neffld")]
pub struct RowComparison {
    /// The row's usage type ("Generic", "Weights", ...).
    pub usage_type: String,
    pub ours: Option<u64>,
    pub capture: Option<u64>,
    /// False for rows that depend on who ran the model (Profiler Buffers,
    /// Tensors): shown, never counted against agreement.
    pub counted: bool,
    pub equal: bool,
}

/// One engine's instruction image on both sides.
#[pyclass(frozen, get_all, module = "neffld")]
pub struct ImageComparison {
    pub engine: &'static str,
    /// address, bytes, preamble/main/postamble slots, kept/rewritten/deleted
    /// records; `None` where a side has no image.
    pub ours: Option<Py<PyDict>>,
    pub capture: Option<Py<PyDict>>,
    /// NEFF records, and how many met the same fate on both sides.
    pub records: u32,
    pub same_fate: u32,
    /// 8-byte words of records both sides rewrote, and how many are equal.
    pub rewritten_words: u32,
    pub rewritten_words_equal: u32,
    /// 8-byte words of the whole image compared at the same offsets (our
    /// filler slots left out), and how many are equal.
    pub words: u32,
    pub words_equal: u32,
    /// Slots of our image's runtime code that are filler, not the runtime's
    /// bytes (unknown for the line), and records our image rewrote with
    /// values no rule covers (trigger counts of DMA transposes).
    pub filler_slots: u32,
    pub approximate_records: u32,
    /// `"same"`, `"raced"` (the two cores' images of a racing engine at each
    /// other's addresses: the runtime's own race, not a disagreement) or
    /// `"differs"`.
    pub address: &'static str,
    pub agrees: bool,
}

/// One subgraph on both sides.
#[pyclass(frozen, get_all, module = "neffld")]
pub struct CoreComparison {
    pub subgraph: String,
    pub pcore_ours: Option<u32>,
    pub pcore_capture: Option<u64>,
    pub images: Vec<Py<ImageComparison>>,
    pub memory: Vec<Py<RowComparison>>,
    pub agrees: bool,
}

/// The whole comparison; truthy when neffld agrees with the capture.
#[pyclass(frozen, get_all, module = "neffld")]
pub struct Comparison {
    /// The runtime line neffld loaded under: the capture's ("2.23" … the
    /// newest).
    pub runtime_line: String,
    pub agrees: bool,
    pub cores: Vec<Py<CoreComparison>>,
}

#[pymethods]
impl Comparison {
    fn __bool__(&self) -> bool {
        self.agrees
    }

    fn __repr__(&self) -> String {
        format!(
            "Comparison(agrees={}, cores={})",
            py_bool(self.agrees),
            self.cores.len()
        )
    }
}

#[pymethods]
impl CoreComparison {
    fn __repr__(&self, py: Python<'_>) -> String {
        let differ: Vec<String> = self
            .images
            .iter()
            .filter(|i| !i.get().agrees)
            .map(|i| i.get().engine.to_string())
            .chain(
                self.memory
                    .iter()
                    .map(|r| r.bind(py).get())
                    .filter(|r| r.counted && !r.equal)
                    .map(|r| r.usage_type.clone()),
            )
            .collect();
        format!(
            "CoreComparison({}: agrees={}{})",
            self.subgraph,
            py_bool(self.agrees),
            if differ.is_empty() {
                String::new()
            } else {
                format!(", differs in {}", differ.join(", "))
            }
        )
    }
}

#[pymethods]
impl ImageComparison {
    fn __repr__(&self) -> String {
        format!(
            "ImageComparison({}: agrees={}, address {}, words {}/{} equal, records {}/{} alike)",
            self.engine,
            py_bool(self.agrees),
            self.address,
            self.words_equal,
            self.words,
            self.same_fate,
            self.records
        )
    }
}

#[pymethods]
impl RowComparison {
    fn __repr__(&self) -> String {
        let v = |b: Option<u64>| b.map_or("None".to_string(), |b| b.to_string());
        format!(
            "RowComparison({}: ours {}, capture {}, equal={}{})",
            self.usage_type,
            v(self.ours),
            v(self.capture),
            py_bool(self.equal),
            if self.counted { "" } else { ", not counted" }
        )
    }
}

fn side(py: Python<'_>, s: &Option<ImageSide>) -> PyResult<Option<Py<PyDict>>> {
    let Some(s) = s else { return Ok(None) };
    let d = PyDict::new(py);
    d.set_item("address", s.address)?;
    d.set_item("bytes", s.bytes)?;
    d.set_item("preamble_slots", s.preamble_slots)?;
    d.set_item("main_slots", s.main_slots)?;
    d.set_item("postamble_slots", s.postamble_slots)?;
    d.set_item("kept", s.kept)?;
    d.set_item("rewritten", s.rewritten)?;
    d.set_item("deleted", s.deleted)?;
    Ok(Some(d.unbind()))
}

fn capture_failure(e: CaptureError) -> Failure {
    Failure::new("capture", e.status(), e.to_string())
}

fn compare_failure(e: CompareError) -> Failure {
    match e {
        CompareError::Load(e) => e.into(),
        CompareError::Device(e) => Failure::new("device", e.status(), e.to_string()),
        e => Failure::new("capture", e.status(), e.to_string()),
    }
}

fn to_py(py: Python<'_>, c: &cmp::Comparison) -> PyResult<Comparison> {
    let cores = c
        .cores
        .iter()
        .map(|k| {
            let images = k
                .images
                .iter()
                .map(|i| {
                    Py::new(
                        py,
                        ImageComparison {
                            engine: i.engine.key(),
                            ours: side(py, &i.ours)?,
                            capture: side(py, &i.capture)?,
                            records: i.records,
                            same_fate: i.same_fate,
                            rewritten_words: i.rewritten_words,
                            rewritten_words_equal: i.rewritten_words_equal,
                            words: i.words,
                            words_equal: i.words_equal,
                            filler_slots: i.filler_slots,
                            approximate_records: i.approximate_records,
                            address: i.address.name(),
                            agrees: i.agrees(),
                        },
                    )
                })
                .collect::<PyResult<_>>()?;
            let memory = k
                .memory
                .iter()
                .map(|r| {
                    Py::new(
                        py,
                        RowComparison {
                            usage_type: r.usage_type.clone(),
                            ours: r.ours,
                            capture: r.capture,
                            counted: r.counted,
                            equal: r.equal(),
                        },
                    )
                })
                .collect::<PyResult<_>>()?;
            Py::new(
                py,
                CoreComparison {
                    subgraph: k.subgraph.clone(),
                    pcore_ours: k.pcore_ours,
                    pcore_capture: k.pcore_capture,
                    images,
                    memory,
                    agrees: k.agrees(),
                },
            )
        })
        .collect::<PyResult<_>>()?;
    Ok(Comparison {
        runtime_line: c.line.to_string(),
        agrees: c.agrees(),
        cores,
    })
}

/// compare(neff, capture) -> Comparison
///
/// Loads `neff` (a path or bytes) as the runtime that made `capture` (a
/// profiler capture, `.ntff`, path or bytes) did — its architecture,
/// runtime line and logical core — and holds the result against the capture: per core and
/// engine the image size, split and record fates, the address, and the
/// memory rows side by side. Raises NeffError when either cannot be read.
#[pyfunction]
pub fn compare(
    py: Python<'_>,
    neff: &Bound<'_, PyAny>,
    capture: &Bound<'_, PyAny>,
) -> PyResult<Comparison> {
    let neff = source::read("neff", neff)?;
    let cap = source::read_capture("capture", capture)?;
    let result = py.detach(|| {
        let c = capture::read(&cap.bytes).map_err(|e| cap.hinted(capture_failure(e)))?;
        cmp::load_and_compare(&neff.bytes, &c)
            .map(|(found, _)| found)
            .map_err(|e| neff.hinted(compare_failure(e)))
    });
    let found = raise(py, result)?;
    to_py(py, &found)
}
