//! C declarations of `nrt/nrt.h`: the data types a client reads and writes
//! (placements, dtypes, instance and memory information, batch operations).
//! The opaque handle types live with their domain (`model`, `tensor`,
//! `tensor_set`, `device`); this module imports nothing from the crate.

use std::ffi::{c_char, c_int, c_void};

/// Major version of the API this library implements.
pub const NRT_MAJOR_VERSION: u32 = 2;
/// Minor version of the API this library implements.
pub const NRT_MINOR_VERSION: u32 = 0;

/// Where `nrt_tensor_allocate` puts a tensor's bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum nrt_tensor_placement_t {
    /// Device memory (HBM) of the logical core given as `vnc`.
    NRT_TENSOR_PLACEMENT_DEVICE = 0,
    /// Host memory.
    NRT_TENSOR_PLACEMENT_HOST = 1,
    /// Up to runtime line 2.31, host memory in this library (no virtual
    /// device mapping exists); from 2.32, which removed it, refused by
    /// `nrt_tensor_allocate` with `NRT_INVALID` (the line is
    /// `NEFFLD_RUNTIME`'s, the newest line by default).
    NRT_TENSOR_PLACEMENT_VIRTUAL = 2,
}

/// A placement as a C caller may pass it (any integer). The header spells
/// this type `nrt_tensor_placement_t`.
pub type NrtPlacementArg = u32;

/// The framework a client says it runs under (informational only here).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum nrt_framework_type_t {
    NRT_FRAMEWORK_TYPE_INVALID = 0,
    NRT_FRAMEWORK_TYPE_NO_FW = 1,
    NRT_FRAMEWORK_TYPE_TENSORFLOW = 2,
    NRT_FRAMEWORK_TYPE_PYTORCH = 3,
    NRT_FRAMEWORK_TYPE_MXNET = 4,
    NRT_FRAMEWORK_TYPE_PRECHECK = 5,
}

/// A framework value as a C caller may pass it (any integer). The header
/// spells this type `nrt_framework_type_t`.
pub type NrtFrameworkArg = u32;

/// Instance family codes reported in `nrt_instance_info_t::family`.
pub const NRT_INSTANCE_UNKNOWN: u32 = 0;
pub const NRT_INSTANCE_INF1: u32 = 1;
pub const NRT_INSTANCE_TRN1: u32 = 2;
pub const NRT_INSTANCE_TRN1N: u32 = 3;
pub const NRT_INSTANCE_INF2: u32 = 4;
pub const NRT_INSTANCE_TRN2: u32 = 5;
pub const NRT_INSTANCE_TRN2N: u32 = 6;
pub const NRT_INSTANCE_INF2E: u32 = 7;
pub const NRT_INSTANCE_TRN2P: u32 = 8;
pub const NRT_INSTANCE_TRN2U: u32 = 9;
pub const NRT_INSTANCE_TRN2E: u32 = 10;
pub const NRT_INSTANCE_TRN2EU: u32 = 11;
pub const NRT_INSTANCE_TRN2AC: u32 = 12;
pub const NRT_INSTANCE_TRN2UAC: u32 = 13;
pub const NRT_INSTANCE_TRN3: u32 = 14;
pub const NRT_INSTANCE_TRN3PDS98: u32 = 15;

/// Instance size codes reported in `nrt_instance_info_t::size`.
pub const NRT_INSTANCE_SIZE_1XL: u32 = 0;
pub const NRT_INSTANCE_SIZE_2XL: u32 = 1;
pub const NRT_INSTANCE_SIZE_4XL: u32 = 2;
pub const NRT_INSTANCE_SIZE_6XL: u32 = 3;
pub const NRT_INSTANCE_SIZE_8XL: u32 = 4;
pub const NRT_INSTANCE_SIZE_24XL: u32 = 5;
pub const NRT_INSTANCE_SIZE_32XL: u32 = 6;
pub const NRT_INSTANCE_SIZE_48XL: u32 = 7;
pub const NRT_INSTANCE_SIZE_3XL: u32 = 8;
pub const NRT_INSTANCE_SIZE_UNKNOWN: u32 = 9;
pub const NRT_INSTANCE_SIZE_NUM: u32 = 9;

/// Reduction operators of the collectives API.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum nrt_op_type {
    NRT_OP_ADD = 0,
    NRT_OP_FMA = 1,
    NRT_OP_MAX = 2,
    NRT_OP_MIN = 3,
    NRT_OP_INVALID = 15,
}

/// The SDK's typedef of [`nrt_op_type`]; C code names the type either way
/// (`nrt_op_type_t`, `enum nrt_op_type`).
pub type nrt_op_type_t = nrt_op_type;

/// A dtype, reduction or collective operation as a C caller may pass it (any
/// integer); headers spell these `nrt_dtype_t`, `nrt_op_type_t` and
/// `nrt_cc_op_type_t` where a function takes them.
pub type NrtDtypeArg = u32;
/// See [`NrtDtypeArg`].
pub type NrtOpArg = u32;
/// See [`NrtDtypeArg`].
pub type NrtCcOpArg = u32;

/// Element types, with the device's own codes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum nrt_dtype {
    NRT_DTYPE_UNKNOWN = 0,
    NRT_DTYPE_UINT64 = 1,
    NRT_DTYPE_INT8 = 2,
    NRT_DTYPE_UINT8 = 3,
    NRT_DTYPE_INT16 = 4,
    NRT_DTYPE_UINT16 = 5,
    NRT_DTYPE_BFLOAT16 = 6,
    NRT_DTYPE_FLOAT16 = 7,
    NRT_DTYPE_INT32 = 8,
    NRT_DTYPE_UINT32 = 9,
    NRT_DTYPE_FLOAT32 = 10,
    NRT_DTYPE_FP32R = 11,
    NRT_DTYPE_INT64 = 12,
    NRT_DTYPE_FP8_E3 = 13,
    NRT_DTYPE_FP8_E4 = 14,
    NRT_DTYPE_FP8_E5 = 15,
}

/// The SDK's typedef of [`nrt_dtype`]; C code names the type either way
/// (`nrt_dtype_t`, `enum nrt_dtype`).
pub type nrt_dtype_t = nrt_dtype;

/// Second name of `NRT_DTYPE_UNKNOWN` (the same value).
pub const NRT_DTYPE_INVALID: u32 = 0;

/// Collective operations of the collectives API.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum nrt_cc_op_type {
    NRT_CC_ALLGATHER = 0,
    NRT_CC_ALLREDUCE = 1,
    NRT_CC_REDUCESCATTER = 2,
}

/// The SDK's typedef of [`nrt_cc_op_type`]; C code names the type either
/// way (`nrt_cc_op_type_t`, `enum nrt_cc_op_type`).
pub type nrt_cc_op_type_t = nrt_cc_op_type;

/// What `nrt_get_instance_info` reports about the (simulated) instance.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nrt_instance_info {
    /// One of the `NRT_INSTANCE_*` family codes.
    pub family: u32,
    /// One of the `NRT_INSTANCE_SIZE_*` codes.
    pub size: u32,
    /// Instance family name, NUL-terminated (`"trn2"`).
    pub arch_name: [c_char; 16],
    /// Device revision, NUL-terminated (empty for the simulator).
    pub device_revision: [c_char; 8],
}

/// The SDK's typedef of [`nrt_instance_info`]; C code names the type either
/// way (`nrt_instance_info_t`, `struct nrt_instance_info`).
pub type nrt_instance_info_t = nrt_instance_info;

/// Byte offset inside a tensor, for batch operations.
pub type nrt_tensor_batch_offset_t = u64;
/// Byte count, for batch operations.
pub type nrt_tensor_batch_size_t = u64;

/// One read or write of a batch: `size` bytes at `offset` in the tensor,
/// from or into `buffer` (caller-owned).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nrt_tensor_batch_op {
    pub offset: nrt_tensor_batch_offset_t,
    pub size: nrt_tensor_batch_size_t,
    pub buffer: *mut c_void,
}

/// The SDK's typedef of [`nrt_tensor_batch_op`]; C code names the type
/// either way (`nrt_tensor_batch_op_t`, `struct nrt_tensor_batch_op`).
pub type nrt_tensor_batch_op_t = nrt_tensor_batch_op;

/// Where a device tensor lives on the device.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nrt_tensor_device_allocation_info {
    /// Device address of the tensor's first byte.
    pub physical_address: u64,
    /// Bytes of the tensor.
    pub size: usize,
    /// HBM channel the bytes are on.
    pub hbm_index: c_int,
}

/// The SDK's typedef of [`nrt_tensor_device_allocation_info`]; C code names
/// the type either way (`nrt_tensor_device_allocation_info_t`, `struct
/// nrt_tensor_device_allocation_info`).
pub type nrt_tensor_device_allocation_info_t = nrt_tensor_device_allocation_info;

/// Device memory use of one logical core.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nrt_vnc_memory_stats {
    pub bytes_used: usize,
    pub bytes_limit: usize,
}

/// The SDK's typedef of [`nrt_vnc_memory_stats`]; C code names the type
/// either way (`nrt_vnc_memory_stats_t`, `struct nrt_vnc_memory_stats`).
pub type nrt_vnc_memory_stats_t = nrt_vnc_memory_stats;
