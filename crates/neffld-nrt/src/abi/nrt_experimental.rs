//! Declarations of `nrt/nrt_experimental.h`: tensor information of a loaded
//! model, model information, and the tracing, async and collectives entry
//! points (present so every client links, but they report failure).
//!
//! cbindgen reads this file alone (see `cbindgen-experimental.toml`).

use std::ffi::{c_char, c_int, c_void};

use crate::abi::nrt::{nrt_dtype_t, nrt_model_t};
use crate::abi::nrt_status::NRT_STATUS;
use crate::boundary::{guarded, guarded_value};
use crate::{info, model, unsupported};

/// Whether the model reads or writes a tensor.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum nrt_tensor_usage_t {
    /// The model reads it.
    NRT_TENSOR_USAGE_INPUT = 0,
    /// The model writes it.
    NRT_TENSOR_USAGE_OUTPUT = 1,
}

/// Bytes of `nrt_tensor_info_t::name`, terminating NUL included.
pub const NRT_TENSOR_NAME_MAX: usize = 256;

/// One input or output of a loaded model (296 bytes on LP64).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nrt_tensor_info_t {
    /// NUL-terminated name (truncated to 255 bytes if longer).
    pub name: [c_char; NRT_TENSOR_NAME_MAX],
    pub usage: nrt_tensor_usage_t,
    /// Bytes.
    pub size: usize,
    pub dtype: nrt_dtype_t,
    /// `ndim` dimensions, outermost first; owned by the enclosing array
    /// (NULL when `ndim` is 0).
    pub shape: *mut u32,
    pub ndim: u32,
}

/// What `nrt_get_model_tensor_info` returns: a count followed by that many
/// entries, inputs first (by name), then outputs (by name).
#[repr(C)]
pub struct nrt_tensor_info_array_t {
    pub tensor_count: u64,
    pub tensor_array: [nrt_tensor_info_t; 0],
}

/// Callback type of the async execution API (never called by this library).
pub type NRT_ASYNC_EXEC_STATUS_CALLBACK = Option<
    unsafe extern "C" fn(
        params: *mut c_void,
        model_id: u32,
        vnc: u32,
        job_id: u64,
        status: NRT_STATUS,
    ),
>;

/// A microcode image (caller-owned bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nrt_ucode_img {
    pub bin: *mut u8,
    pub size: usize,
}

/// The instruction and data microcode images of an engine.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nrt_ucode_info {
    pub iram: nrt_ucode_img,
    pub dram: nrt_ucode_img,
}

/// Information about a loaded model. New fields are only ever appended;
/// callers pass the size they know.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nrt_model_info_t {
    /// The logical core index the model is loaded on.
    pub vnc: u32,
}

/// Describes every input and output of a loaded model. On success
/// `*tensor_info` receives an array the caller owns and must release with
/// `nrt_free_model_tensor_info` (not with `free`). NULL arguments give
/// `NRT_INVALID`; a pointer that is not a live model `NRT_INVALID_HANDLE`.
///
/// # Safety
/// `tensor_info` must be NULL or writable; `model` may be any pointer value
/// (it is only dereferenced when it is a live handle).
#[no_mangle]
pub unsafe extern "C" fn nrt_get_model_tensor_info(
    model: *mut nrt_model_t,
    tensor_info: *mut *mut nrt_tensor_info_array_t,
) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_get_model_tensor_info", || unsafe {
        info::get(model, tensor_info)
    })
}

/// Writes 1 to `*instance_count`: nothing executes here, so one caller at a
/// time is as good as any. Deprecated.
///
/// # Safety
/// `instance_count` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_get_model_instance_count(
    model: *mut nrt_model_t,
    instance_count: *mut u32,
) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_get_model_instance_count", || unsafe {
        model::vnc_count(model, instance_count)
    })
}

/// Releases an array returned by `nrt_get_model_tensor_info`, shapes
/// included. NULL gives `NRT_INVALID`; an array this library did not return
/// (or already released) is not touched and gives `NRT_INVALID`.
///
/// # Safety
/// `tensor_info` may be any pointer value; it is only dereferenced when it is
/// a live array of this library.
#[no_mangle]
pub unsafe extern "C" fn nrt_free_model_tensor_info(
    tensor_info: *mut nrt_tensor_info_array_t,
) -> NRT_STATUS {
    guarded("nrt_free_model_tensor_info", || info::free(tensor_info))
}

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
        unsupported::libnccl_net(err, err_msg, err_msg_size)
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

/// Fills at most `info_size_in` bytes of `*info` and stores the number of
/// bytes written in `*info_size_out` (when not NULL).
///
/// # Safety
/// `info` must be NULL or point to `info_size_in` writable bytes;
/// `info_size_out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_get_model_info(
    model: *const nrt_model_t,
    info: *mut nrt_model_info_t,
    info_size_in: usize,
    info_size_out: *mut usize,
) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_get_model_info", || unsafe {
        model::info(model, info, info_size_in, info_size_out)
    })
}
