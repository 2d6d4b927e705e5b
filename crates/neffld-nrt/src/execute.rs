//! The execution domain: `nrt_execute` and `nrt_execute_repeat`.
//!
//! Nothing executes on the simulated device, but the binding of the caller's
//! tensor sets to the model is checked as the reference runtime checks it
//! before it starts: every input and output of the model must be in its set
//! under its own name and with exactly its size, and a set may hold no name
//! the model does not have. A binding fault gives `NRT_INVALID` (the status
//! `nrt_status.h` names for "input tensor name/size does not match the
//! model") and a message naming the tensor; a correct binding is then
//! refused with `NRT_FAILURE` and one line saying execution is not supported.

use std::ffi::c_int;

use neffld::api::{TensorInfo, TensorUsage};
use tracing::error;

use crate::abi::nrt_status::NRT_STATUS;
use crate::boundary::{guarded, NrtResult};
use crate::model::{self, nrt_model_t};
use crate::tensor_set::{self, nrt_tensor_set_t};
use crate::{state, status, tensor, unsupported};

/// Checks one set against the model's tensors of one usage.
fn check_set(
    api: &str,
    what: &str,
    set: *const nrt_tensor_set_t,
    expected: &[&TensorInfo],
) -> NrtResult {
    let bound = tensor_set::entries(api, set)?;
    for t in expected {
        let Some((_, ptr)) = bound.iter().find(|(n, _)| *n == t.name) else {
            error!(
                "{api}: {what} tensor \"{}\" is missing from the {what} set",
                t.name
            );
            return Err(NRT_STATUS::NRT_INVALID);
        };
        let size = tensor::size(*ptr) as u64;
        if size == 0 {
            error!(
                "{api}: {what} tensor \"{}\" is not a live tensor with storage",
                t.name
            );
            return Err(NRT_STATUS::NRT_INVALID);
        }
        if size != t.size {
            error!(
                "{api}: {what} tensor \"{}\" has {size} bytes; the model expects {}",
                t.name, t.size
            );
            return Err(NRT_STATUS::NRT_INVALID);
        }
    }
    if let Some((name, _)) = bound
        .iter()
        .find(|(n, _)| !expected.iter().any(|t| t.name == *n))
    {
        error!("{api}: the {what} set holds \"{name}\", which is not an {what} of the model");
        return Err(NRT_STATUS::NRT_INVALID);
    }
    Ok(())
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
    let of =
        |u: TensorUsage| -> Vec<&TensorInfo> { tensors.iter().filter(|t| t.usage == u).collect() };
    check_set(api, "input", inputs, &of(TensorUsage::Input))?;
    check_set(api, "output", outputs, &of(TensorUsage::Output))?;
    Err(unsupported::call(api))
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
