//! `neffld.verify`: every gate, hash required, with every problem found —
//! not only the first. The gates run in the runtime's order; a gate whose
//! failure leaves nothing to check further (a bad header, an archive that
//! does not inflate, a manifest that does not parse) ends the run, while a
//! digest mismatch and the staged model's validation findings are collected
//! and the run goes on.

use neffld::api::{LoadError, Runtime};
use neffld::config::{DeviceKind, RuntimeConfig};
use neffld::container::archive::{default_inflate_limit, Archive};
use neffld::container::{integrity, payload_window, Neff, NeffHeader};
use neffld::NrtStatus;
use pyo3::prelude::*;

use crate::error::{raise, Failure};
use crate::info;
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
    /// Gates that ran to the end: container, parse, stage, validate.
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
            "VerifyReport(ok={}, {} problem(s), gates={:?})",
            self.ok,
            self.problems.len(),
            self.gates
        )
    }
}

#[derive(Default)]
struct Findings {
    problems: Vec<Failure>,
    warnings: Vec<String>,
    hash_algorithm: String,
    hash_result: String,
    gates: Vec<&'static str>,
}

fn container_failure(e: neffld::container::ContainerError) -> Failure {
    Failure::new("container", e.status(), e.to_string())
}

/// S1 with the hash checked but not fatal: the archive is still read so the
/// later gates can report on it.
fn container_gate(bytes: &[u8], f: &mut Findings) -> Option<Neff> {
    let header = NeffHeader::parse(bytes).and_then(|h| h.validate(bytes.len() as u64).map(|_| h));
    let header = match header {
        Ok(h) => h,
        Err(e) => {
            f.problems.push(container_failure(e));
            return None;
        }
    };
    let window = payload_window(bytes, &header).unwrap_or_default();
    f.hash_algorithm = integrity::HashAlgorithm::for_pkg_version(header.pkg_version)
        .name()
        .to_lowercase();
    let verified = match integrity::verify(header.pkg_version, &header.hash, window) {
        Ok(v) => {
            f.hash_result = v.form.name().to_string();
            Some(v)
        }
        Err(e) => {
            f.hash_result = match e {
                neffld::container::ContainerError::EmptyPayload => "skipped",
                _ => "mismatch",
            }
            .into();
            f.problems.push(container_failure(e));
            None
        }
    };
    match Archive::decode(window, default_inflate_limit(window.len() as u64)) {
        Ok(archive) => {
            f.warnings.extend(archive.warnings().iter().cloned());
            f.gates.push("container");
            Some(Neff {
                header,
                verified,
                compared: None,
                archive,
            })
        }
        Err(e) => {
            f.problems.push(container_failure(e));
            None
        }
    }
}

/// S0–S5 on a simulated device of the NEFF's own target, with the staged
/// model validated (every address inside an allocation); each validation
/// finding is a problem of its own.
fn stage_gate(bytes: &[u8], neff: Neff, f: &mut Findings) {
    let config = RuntimeConfig {
        arch: info::own_options(&neff).instance_arch,
        lnc: info::declared_lnc(&neff),
        device: DeviceKind::Sim,
        check: true,
        ..RuntimeConfig::default()
    };
    let rt = match Runtime::new(config) {
        Ok(rt) => rt,
        Err(e) => return f.problems.push(e.into()),
    };
    match rt.load_opened(bytes, neff, -1, 1) {
        Ok(model) => {
            f.gates.push("stage");
            f.gates.push("validate");
            if let Err(e) = rt.unload(&model) {
                f.problems.push(e.into());
            }
        }
        Err(LoadError::Validation(findings)) => {
            f.gates.push("stage");
            for v in findings {
                f.problems.push(Failure::new(
                    "validate",
                    NrtStatus::Failure,
                    format!("{}: {}", v.subgraph, v.what),
                ));
            }
        }
        Err(e) => f.problems.push(e.into()),
    }
    rt.close();
}

fn run(bytes: &[u8], stage: bool) -> Findings {
    let mut f = Findings::default();
    let Some(neff) = container_gate(bytes, &mut f) else {
        return f;
    };
    match info::parse_own(&neff) {
        Ok(model) => {
            f.warnings.extend(model.warnings().iter().cloned());
            f.gates.push("parse");
        }
        Err(e) => {
            f.problems.push(e);
            return f;
        }
    }
    if stage {
        stage_gate(bytes, neff, &mut f);
    }
    f
}

/// verify(path_or_bytes, stage=True) -> VerifyReport
///
/// Runs every gate on a NEFF, the payload hash required: the container
/// (header, digest, inflate, tar), the manifests and KBIN, and — with
/// `stage` — a load on a simulated device of the NEFF's own target with the
/// staged model validated. Returns the verdict and every problem found;
/// raises NeffError only when the input cannot be read at all.
#[pyfunction]
#[pyo3(signature = (path_or_bytes, stage=true))]
pub fn verify(
    py: Python<'_>,
    path_or_bytes: &Bound<'_, PyAny>,
    stage: bool,
) -> PyResult<VerifyReport> {
    let (bytes, _) = raise(py, source::read(path_or_bytes))?;
    let f = py.detach(|| run(&bytes, stage));
    let first = f.problems.first().map_or(NrtStatus::Success, |p| p.status);
    Ok(VerifyReport {
        ok: f.problems.is_empty(),
        status: first.code(),
        status_name: first.as_str(),
        problems: f
            .problems
            .into_iter()
            .map(|p| Py::new(py, Problem::from(p)))
            .collect::<PyResult<_>>()?,
        warnings: f.warnings,
        hash_algorithm: f.hash_algorithm,
        hash_result: f.hash_result,
        gates: f.gates,
    })
}
