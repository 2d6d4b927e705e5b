//! C declarations of `nrt/nrt_experimental.h`: tensor information of a
//! loaded model, model information, microcode images and the async
//! callback type. Imports only its sibling declarations.

use std::ffi::{c_char, c_void};

use crate::abi::nrt::nrt_dtype_t;
use crate::abi::nrt_status::NRT_STATUS;

/// Whether the model reads or writes a tensor.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum nrt_tensor_usage {
    /// The model reads it.
    NRT_TENSOR_USAGE_INPUT = 0,
    /// The model writes it.
    NRT_TENSOR_USAGE_OUTPUT = 1,
}

/// The SDK's typedef of [`nrt_tensor_usage`]; C code names the type either
/// way (`nrt_tensor_usage_t`, `enum nrt_tensor_usage`).
pub type nrt_tensor_usage_t = nrt_tensor_usage;

/// Bytes of `nrt_tensor_info_t::name`, terminating NUL included.
pub const NRT_TENSOR_NAME_MAX: usize = 256;

/// One input or output of a loaded model (296 bytes on LP64).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nrt_tensor_info {
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

/// The SDK's typedef of [`nrt_tensor_info`]; C code names the type either
/// way (`nrt_tensor_info_t`, `struct nrt_tensor_info`).
pub type nrt_tensor_info_t = nrt_tensor_info;

/// What `nrt_get_model_tensor_info` returns: a count followed by that many
/// entries, inputs first (by name), then outputs (by name).
#[repr(C)]
pub struct nrt_tensor_info_array {
    pub tensor_count: u64,
    pub tensor_array: [nrt_tensor_info_t; 0],
}

/// The SDK's typedef of [`nrt_tensor_info_array`]; C code names the type
/// either way (`nrt_tensor_info_array_t`, `struct nrt_tensor_info_array`).
pub type nrt_tensor_info_array_t = nrt_tensor_info_array;

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
pub struct nrt_model_info {
    /// The logical core index the model is loaded on.
    pub vnc: u32,
}

/// The SDK's typedef of [`nrt_model_info`]; C code names the type either
/// way (`nrt_model_info_t`, `struct nrt_model_info`).
pub type nrt_model_info_t = nrt_model_info;
