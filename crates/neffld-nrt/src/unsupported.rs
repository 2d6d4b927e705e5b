//! Entry points this library declares but cannot perform: execution,
//! profiling/tracing, async queues, collectives and host mappings of device
//! memory. They exist so that any client of the public headers links; each
//! logs one error line and returns `NRT_FAILURE`. The newest public
//! `nrt_status.h` defines no "unsupported" code, and `NRT_FAILURE` is its
//! code for a failure with no more precise meaning.

use std::ffi::{c_char, c_int, c_void};

use tracing::error;

use crate::abi::nrt_status::NRT_STATUS;

/// Logs that `api` is not supported and returns `NRT_FAILURE`.
pub(crate) fn call(api: &'static str) -> NRT_STATUS {
    crate::log::ensure();
    error!(
        "{api}: not supported by neffld (it loads models on a simulated device; nothing executes)"
    );
    NRT_STATUS::NRT_FAILURE
}

/// `nrt_get_libnccl_net`: reports the failure through the out-parameters.
///
/// # Safety
/// `err` must be NULL or writable; `err_msg` must be NULL or point to
/// `err_msg_size` writable bytes.
pub(crate) unsafe fn libnccl_net(
    err: *mut c_int,
    err_msg: *mut c_char,
    err_msg_size: usize,
) -> *mut c_void {
    let status = call("nrt_get_libnccl_net");
    if !err.is_null() {
        // SAFETY: non-NULL and writable per this function's contract.
        unsafe { *err = status as c_int };
    }
    if !err_msg.is_null() && err_msg_size > 0 {
        let msg = b"not supported by neffld";
        let n = msg.len().min(err_msg_size - 1);
        // SAFETY: `err_msg` has `err_msg_size` writable bytes and n + 1 <= err_msg_size.
        unsafe {
            std::ptr::copy_nonoverlapping(msg.as_ptr(), err_msg.cast::<u8>(), n);
            *err_msg.add(n) = 0;
        }
    }
    std::ptr::null_mut()
}
