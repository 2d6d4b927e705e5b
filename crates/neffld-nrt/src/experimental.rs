//! The remaining entry points of `nrt_experimental.h`: the legacy trace,
//! microcode, mapped-memory, async-callback and collectives calls. The
//! simulated device has none of these, so each logs one line and returns
//! `NRT_FAILURE` (see [`crate::unsupported`]).

#![allow(unused_variables)]

use std::ffi::{c_char, c_int, c_void};

use crate::abi::nrt_experimental::{nrt_ucode_info, NRT_ASYNC_EXEC_STATUS_CALLBACK};
use crate::abi::nrt_status::NRT_STATUS;
use crate::boundary::guarded_value;
use crate::unsupported;

/// Not supported (no tracing): logs and returns `NRT_FAILURE`.
#[no_mangle]
pub extern "C" fn nrt_trace_start(trace_mem: bool) -> NRT_STATUS {
    unsupported::call("nrt_trace_start")
}

/// Not supported (no tracing): logs and returns `NRT_FAILURE`.
#[no_mangle]
pub extern "C" fn nrt_trace_stop(filename: *const c_char) -> NRT_STATUS {
    unsupported::call("nrt_trace_stop")
}

/// Not supported (no collectives network plugin): logs, stores a non-zero
/// code in `*err` and a message in `err_msg` (both when not NULL), and
/// returns NULL.
///
/// # Safety
/// `err` must be NULL or writable; `err_msg` must be NULL or point to
/// `err_msg_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn nrt_get_libnccl_net(
    err: *mut c_int,
    err_msg: *mut c_char,
    err_msg_size: usize,
) -> *mut c_void {
    // SAFETY: forwarded from this function's contract.
    guarded_value("nrt_get_libnccl_net", std::ptr::null_mut(), || unsafe {
        libnccl_net(err, err_msg, err_msg_size)
    })
}

/// Not supported (no engines to load microcode into): logs and returns
/// `NRT_FAILURE`.
#[no_mangle]
pub extern "C" fn nrt_set_pool_eng_ucode(ucode_info: *const nrt_ucode_info) -> NRT_STATUS {
    unsupported::call("nrt_set_pool_eng_ucode")
}

/// Not supported (simulated device memory is never mapped into the
/// process): logs and returns `NRT_FAILURE`.
#[no_mangle]
pub extern "C" fn nrt_memcpy_to_device(
    dest: *mut c_void,
    src: *const c_void,
    size: usize,
) -> NRT_STATUS {
    unsupported::call("nrt_memcpy_to_device")
}

/// Not supported (no async execution): logs and returns `NRT_FAILURE`.
#[no_mangle]
pub extern "C" fn nrt_register_async_exec_callback(
    callback: NRT_ASYNC_EXEC_STATUS_CALLBACK,
    params: *mut c_void,
) -> NRT_STATUS {
    unsupported::call("nrt_register_async_exec_callback")
}

/// Not supported (no collectives): logs and returns `NRT_FAILURE`.
#[no_mangle]
pub extern "C" fn nrt_barrier(vnc: i32, g_device_id: u32, g_device_count: u32) -> NRT_STATUS {
    unsupported::call("nrt_barrier")
}

/// Not supported (no collectives): logs and returns `NRT_FAILURE`.
#[no_mangle]
pub extern "C" fn nrt_all_gather(
    vnc: i32,
    g_device_id: u32,
    g_device_count: u32,
    rank_input_size: u32,
    input: *mut c_void,
    output: *mut c_void,
) -> NRT_STATUS {
    unsupported::call("nrt_all_gather")
}

/// Not supported (no async execution): logs and returns `NRT_FAILURE`.
#[no_mangle]
pub extern "C" fn nrt_async_drain_queued_execs(vnc: i32) -> NRT_STATUS {
    unsupported::call("nrt_async_drain_queued_execs")
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
    let status = unsupported::call("nrt_get_libnccl_net");
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
