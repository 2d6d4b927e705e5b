//! What a load does not hold: the input and output tensors a framework
//! allocates and binds to execute the model. A plan charges them after
//! each load; a load's own report measures them the same way
//! ([`Runtime::allocate_io`]), so `neffld load` and `neffld plan` give one
//! figure for the same NEFF.

use crate::api::{LoadError, Model, Runtime};
use crate::report::MemoryReport;

/// A loaded model's input and output tensors, and the device with them.
#[derive(Debug)]
pub struct IoTensors {
    /// Input and output tensors with bytes.
    pub count: usize,
    /// Their sizes summed: what they ask for.
    pub bytes: u64,
    /// The model's device with them allocated beside it (what a plan
    /// reports after the load), or the refusal when they do not fit.
    pub with_them: Result<MemoryReport, LoadError>,
}

impl IoTensors {
    /// Allocates `model`'s input and output tensors on its logical core as
    /// a plan does after a load, reads the device's memory with them
    /// held, and releases them: the device is left as it was.
    pub fn measure(rt: &Runtime, model: &Model) -> Result<IoTensors, LoadError> {
        let tensors = rt.tensor_info(model)?;
        let sized = tensors.iter().filter(|t| t.size > 0);
        let (count, bytes) = sized.fold((0, 0u64), |(n, b), t| (n + 1, b.saturating_add(t.size)));
        let mut held = Vec::new();
        let with_them = rt
            .allocate_io(model, |_, t| held.push(t))
            .and_then(|()| MemoryReport::of_model(rt, model));
        drop(held);
        Ok(IoTensors {
            count,
            bytes,
            with_them,
        })
    }
}
