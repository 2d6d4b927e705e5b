//! Python bindings of neffld (`import neffld`): inspect, verify and load
//! NEFF files on a simulated device, from Python.
//!
//! The extension is `neffld._neffld`; the `neffld` package re-exports it and
//! ships the type stubs. Every failure is raised as `neffld.NeffError`,
//! carrying the NRT status a C caller of libnrt would have seen.

mod cli;
mod compare;
mod error;
mod info;
mod model;
mod nrtpy;
mod plan;
mod repr;
mod source;
mod verify;
mod weight;

use pyo3::prelude::*;

#[pymodule]
mod _neffld {
    #[pymodule_export]
    use crate::cli::_main;
    #[pymodule_export]
    use crate::compare::{compare, Comparison, CoreComparison, ImageComparison, RowComparison};
    #[pymodule_export]
    use crate::error::NeffError;
    #[pymodule_export]
    use crate::info::{inspect, Collective, NeffInfo, Tensor};
    #[pymodule_export]
    use crate::model::{load, Core, IoTensors, Model, Variable};
    #[pymodule_export]
    use crate::nrtpy::{
        _LoadedModel, _nrtpy_active, _nrtpy_enums, _nrtpy_reset, _tensor_cast, _tensor_compute,
        NrtError, NrtTensor, NrtpyError, TensorMetadata,
    };
    #[pymodule_export]
    use crate::plan::{
        _plan, _plan_argv, Advice, Copies, Disagreement, Headroom, LogLine, Plan, PlanInstance,
        PlanNeff, PlanRefusal, PlanStep, PlanTensor, PlanWorld, Pool, Solve, StepError, WorldRank,
    };
    #[pymodule_export]
    use crate::verify::{verify, Problem, VerifyReport};
    #[pymodule_export]
    use crate::weight::Weight;

    use pyo3::prelude::*;

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        for (name, class) in crate::error::os_classes(m.py())? {
            m.add(name, class)?;
        }
        m.add("__version__", env!("CARGO_PKG_VERSION"))?;
        // The runtime lines of the library's table, oldest first.
        let lines: Vec<String> = neffld::RuntimeLine::ALL
            .iter()
            .map(|l| l.to_string())
            .collect();
        m.add("RUNTIME_LINES", pyo3::types::PyTuple::new(m.py(), lines)?)
    }
}
