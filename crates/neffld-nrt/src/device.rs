//! The device and collectives domain of `nrt.h`: host-driven collectives,
//! device ids, dma-buf and HBM mappings, EFA devices. The simulated device
//! has none of these, so every call logs one line and returns
//! `NRT_FAILURE` (see [`crate::unsupported`]); the types exist so that a
//! client of the header compiles and links.

#![allow(unused_variables)]

use std::ffi::{c_char, c_int, c_void};

use crate::abi::nrt_status::NRT_STATUS;
use crate::tensor::nrt_tensor_t;
use crate::unsupported;

/// A collectives context. Declared for source compatibility; this library
/// never creates one.
pub struct nrt_cc_context {
    _private: [u8; 0],
}

/// The name C callers use for [`nrt_cc_context`].
pub type nrt_cc_context_t = nrt_cc_context;

/// A communicator description of the host-driven collectives API.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nrt_cc_comm {
    pub replica_group: *mut u32,
    pub rank: u32,
    pub rank_n: u32,
    pub ctx_device_id: u32,
    pub ctx_device_count: u32,
    pub vnc: u32,
}

/// The SDK's typedef of [`nrt_cc_comm`]; C code names the type either way
/// (`nrt_cc_comm_t`, `struct nrt_cc_comm`).
pub type nrt_cc_comm_t = nrt_cc_comm;

/// A list of tensors of the host-driven collectives API.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nrt_tensor_list {
    pub tensors: *mut *mut nrt_tensor_t,
    pub num_tensors: usize,
}

/// The SDK's typedef of [`nrt_tensor_list`]; C code names the type either
/// way (`nrt_tensor_list_t`, `struct nrt_tensor_list`).
pub type nrt_tensor_list_t = nrt_tensor_list;

/// Not supported (no collectives): logs and returns `NRT_FAILURE`.
#[no_mangle]
pub extern "C" fn nrt_build_global_comm(
    vnc: i32,
    g_device_id: u32,
    g_device_count: u32,
) -> NRT_STATUS {
    unsupported::call("nrt_build_global_comm")
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
