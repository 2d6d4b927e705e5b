//! The asynchronous execution domain (`nrt_async.h`).
//!
//! Error trackers are real (they hold the errors of requests, and since no
//! request is ever queued here their lists stay empty), and so are the
//! completion queries: no sequence id was ever issued, so
//! `nrta_is_completed` answers `NRT_INVALID` for every id (the status the
//! header gives for an id that is not valid) and `nrta_get_sequence` reports
//! 0, nothing completed. Queuing a request (tensor read, write, copy,
//! execution, collectives) is refused with `NRT_FAILURE` and one log line.

#![allow(unused_variables)]

use std::ffi::{c_int, c_void};

use tracing::error;

use crate::abi::nrt::{nrt_cc_op_type_t, nrt_dtype_t, nrt_op_type_t};
use crate::abi::nrt_async::{nrta_error_t, nrta_seq_t, nrta_xu_t};
use crate::abi::nrt_status::NRT_STATUS;
use crate::boundary::{guarded, guarded_value, non_null};
use crate::device::{nrt_cc_comm_t, nrt_cc_context_t, nrt_tensor_list_t};
use crate::handles::{Handle, Kind};
use crate::model::nrt_model_t;
use crate::tensor::nrt_tensor_t;
use crate::tensor_set::nrt_tensor_set_t;
use crate::{state, unsupported};

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

/// Refused (`NRT_FAILURE`): nothing is queued on the simulated device; use
/// `nrt_tensor_write`.
#[no_mangle]
pub extern "C" fn nrta_tensor_write(
    tensor: *mut nrt_tensor_t,
    buf: *const c_void,
    offset: u64,
    size: u64,
    queue: c_int,
    err: *mut nrta_error_tracker_t,
    req_sequence: *mut nrta_seq_t,
) -> NRT_STATUS {
    unsupported::call("nrta_tensor_write")
}

/// Refused (`NRT_FAILURE`): nothing is queued; use `nrt_tensor_read`.
#[no_mangle]
pub extern "C" fn nrta_tensor_read(
    buf: *mut c_void,
    tensor: *mut nrt_tensor_t,
    offset: u64,
    size: u64,
    queue: c_int,
    err: *mut nrta_error_tracker_t,
    req_sequence: *mut nrta_seq_t,
) -> NRT_STATUS {
    unsupported::call("nrta_tensor_read")
}

/// Refused (`NRT_FAILURE`): nothing is queued; use `nrt_tensor_copy`.
#[no_mangle]
pub extern "C" fn nrta_tensor_copy(
    src: *mut nrt_tensor_t,
    src_offset: u64,
    dst: *mut nrt_tensor_t,
    dst_offset: u64,
    size: u64,
    queue: c_int,
    err: *mut nrta_error_tracker_t,
    req_sequence: *mut nrta_seq_t,
) -> NRT_STATUS {
    unsupported::call("nrta_tensor_copy")
}

/// Refused (`NRT_FAILURE`): nothing executes.
#[no_mangle]
pub extern "C" fn nrta_execute_schedule(
    model: *mut nrt_model_t,
    input: *const nrt_tensor_set_t,
    output: *mut nrt_tensor_set_t,
    queue: c_int,
    err: *mut nrta_error_tracker_t,
    req_sequence: *mut nrta_seq_t,
) -> NRT_STATUS {
    unsupported::call("nrta_execute_schedule")
}

/// Refused (`NRT_FAILURE`): no collectives.
#[no_mangle]
pub extern "C" fn nrta_cc_prepare(
    comm: *mut nrt_cc_comm_t,
    input: *mut nrt_tensor_list_t,
    output: *mut nrt_tensor_list_t,
    dtype: nrt_dtype_t,
    op: nrt_op_type_t,
    cc_op: nrt_cc_op_type_t,
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

/// No request was ever queued, so no id is valid: `NRT_INVALID` (and
/// `*is_completed` is left untouched).
#[no_mangle]
pub extern "C" fn nrta_is_completed(seq: nrta_seq_t, is_completed: *mut bool) -> NRT_STATUS {
    guarded("nrta_is_completed", || {
        non_null("nrta_is_completed", "is_completed", is_completed)?;
        error!("nrta_is_completed: sequence {seq:#x} was never issued (nothing is queued on the simulated device)");
        Err(NRT_STATUS::NRT_INVALID)
    })
}

/// Writes 0 to `*seq`: no request has completed on any unit.
///
/// # Safety
/// `seq` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrta_get_sequence(
    lnc: u32,
    xu: nrta_xu_t,
    queue: c_int,
    seq: *mut nrta_seq_t,
) -> NRT_STATUS {
    guarded("nrta_get_sequence", || {
        state::runtime()?;
        non_null("nrta_get_sequence", "seq", seq)?;
        // SAFETY: non-NULL and writable per this function's contract.
        unsafe { *seq = 0 };
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
