//! Declarations of `nrt/nrt.h`: runtime lifetime, model load and unload,
//! core counts, tensors and tensor sets, plus the execution and collectives
//! entry points (present so every client links, but they report failure).
//!
//! cbindgen reads this file alone (see `cbindgen-nrt.toml`), so it holds
//! exactly what that header declares. Each function is a thin shim: the work
//! happens in the module named in its body.

use std::ffi::{c_char, c_int, c_void};

use crate::abi::nrt_status::NRT_STATUS;
use crate::boundary::{guarded, guarded_value};
use crate::{counts, model, state, tensor, tensor_set, unsupported};

/// Major version of the API this library implements.
pub const NRT_MAJOR_VERSION: u32 = 2;
/// Minor version of the API this library implements.
pub const NRT_MINOR_VERSION: u32 = 0;

/// A loaded model. Opaque to C: created by `nrt_load` / `nrt_load_collectives`,
/// owned by the caller, released only by `nrt_unload` (or by `nrt_close`,
/// which unloads and frees every model still loaded).
pub struct nrt_model_t {
    pub(crate) model: neffld::api::Model,
}

/// A tensor: host memory or device memory of the simulated device, or no
/// storage yet. Opaque to C: created by the `nrt_tensor_allocate*` calls,
/// owned by the caller, released by `nrt_tensor_free`.
pub struct nrt_tensor_t {
    pub(crate) tensor: crate::tensor::Tensor,
}

/// A collectives context. Declared for source compatibility; this library
/// never creates one.
pub struct nrt_cc_context_t {
    _never_built: (),
}

/// Where `nrt_tensor_allocate` puts a tensor's bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum nrt_tensor_placement_t {
    /// Device memory (HBM) of the logical core given as `vnc`.
    NRT_TENSOR_PLACEMENT_DEVICE = 0,
    /// Host memory.
    NRT_TENSOR_PLACEMENT_HOST = 1,
    /// Host memory as well in this library (no virtual device mapping exists).
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
pub enum nrt_op_type_t {
    NRT_OP_ADD = 0,
    NRT_OP_FMA = 1,
    NRT_OP_MAX = 2,
    NRT_OP_MIN = 3,
    NRT_OP_INVALID = 15,
}

/// Element types, with the device's own codes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum nrt_dtype_t {
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

/// Second name of `NRT_DTYPE_UNKNOWN` (the same value).
pub const NRT_DTYPE_INVALID: u32 = 0;

/// Collective operations of the collectives API.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum nrt_cc_op_type_t {
    NRT_CC_ALLGATHER = 0,
    NRT_CC_ALLREDUCE = 1,
    NRT_CC_REDUCESCATTER = 2,
}

/// What `nrt_get_instance_info` reports about the (simulated) instance.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nrt_instance_info_t {
    /// One of the `NRT_INSTANCE_*` family codes.
    pub family: u32,
    /// One of the `NRT_INSTANCE_SIZE_*` codes.
    pub size: u32,
    /// Instance family name, NUL-terminated (`"trn2"`).
    pub arch_name: [c_char; 16],
    /// Device revision, NUL-terminated (empty for the simulator).
    pub device_revision: [c_char; 8],
}

/// A set of named tensors (inputs or outputs of an execution). Opaque to C;
/// created by `nrt_allocate_tensor_set`, freed by `nrt_destroy_tensor_set`.
pub type nrt_tensor_set_t = c_void;

/// Byte offset inside a tensor, for batch operations.
pub type nrt_tensor_batch_offset_t = u64;
/// Byte count, for batch operations.
pub type nrt_tensor_batch_size_t = u64;

/// One read or write of a batch: `size` bytes at `offset` in the tensor,
/// from or into `buffer` (caller-owned).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nrt_tensor_batch_op_t {
    pub offset: nrt_tensor_batch_offset_t,
    pub size: nrt_tensor_batch_size_t,
    pub buffer: *mut c_void,
}

/// The operations of a batch that target one tensor. All pointers are
/// borrowed from the caller for the duration of the call.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nrt_tensor_batch_t {
    pub tensor: *const nrt_tensor_t,
    pub ops: *const nrt_tensor_batch_op_t,
    pub num_ops: u32,
}

/// Where a device tensor lives on the device.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nrt_tensor_device_allocation_info_t {
    /// Device address of the tensor's first byte.
    pub physical_address: u64,
    /// Bytes of the tensor.
    pub size: usize,
    /// HBM channel the bytes are on.
    pub hbm_index: c_int,
}

/// Device memory use of one logical core.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nrt_vnc_memory_stats_t {
    pub bytes_used: usize,
    pub bytes_limit: usize,
}

/// A communicator description of the host-driven collectives API.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nrt_cc_comm_t {
    pub replica_group: *mut u32,
    pub rank: u32,
    pub rank_n: u32,
    pub ctx_device_id: u32,
    pub ctx_device_count: u32,
    pub vnc: u32,
}

/// A list of tensors of the host-driven collectives API.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nrt_tensor_list_t {
    pub tensors: *mut *mut nrt_tensor_t,
    pub num_tensors: usize,
}

/// Fills `info` (up to `instance_info_len` bytes of it) with the simulated
/// instance: its family from `NEFFLD_ARCH`, size unknown.
///
/// # Safety
/// `info` must be NULL or point to `instance_info_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn nrt_get_instance_info(
    info: *mut nrt_instance_info_t,
    instance_info_len: usize,
) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_get_instance_info", || unsafe {
        counts::instance_info(info, instance_info_len)
    })
}

/// Starts the runtime: reads the configuration (`NEFFLD_DEVICE`,
/// `NEFFLD_ARCH`, `NEURON_RT_*`) and creates the simulated device.
///
/// Allowed from the never-initialised state and again after `nrt_close`
/// (a fresh device each time); while already initialised it fails with
/// `NRT_FAILURE` and changes nothing. A bad configuration value gives
/// `NRT_INVALID`. The framework and version strings are only logged.
///
/// # Safety
/// `fw_version` and `fal_version` must each be NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn nrt_init(
    framework: NrtFrameworkArg,
    fw_version: *const c_char,
    fal_version: *const c_char,
) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_init", || unsafe {
        state::init(framework, fw_version, fal_version)
    })
}

/// Stops the runtime: unloads every model still loaded and frees its
/// `nrt_model_t` (those pointers are dangling afterwards). Tensors stay valid
/// until `nrt_tensor_free`. Later calls return `NRT_CLOSED` until `nrt_init`.
#[no_mangle]
pub extern "C" fn nrt_close() {
    guarded_value("nrt_close", (), state::close)
}

/// Loads `size` bytes of NEFF on logical core `vnc` (-1: the first free one).
/// `vnc_count` is deprecated: pass -1 (1 and 0 are accepted too).
///
/// On success `*model` receives a new handle the caller owns until it passes
/// it to `nrt_unload`. On failure `*model` is left untouched.
///
/// # Safety
/// `neff_bytes` must be NULL or point to `size` readable bytes; `model` must
/// be NULL or point to writable storage for one pointer.
#[no_mangle]
pub unsafe extern "C" fn nrt_load(
    neff_bytes: *const c_void,
    size: usize,
    vnc: i32,
    vnc_count: i32,
    model: *mut *mut nrt_model_t,
) -> NRT_STATUS {
    let req = model::LoadRequest {
        api: "nrt_load",
        neff_bytes,
        size,
        vnc,
        vnc_count,
        collectives: None,
    };
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_load", || unsafe { model::load(req, model) })
}

/// As `nrt_load`, for a NEFF with collective operations; records
/// `ctx_device_id` as the model's global device id.
///
/// # Safety
/// As for `nrt_load`.
#[no_mangle]
pub unsafe extern "C" fn nrt_load_collectives(
    neff_bytes: *const c_void,
    size: usize,
    vnc: i32,
    vnc_count: i32,
    ctx_device_id: u32,
    ctx_device_count: u32,
    model: *mut *mut nrt_model_t,
) -> NRT_STATUS {
    let req = model::LoadRequest {
        api: "nrt_load_collectives",
        neff_bytes,
        size,
        vnc,
        vnc_count,
        collectives: Some((ctx_device_id, ctx_device_count)),
    };
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_load_collectives", || unsafe {
        model::load(req, model)
    })
}

/// Unloads a model and frees its handle. NULL gives `NRT_INVALID`; a pointer
/// that is not a live handle (already unloaded, freed by `nrt_close`, or
/// never returned by a load) gives `NRT_INVALID_HANDLE` and is not touched.
/// If the unload fails before the model is removed, the handle stays valid.
///
/// # Safety
/// `model` may be any pointer value; it is only dereferenced when it is a
/// live handle of this library.
#[no_mangle]
pub unsafe extern "C" fn nrt_unload(model: *mut nrt_model_t) -> NRT_STATUS {
    guarded("nrt_unload", || model::unload(model))
}

/// Writes 1 to `*vnc_count`: a model occupies one logical core. Deprecated.
///
/// # Safety
/// `vnc_count` must be NULL or writable; `model` as for `nrt_unload`.
#[no_mangle]
pub unsafe extern "C" fn nrt_get_model_nc_count(
    model: *const nrt_model_t,
    vnc_count: *mut u32,
) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_get_model_nc_count", || unsafe {
        model::vnc_count(model, vnc_count)
    })
}

/// Same as `nrt_get_model_nc_count`. Deprecated.
///
/// # Safety
/// As for `nrt_get_model_nc_count`.
#[no_mangle]
pub unsafe extern "C" fn nrt_get_model_vnc_count(
    model: *const nrt_model_t,
    vnc_count: *mut u32,
) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_get_model_vnc_count", || unsafe {
        model::vnc_count(model, vnc_count)
    })
}

/// Logical cores on the (simulated) device. Deprecated name; may be called
/// before `nrt_init` (the configuration is then read from the environment).
///
/// # Safety
/// `vnc_count` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_get_total_nc_count(vnc_count: *mut u32) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_get_total_nc_count", || unsafe {
        counts::total(vnc_count)
    })
}

/// Logical cores on the (simulated) device; may be called before `nrt_init`.
///
/// # Safety
/// `vnc_count` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_get_total_vnc_count(vnc_count: *mut u32) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_get_total_vnc_count", || unsafe {
        counts::total(vnc_count)
    })
}

/// Logical cores this process may use (`NEURON_RT_VISIBLE_CORES`).
/// Deprecated name; may be called before `nrt_init`.
///
/// # Safety
/// `vnc_count` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_get_visible_nc_count(vnc_count: *mut u32) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_get_visible_nc_count", || unsafe {
        counts::visible(vnc_count)
    })
}

/// Logical cores this process may use; may be called before `nrt_init`.
///
/// # Safety
/// `vnc_count` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_get_visible_vnc_count(vnc_count: *mut u32) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_get_visible_vnc_count", || unsafe {
        counts::visible(vnc_count)
    })
}

/// Creates an empty tensor set; `*result` receives it (owned by the caller
/// until `nrt_destroy_tensor_set`).
///
/// # Safety
/// `result` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_allocate_tensor_set(result: *mut *mut nrt_tensor_set_t) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_allocate_tensor_set", || unsafe {
        tensor_set::allocate(result)
    })
}

/// Frees a tensor set (not the tensors in it) and sets `*tensor_set` to NULL.
/// NULL, or a pointer that is not a live set, is ignored.
///
/// # Safety
/// `tensor_set` must be NULL or point to a readable and writable pointer.
#[no_mangle]
pub unsafe extern "C" fn nrt_destroy_tensor_set(tensor_set: *mut *mut nrt_tensor_set_t) {
    // SAFETY: forwarded from this function's contract.
    guarded_value("nrt_destroy_tensor_set", (), || unsafe {
        tensor_set::destroy(tensor_set)
    })
}

/// Adds `tensor` under `tensor_name`, replacing a tensor of that name. The set
/// only refers to the tensor: it must stay allocated while the set is used.
///
/// # Safety
/// `tensor_name` must be NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn nrt_add_tensor_to_tensor_set(
    tensor_set: *mut nrt_tensor_set_t,
    tensor_name: *const c_char,
    tensor: *mut nrt_tensor_t,
) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_add_tensor_to_tensor_set", || unsafe {
        tensor_set::add(tensor_set, tensor_name, tensor)
    })
}

/// Looks a tensor up by name; `*tensor` receives the pointer that was added
/// (still owned by whoever allocated it). An unknown name gives `NRT_INVALID`.
///
/// # Safety
/// `tensor_name` must be NULL or a NUL-terminated string; `tensor` must be
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_get_tensor_from_tensor_set(
    tensor_set: *mut nrt_tensor_set_t,
    tensor_name: *const c_char,
    tensor: *mut *mut nrt_tensor_t,
) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_get_tensor_from_tensor_set", || unsafe {
        tensor_set::get(tensor_set, tensor_name, tensor)
    })
}

/// Not supported (there is no execution engine): logs and returns `NRT_FAILURE`.
#[no_mangle]
pub extern "C" fn nrt_execute(
    model: *mut nrt_model_t,
    input_set: *const nrt_tensor_set_t,
    output_set: *mut nrt_tensor_set_t,
) -> NRT_STATUS {
    unsupported::call("nrt_execute")
}

/// Not supported (there is no execution engine): logs and returns `NRT_FAILURE`.
#[no_mangle]
pub extern "C" fn nrt_execute_repeat(
    model: *mut nrt_model_t,
    input_set: *const nrt_tensor_set_t,
    output_set: *mut nrt_tensor_set_t,
    repeat_count: c_int,
) -> NRT_STATUS {
    unsupported::call("nrt_execute_repeat")
}

/// Not supported (no collectives): logs and returns `NRT_FAILURE`.
#[no_mangle]
pub extern "C" fn nrt_build_global_comm(
    vnc: i32,
    g_device_id: u32,
    g_device_count: u32,
) -> NRT_STATUS {
    unsupported::call("nrt_build_global_comm")
}

/// Allocates a zero-filled tensor of `size` bytes: on the device HBM of
/// logical core `vnc` for the DEVICE placement, in host memory for HOST and
/// VIRTUAL (`vnc` is then ignored). `*tensor` receives a handle the caller
/// owns until `nrt_tensor_free`. Size 0, a bad placement or a bad `vnc` give
/// `NRT_INVALID`; device memory exhaustion gives `NRT_RESOURCE`.
///
/// # Safety
/// `name` must be NULL or a NUL-terminated string; `tensor` must be NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_tensor_allocate(
    tensor_placement: NrtPlacementArg,
    vnc: c_int,
    size: usize,
    name: *const c_char,
    tensor: *mut *mut nrt_tensor_t,
) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_tensor_allocate", || unsafe {
        tensor::allocate(tensor_placement, vnc, size, name, tensor)
    })
}

/// Frees a tensor (and its storage once no slice refers to it) and sets
/// `*tensor` to NULL. NULL, or a pointer that is not a live tensor, is ignored.
///
/// # Safety
/// `tensor` must be NULL or point to a readable and writable pointer.
#[no_mangle]
pub unsafe extern "C" fn nrt_tensor_free(tensor: *mut *mut nrt_tensor_t) {
    // SAFETY: forwarded from this function's contract.
    guarded_value("nrt_tensor_free", (), || unsafe { tensor::free(tensor) })
}

/// Copies `size` bytes at `offset` of the tensor into `buf`.
///
/// # Safety
/// `buf` must be NULL or point to `size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn nrt_tensor_read(
    tensor: *const nrt_tensor_t,
    buf: *mut c_void,
    offset: usize,
    size: usize,
) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_tensor_read", || unsafe {
        tensor::read(tensor, buf, offset as u64, size)
    })
}

/// Copies `size` bytes of `buf` into the tensor at `offset`.
///
/// # Safety
/// `buf` must be NULL or point to `size` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn nrt_tensor_write(
    tensor: *mut nrt_tensor_t,
    buf: *const c_void,
    offset: usize,
    size: usize,
) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_tensor_write", || unsafe {
        tensor::write(tensor, buf, offset as u64, size)
    })
}

/// Runs every read of every batch, in order; stops at the first failure.
/// `unsafe_mode` is accepted and ignored.
///
/// # Safety
/// `batches` must be NULL or point to `num_batches` readable batches whose
/// `ops` arrays and buffers are valid as described in `nrt_tensor_batch_op_t`.
#[no_mangle]
pub unsafe extern "C" fn nrt_tensor_read_batch(
    batches: *const nrt_tensor_batch_t,
    num_batches: u64,
    unsafe_mode: bool,
) -> NRT_STATUS {
    let _ = unsafe_mode;
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_tensor_read_batch", || unsafe {
        tensor::batch(batches, num_batches, tensor::Direction::Read)
    })
}

/// Runs every write of every batch, in order; stops at the first failure.
/// `unsafe_mode` is accepted and ignored.
///
/// # Safety
/// As for `nrt_tensor_read_batch`.
#[no_mangle]
pub unsafe extern "C" fn nrt_tensor_write_batch(
    batches: *const nrt_tensor_batch_t,
    num_batches: u64,
    unsafe_mode: bool,
) -> NRT_STATUS {
    let _ = unsafe_mode;
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_tensor_write_batch", || unsafe {
        tensor::batch(batches, num_batches, tensor::Direction::Write)
    })
}

/// Copies `size` bytes between two tensors (overlap allowed). Two device
/// tensors must be on the same NeuronCore, else `NRT_INVALID`.
#[no_mangle]
pub extern "C" fn nrt_tensor_copy(
    src: *const nrt_tensor_t,
    src_offset: usize,
    dst: *mut nrt_tensor_t,
    dst_offset: usize,
    size: usize,
) -> NRT_STATUS {
    guarded("nrt_tensor_copy", || {
        tensor::copy(src, src_offset as u64, dst, dst_offset as u64, size as u64)
    })
}

/// Bytes of the tensor; 0 for NULL, an unknown pointer or an empty tensor.
#[no_mangle]
pub extern "C" fn nrt_tensor_get_size(tensor: *const nrt_tensor_t) -> usize {
    guarded_value("nrt_tensor_get_size", 0, || tensor::size(tensor))
}

/// Sets `size` bytes at `offset` to the low byte of `value`.
#[no_mangle]
pub extern "C" fn nrt_tensor_memset(
    tensor: *mut nrt_tensor_t,
    offset: u64,
    value: c_int,
    size: usize,
) -> NRT_STATUS {
    guarded("nrt_tensor_memset", || {
        tensor::memset(tensor, offset, value as u8, size as u64)
    })
}

/// Creates a tensor with no storage (attach one with
/// `nrt_tensor_attach_buffer`); owned by the caller until `nrt_tensor_free`.
///
/// # Safety
/// `name` must be NULL or a NUL-terminated string; `tensor` must be NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_tensor_allocate_empty(
    name: *const c_char,
    tensor: *mut *mut nrt_tensor_t,
) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_tensor_allocate_empty", || unsafe {
        tensor::allocate_empty(name, tensor)
    })
}

/// Makes the caller's `buffer` the tensor's storage, releasing the storage
/// it had. The buffer stays owned by the caller and must outlive the tensor
/// and every slice of it; this library never frees it.
///
/// # Safety
/// `buffer` must be NULL or point to `size` readable and writable bytes that
/// stay valid for the tensor's lifetime.
#[no_mangle]
pub unsafe extern "C" fn nrt_tensor_attach_buffer(
    tensor: *mut nrt_tensor_t,
    buffer: *mut c_void,
    size: usize,
) -> NRT_STATUS {
    guarded("nrt_tensor_attach_buffer", || {
        tensor::attach_buffer(tensor, buffer, size)
    })
}

/// Creates a tensor viewing `size` bytes at `offset` of `tensor_source`
/// (no copy; the storage lives until every tensor using it is freed). The
/// new handle is owned by the caller until `nrt_tensor_free`.
///
/// # Safety
/// `name` must be NULL or a NUL-terminated string; `tensor_slice` must be
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_tensor_allocate_slice(
    tensor_source: *const nrt_tensor_t,
    offset: usize,
    size: usize,
    name: *const c_char,
    tensor_slice: *mut *mut nrt_tensor_t,
) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_tensor_allocate_slice", || unsafe {
        tensor::allocate_slice(
            tensor_source,
            offset as u64,
            size as u64,
            name,
            tensor_slice,
        )
    })
}

/// Host address of a host tensor's first byte (valid while the tensor's
/// storage lives); NULL for device tensors (the simulated device has no host
/// mapping), empty tensors and unknown pointers.
#[no_mangle]
pub extern "C" fn nrt_tensor_get_va(tensor: *const nrt_tensor_t) -> *mut c_void {
    guarded_value("nrt_tensor_get_va", std::ptr::null_mut(), || {
        tensor::va(tensor)
    })
}

/// Device address, size and HBM channel of a device tensor; `NRT_INVALID`
/// for host tensors.
///
/// # Safety
/// `alloc_info` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_tensor_get_device_allocation_info(
    tensor: *const nrt_tensor_t,
    alloc_info: *mut nrt_tensor_device_allocation_info_t,
) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_tensor_get_device_allocation_info", || unsafe {
        tensor::device_allocation_info(tensor, alloc_info)
    })
}

/// Not supported (nothing executes, so no output completes): logs and
/// returns `NRT_FAILURE`.
#[no_mangle]
pub extern "C" fn nrt_tensor_check_output_completion(
    output_tensor: *const nrt_tensor_t,
    timeout: i64,
    expected_completion_count: u64,
) -> NRT_STATUS {
    unsupported::call("nrt_tensor_check_output_completion")
}

/// Not supported (nothing executes): logs and returns `NRT_FAILURE`.
#[no_mangle]
pub extern "C" fn nrt_tensor_reset_output_completion(
    output_tensor: *mut nrt_tensor_t,
) -> NRT_STATUS {
    unsupported::call("nrt_tensor_reset_output_completion")
}

/// Not supported (no dma-buf on a simulated device): logs and returns
/// `NRT_FAILURE`.
#[no_mangle]
pub extern "C" fn nrt_get_dmabuf_fd(va: u64, size: u64, fd: *mut c_int) -> NRT_STATUS {
    unsupported::call("nrt_get_dmabuf_fd")
}

/// Not supported (no host device ids on a simulated device): logs and
/// returns `NRT_FAILURE`.
#[no_mangle]
pub extern "C" fn nrt_host_device_id_get(
    neuron_dev: c_int,
    host_device_id: *mut u32,
) -> NRT_STATUS {
    unsupported::call("nrt_host_device_id_get")
}

/// Not supported (no routing ids on a simulated device): logs and returns
/// `NRT_FAILURE`.
#[no_mangle]
pub extern "C" fn nrt_host_device_id_rid_map_get(
    count: *mut u32,
    host_did_to_rid_map: *mut u32,
) -> NRT_STATUS {
    unsupported::call("nrt_host_device_id_rid_map_get")
}

/// Not supported (simulated HBM is not mapped into the process): logs and
/// returns `NRT_FAILURE`.
#[no_mangle]
pub extern "C" fn nrt_get_hbm_mmap_va(
    device_id: c_int,
    hbm_idx: c_int,
    addr: *mut *mut c_void,
    size: *mut usize,
) -> NRT_STATUS {
    unsupported::call("nrt_get_hbm_mmap_va")
}

/// Device memory used on logical core `vnc` and its limit. Writes at most
/// `stats_size_in` bytes of `*stats` (older callers know fewer fields) and
/// the number written to `*stats_size_out` when that is not NULL.
///
/// # Safety
/// `stats` must be NULL or point to `stats_size_in` writable bytes;
/// `stats_size_out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_get_vnc_memory_stats(
    vnc: u32,
    stats: *mut nrt_vnc_memory_stats_t,
    stats_size_in: usize,
    stats_size_out: *mut usize,
) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_get_vnc_memory_stats", || unsafe {
        counts::memory_stats(vnc, stats, stats_size_in, stats_size_out)
    })
}

/// Not supported (no EFA devices): logs and returns `NRT_FAILURE`.
#[no_mangle]
pub extern "C" fn nrt_get_attached_efa_bdf(
    va: *const c_void,
    efa_bdf: *mut c_char,
    len: *mut usize,
) -> NRT_STATUS {
    unsupported::call("nrt_get_attached_efa_bdf")
}

/// Not supported (no collectives): logs and returns `NRT_FAILURE`.
#[no_mangle]
pub extern "C" fn nrt_cc_global_comm_init(
    vnc: u32,
    g_device_id: u32,
    g_device_count: u32,
) -> NRT_STATUS {
    unsupported::call("nrt_cc_global_comm_init")
}
