//! The execution domain: `nrt_execute` and `nrt_execute_repeat`.
//!
//! Nothing executes on the simulated device, but the binding of the caller's
//! tensor sets to the model is checked as the reference runtime checks it
//! before it starts ([`neffld::execute`], which Python's nrtpy asks too):
//! every input and output of the model must be in its set under its own
//! name and with exactly its size, and a set may hold no name the model
//! does not have. A binding fault gives `NRT_INVALID` (the status
//! `nrt_status.h` names for "input tensor name/size does not match the
//! model") and a message naming the tensor; a correct binding is then
//! refused with `NRT_FAILURE` and one line saying execution is not supported.

use std::ffi::c_int;

use neffld::api::TensorUsage;
use neffld::execute::{self, ExecuteError};
use tracing::error;

use crate::abi::nrt_status::NRT_STATUS;
use crate::boundary::{guarded, NrtResult};
use crate::model::{self, nrt_model_t};
use crate::tensor_set::{self, nrt_tensor_set_t};
use crate::{state, status, tensor, unsupported};

/// The names and sizes bound in one set.
fn bound(api: &str, set: *const nrt_tensor_set_t) -> Result<Vec<(String, u64)>, NRT_STATUS> {
    let entries = tensor_set::entries(api, set)?;
    Ok(entries
        .into_iter()
        .map(|(name, ptr)| (name, tensor::size(ptr) as u64))
        .collect())
}

/// `bound`'s names borrowed, as [`execute`] takes them.
fn view(b: &[(String, u64)]) -> Vec<(&str, u64)> {
    b.iter().map(|(n, s)| (n.as_str(), *s)).collect()
}

/// Checks the binding, then refuses the execution (also for
/// `nrta_execute_schedule`).
pub(crate) fn execute(
    api: &'static str,
    model: *const nrt_model_t,
    inputs: *const nrt_tensor_set_t,
    outputs: *const nrt_tensor_set_t,
) -> NrtResult {
    let rt = state::runtime()?;
    let m = model::lookup(api, &rt, model)?;
    let tensors = rt
        .tensor_info(&m)
        .map_err(|e| status::load_error(api, &e))?;
    let refused = |e: ExecuteError| {
        error!("{api}: {e}");
        status::from_core(e.status())
    };
    // The input set is read and checked before the output set is read.
    let inputs = bound(api, inputs)?;
    execute::check_binding(&tensors, TensorUsage::Input, &view(&inputs)).map_err(refused)?;
    let outputs = bound(api, outputs)?;
    match execute::refusal(&tensors, &view(&inputs), Some(&view(&outputs))) {
        ExecuteError::Unsupported => Err(unsupported::call(api)),
        e => Err(refused(e)),
    }
}

/// Checks that the sets bind every input and output of the model by name and
/// size (`NRT_INVALID` naming the first tensor that does not), then refuses
/// the execution with `NRT_FAILURE`: the simulated device runs nothing.
#[no_mangle]
pub extern "C" fn nrt_execute(
    model: *mut nrt_model_t,
    input_set: *const nrt_tensor_set_t,
    output_set: *mut nrt_tensor_set_t,
) -> NRT_STATUS {
    guarded("nrt_execute", || {
        execute("nrt_execute", model, input_set, output_set)
    })
}

/// As `nrt_execute`; a `repeat_count` below 1 gives `NRT_INVALID`.
#[no_mangle]
pub extern "C" fn nrt_execute_repeat(
    model: *mut nrt_model_t,
    input_set: *const nrt_tensor_set_t,
    output_set: *mut nrt_tensor_set_t,
    repeat_count: c_int,
) -> NRT_STATUS {
    guarded("nrt_execute_repeat", || {
        if repeat_count < 1 {
            error!("nrt_execute_repeat: repeat_count {repeat_count} is below 1");
            return Err(NRT_STATUS::NRT_INVALID);
        }
        execute("nrt_execute_repeat", model, input_set, output_set)
    })
}
