//! The asynchronous execution domain (`nrt_async.h`).
//!
//! Tensor reads, writes and copies are real: the host performs each at once,
//! so a request is complete when its call returns. On success the call
//! issues the request's sequence id (the execution unit's type in the top 16
//! bits, the unit's next number in the low 48) and the unit's last completed
//! sequence advances to it; a failed request returns its status directly
//! (there is nothing left to report later, so trackers stay empty). A unit
//! here is an execution-unit type, shared by every core and queue.
//! `nrta_is_completed` is true for every issued id and `NRT_INVALID` for an
//! id never issued, as the header says. Executions and collectives cannot
//! run on the simulated device: they are refused with `NRT_FAILURE` and one
//! log line, as is a completion file descriptor.

#![allow(unused_variables)]

use std::ffi::{c_int, c_void};
use std::sync::Mutex;

use tracing::error;

use crate::abi::nrt::{NrtCcOpArg, NrtDtypeArg, NrtOpArg};
use crate::abi::nrt_async::{nrta_error_t, nrta_seq_t, nrta_xu_t, NrtaXuArg, NRTA_SEQ_NUM_MASK};
use crate::abi::nrt_status::NRT_STATUS;
use crate::boundary::{guarded, guarded_value, non_null, NrtResult};
use crate::device::{nrt_cc_comm_t, nrt_cc_context_t, nrt_tensor_list_t};
use crate::handles::{Handle, Kind};
use crate::model::nrt_model_t;
use crate::tensor::nrt_tensor_t;
use crate::tensor_set::nrt_tensor_set_t;
use crate::{execute, state, tensor, unsupported};

/// The last sequence number issued per execution-unit type (0: none yet).
static LAST: Mutex<[u64; nrta_xu_t::NRTA_XU_TYPE_NUM as usize]> =
    Mutex::new([0; nrta_xu_t::NRTA_XU_TYPE_NUM as usize]);

/// Runs `op` now; on success issues the next sequence id of `xu` into
/// `*req_sequence` (when not NULL).
fn perform(
    xu: nrta_xu_t,
    req_sequence: *mut nrta_seq_t,
    op: impl FnOnce() -> NrtResult,
) -> NrtResult {
    state::runtime()?;
    op()?;
    let mut last = LAST.lock().unwrap_or_else(|p| p.into_inner());
    let n = &mut last[xu as usize];
    *n = (*n + 1) & NRTA_SEQ_NUM_MASK;
    let seq = ((xu as u64) << 48) | *n;
    if !req_sequence.is_null() {
        // SAFETY: non-NULL and writable per the calling function's contract.
        unsafe { *req_sequence = seq };
    }
    Ok(())
}

/// The object behind `nrta_error_tracker_t`: the errors of one core's
/// requests.
#[derive(Debug, Default)]
pub(crate) struct ErrorTracker {
    lnc: u32,
    errors: Vec<nrta_error_t>,
}

/// An error tracker. Opaque to C: made by `nrta_error_tracker_create`,
/// released by `nrta_error_tracker_destroy`.
pub struct nrta_error_tracker {
    _private: [u8; 0],
}

/// The name C callers use for [`nrta_error_tracker`].
pub type nrta_error_tracker_t = nrta_error_tracker;

impl Handle for nrta_error_tracker {
    type Rust = ErrorTracker;
    const KIND: Kind = Kind::ErrorTracker;
    const NAME: &'static str = "error tracker";
}

/// Writes `size` bytes of `buf` into the tensor at `offset` now (as
/// `nrt_tensor_write`) and issues the request's id in `*req_sequence`.
///
/// # Safety
/// `buf` must be NULL or point to `size` readable bytes; `req_sequence`
/// must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrta_tensor_write(
    tensor: *mut nrt_tensor_t,
    buf: *const c_void,
    offset: u64,
    size: u64,
    queue: c_int,
    err: *mut nrta_error_tracker_t,
    req_sequence: *mut nrta_seq_t,
) -> NRT_STATUS {
    guarded("nrta_tensor_write", || {
        let size = usize::try_from(size).map_err(|_| NRT_STATUS::NRT_INVALID)?;
        perform(nrta_xu_t::NRTA_XU_TENSOR_WRITE, req_sequence, || {
            // SAFETY: forwarded from this function's contract.
            unsafe { tensor::write(tensor, buf, offset, size) }
        })
    })
}

/// Reads `size` bytes at `offset` of the tensor into `buf` now (as
/// `nrt_tensor_read`) and issues the request's id in `*req_sequence`.
///
/// # Safety
/// `buf` must be NULL or point to `size` writable bytes; `req_sequence`
/// must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrta_tensor_read(
    buf: *mut c_void,
    tensor: *mut nrt_tensor_t,
    offset: u64,
    size: u64,
    queue: c_int,
    err: *mut nrta_error_tracker_t,
    req_sequence: *mut nrta_seq_t,
) -> NRT_STATUS {
    guarded("nrta_tensor_read", || {
        let size = usize::try_from(size).map_err(|_| NRT_STATUS::NRT_INVALID)?;
        perform(nrta_xu_t::NRTA_XU_TENSOR_READ, req_sequence, || {
            // SAFETY: forwarded from this function's contract.
            unsafe { tensor::read(tensor, buf, offset, size) }
        })
    })
}

/// Copies `size` bytes between tensors now (as `nrt_tensor_copy`) and
/// issues the request's id in `*req_sequence`.
///
/// # Safety
/// `req_sequence` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrta_tensor_copy(
    src: *mut nrt_tensor_t,
    src_offset: u64,
    dst: *mut nrt_tensor_t,
    dst_offset: u64,
    size: u64,
    queue: c_int,
    err: *mut nrta_error_tracker_t,
    req_sequence: *mut nrta_seq_t,
) -> NRT_STATUS {
    guarded("nrta_tensor_copy", || {
        perform(nrta_xu_t::NRTA_XU_TENSOR_OP, req_sequence, || {
            tensor::copy(src, src_offset, dst, dst_offset, size)
        })
    })
}

/// Checks the tensor binding as `nrt_execute` does (`NRT_INVALID` naming
/// the tensor), then refuses (`NRT_FAILURE`): nothing executes.
#[no_mangle]
pub extern "C" fn nrta_execute_schedule(
    model: *mut nrt_model_t,
    input: *const nrt_tensor_set_t,
    output: *mut nrt_tensor_set_t,
    queue: c_int,
    err: *mut nrta_error_tracker_t,
    req_sequence: *mut nrta_seq_t,
) -> NRT_STATUS {
    guarded("nrta_execute_schedule", || {
        execute::execute("nrta_execute_schedule", model, input, output)
    })
}

/// Refused (`NRT_FAILURE`): no collectives.
#[no_mangle]
pub extern "C" fn nrta_cc_prepare(
    comm: *mut nrt_cc_comm_t,
    input: *mut nrt_tensor_list_t,
    output: *mut nrt_tensor_list_t,
    dtype: NrtDtypeArg,
    op: NrtOpArg,
    cc_op: NrtCcOpArg,
    cc_ctx: *mut *mut nrt_cc_context_t,
) -> NRT_STATUS {
    unsupported::call("nrta_cc_prepare")
}

/// Refused (`NRT_FAILURE`): no collectives.
#[no_mangle]
pub extern "C" fn nrta_cc_schedule(
    cc_ctx: *mut *mut nrt_cc_context_t,
    queue: c_int,
    err: *mut nrta_error_tracker_t,
    req_sequence: *mut nrta_seq_t,
) -> NRT_STATUS {
    unsupported::call("nrta_cc_schedule")
}

/// The last sequence number issued for the unit of `seq`, when its unit is
/// a known type.
fn last_of(seq: nrta_seq_t) -> Option<u64> {
    let xu = usize::try_from(seq >> 48).ok()?;
    let last = LAST.lock().unwrap_or_else(|p| p.into_inner());
    last.get(xu).copied()
}

/// Every issued request has completed (it ran inside its call): true for an
/// issued id; an id never issued gives `NRT_INVALID`.
///
/// # Safety
/// `is_completed` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrta_is_completed(seq: nrta_seq_t, is_completed: *mut bool) -> NRT_STATUS {
    guarded("nrta_is_completed", || {
        non_null("nrta_is_completed", "is_completed", is_completed)?;
        let n = seq & NRTA_SEQ_NUM_MASK;
        if n == 0 || last_of(seq).is_none_or(|last| n > last) {
            error!("nrta_is_completed: sequence {seq:#x} was never issued");
            return Err(NRT_STATUS::NRT_INVALID);
        }
        // SAFETY: non-NULL and writable per this function's contract.
        unsafe { *is_completed = true };
        Ok(())
    })
}

/// Writes the last completed sequence id of execution-unit type `xu` (its
/// number 0 when none has run); `lnc` and `queue` do not divide the units
/// here.
///
/// # Safety
/// `seq` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrta_get_sequence(
    lnc: u32,
    xu: NrtaXuArg,
    queue: c_int,
    seq: *mut nrta_seq_t,
) -> NRT_STATUS {
    guarded("nrta_get_sequence", || {
        state::runtime()?;
        non_null("nrta_get_sequence", "seq", seq)?;
        let Some(n) = last_of(u64::from(xu) << 48) else {
            error!("nrta_get_sequence: {xu} is not an execution unit type");
            return Err(NRT_STATUS::NRT_INVALID);
        };
        // SAFETY: non-NULL and writable per this function's contract.
        unsafe { *seq = (u64::from(xu) << 48) | n };
        Ok(())
    })
}

/// Refused (`NRT_FAILURE`): there is no request to wait for.
#[no_mangle]
pub extern "C" fn nrta_get_completion_handle(seq: nrta_seq_t, fd: *mut c_int) -> NRT_STATUS {
    unsupported::call("nrta_get_completion_handle")
}

/// Creates an error tracker for logical core `lnc_idx`.
///
/// # Safety
/// `error_tracker` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrta_error_tracker_create(
    lnc_idx: u32,
    error_tracker: *mut *mut nrta_error_tracker_t,
) -> NRT_STATUS {
    guarded("nrta_error_tracker_create", || {
        state::runtime()?;
        non_null("nrta_error_tracker_create", "error_tracker", error_tracker)?;
        let ptr = nrta_error_tracker::hand_out(ErrorTracker {
            lnc: lnc_idx,
            errors: Vec::new(),
        });
        // SAFETY: non-NULL (checked) and writable per this function's contract.
        unsafe { *error_tracker = ptr };
        Ok(())
    })
}

/// Releases an error tracker; NULL or a bad handle is logged and ignored.
#[no_mangle]
pub extern "C" fn nrta_error_tracker_destroy(error_tracker: *mut nrta_error_tracker_t) {
    guarded_value("nrta_error_tracker_destroy", (), || {
        if nrta_error_tracker::take(error_tracker).is_none() {
            error!("nrta_error_tracker_destroy: {error_tracker:p} is not a live error tracker");
        }
    })
}

/// The tracker's errors: `*list` points into the tracker (valid until it is
/// destroyed) and `*error_count` is their number — always 0 here.
///
/// # Safety
/// `list` and `error_count` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrta_error_tracker_get_list(
    error_tracker: *mut nrta_error_tracker_t,
    list: *mut *const nrta_error_t,
    error_count: *mut usize,
) -> NRT_STATUS {
    const API: &str = "nrta_error_tracker_get_list";
    guarded(API, || {
        non_null(API, "list", list)?;
        non_null(API, "error_count", error_count)?;
        let (ptr, n) = nrta_error_tracker::with_arg(API, "error_tracker", error_tracker, |t| {
            tracing::debug!("{API}: core {}", t.lnc);
            (t.errors.as_ptr(), t.errors.len())
        })?;
        // SAFETY: both non-NULL (checked) and writable per this function's contract.
        unsafe {
            *list = ptr;
            *error_count = n;
        }
        Ok(())
    })
}
