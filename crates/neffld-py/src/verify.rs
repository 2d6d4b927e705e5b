//! `neffld.verify`: the library's examination ([`Examination`]), hash
//! required, with every problem it found — not only the first. A gate whose
//! failure leaves nothing to check further (a bad header, an archive that
//! does not inflate, a manifest that does not parse) ends the run, while a
//! digest mismatch and the staged model's validation findings are collected
//! and the run goes on.

use neffld::error::LoadError;
use neffld::report::{Examination, ExamineOptions};
use neffld::settings::{Asked, Settings};
use neffld::NrtStatus;
use pyo3::prelude::*;

use crate::error::{raise, FResult, Failure};
use crate::source;

/// One thing wrong with a NEFF.
#[pyclass(frozen, get_all, module = "neffld")]
pub struct Problem {
    /// The gate: "container", "parse", "stage", "validate", ...
    pub stage: &'static str,
    /// The NRT status the runtime returns for it.
    pub status: u32,
    pub status_name: &'static str,
    pub message: String,
}

#[pymethods]
impl Problem {
    fn __repr__(&self) -> String {
        format!(
            "Problem({}: {} [{}])",
            self.stage, self.message, self.status_name
        )
    }
}

impl From<Failure> for Problem {
    fn from(f: Failure) -> Problem {
        Problem {
            stage: f.stage,
            status: f.status.code(),
            status_name: f.status.as_str(),
            message: f.message,
        }
    }
}

/// The verdict on a NEFF and every problem found. True when sound.
#[pyclass(frozen, get_all, module = "neffld")]
pub struct VerifyReport {
    /// True when every gate passed.
    pub ok: bool,
    /// The status of the first problem (NRT_SUCCESS, 0, when sound).
    pub status: u32,
    pub status_name: &'static str,
    /// Every problem found, in gate order.
    pub problems: Vec<Py<Problem>>,
    /// Non-fatal findings.
    pub warnings: Vec<String>,
    /// The digest algorithm of the header ("md5" or "sha256").
    pub hash_algorithm: String,
    /// "plain", "word-swapped", "mismatch", "skipped" (empty payload) or
    /// "" when the header did not parse.
    pub hash_result: String,
    /// Gates passed: container, parse, stage, validate (a gate that found
    /// a problem is not among them).
    pub gates: Vec<&'static str>,
}

#[pymethods]
impl VerifyReport {
    /// "ok" when every gate passed, else "fail" (as `neffld verify` prints).
    #[getter]
    fn verdict(&self) -> &'static str {
        if self.ok {
            "ok"
        } else {
            "fail"
        }
    }

    fn __bool__(&self) -> bool {
        self.ok
    }

    fn __repr__(&self) -> String {
        format!(
            "VerifyReport(ok={}, {} problem(s), gates={})",
            crate::repr::py_bool(self.ok),
            self.problems.len(),
            crate::repr::py_str_list(&self.gates)
        )
    }
}

/// The gates on `bytes`, the hash required; with `stage`, the verdict of
/// a load on a device without storage, its staged model validated, under
/// the settings a load resolves ([`Settings`]: the architecture
/// `NEFFLD_ARCH` or `NEFFLD_INSTANCE` names, else the NEFF's own target;
/// its declared logical-core size unless `NEURON_LOGICAL_NC_CONFIG` sets
/// one). A variable whose value the runtime refuses is an error.
fn examine(bytes: &[u8], stage: bool) -> FResult<Examination> {
    if !stage {
        let opts = ExamineOptions {
            require_hash: true,
            contents: true,
            ..ExamineOptions::default()
        };
        return Ok(Examination::of(bytes, &opts));
    }
    let asked = Asked {
        check: Some(true),
        validate_hash: Some(true),
        follow_neff_lnc: true,
        ..Asked::default()
    };
    let settings = Settings::from_env(&asked)
        .map_err(|e| Failure::new("config", e.status(), e.to_string()))?;
    Ok(Examination::verify(bytes, &settings, false))
}

/// Each problem as Python sees it: a validation failure is one problem per
/// finding.
fn problems(x: Examination) -> Vec<Failure> {
    let mut out = Vec::new();
    for e in x.problems {
        match e {
            LoadError::Validation(findings) => out.extend(findings.into_iter().map(|v| {
                Failure::new(
                    "validate",
                    NrtStatus::Failure,
                    format!("{}: {}", v.subgraph, v.what),
                )
            })),
            e => out.push(e.into()),
        }
    }
    out
}

/// verify(path_or_bytes, stage=True) -> VerifyReport
///
/// Runs every gate on a NEFF, the payload hash required: the container
/// (header, digest, inflate, tar), the manifests and KBIN, and — with
/// `stage` — a load on a simulated device with the staged model validated:
/// of the architecture `NEFFLD_ARCH` or `NEFFLD_INSTANCE` names, else of
/// the NEFF's own target, as `load` resolves it. Returns the verdict and
/// every problem found; raises NeffError only when the input cannot be
/// read at all or a variable's value is refused.
#[pyfunction]
#[pyo3(signature = (path_or_bytes, stage=true))]
pub fn verify(
    py: Python<'_>,
    path_or_bytes: &Bound<'_, PyAny>,
    stage: bool,
) -> PyResult<VerifyReport> {
    let src = source::read("path_or_bytes", path_or_bytes)?;
    let x = raise(py, py.detach(|| examine(&src.bytes, stage)))?;
    let (hash_algorithm, hash_result) = x.integrity.as_ref().map_or_else(Default::default, |i| {
        (
            i.algorithm.name().to_lowercase(),
            i.result.name().to_string(),
        )
    });
    let gates = x.gates.iter().map(|g| g.name()).collect();
    let warnings = x.warnings.clone();
    // The first problem is the one bytes that name a file meet.
    let mut rest = problems(x).into_iter();
    let problems: Vec<_> = rest
        .next()
        .map(|f| src.hinted(f))
        .into_iter()
        .chain(rest)
        .collect();
    let first = problems.first().map_or(NrtStatus::Success, |p| p.status);
    Ok(VerifyReport {
        ok: problems.is_empty(),
        status: first.code(),
        status_name: first.as_str(),
        problems: problems
            .into_iter()
            .map(|p| Py::new(py, Problem::from(p)))
            .collect::<PyResult<_>>()?,
        warnings,
        hash_algorithm,
        hash_result,
        gates,
    })
}
