//! C declarations of `nrt/nec.h` that its functions need: the collectives
//! limits, the operator, data and pod types, host memory records, the
//! network address records and the version record.
//!
//! The reference header also lays out the collectives library's internal
//! communicator, channel and algorithm structures; no function of the
//! library takes them by value or reads their fields, and neffld has no
//! collectives, so they are not declared here (docs/decisions.md).

use std::ffi::{c_char, c_int, c_void};

pub const NEC_MAX_CHANNELS: u32 = 32;
pub const NEC_MAX_NR_CHANNEL_CHUNKS: u32 = 32;
pub const NEC_MAX_FOLD_N: u32 = 8;
pub const NEC_MAX_COMM_N: u32 = 12;
pub const NEC_MAX_NET_BUFFERS: u32 = 2 * NEC_MAX_COMM_N;
pub const NEC_CACHE_LINE_SIZE: u32 = 128;
pub const NEC_NET_CONNECTOR_RANK: i32 = -1;
pub const NEC_NET_MLA_DEV: i32 = -1;
pub const NEC_POD_MLA_DEV: i32 = -2;
pub const NEC_UNKNOWN_RANK: i32 = -3;
pub const NEC_UNKNOWN_MLA_DEV: i32 = -3;
pub const NEC_HIER_CC_PIPELINE_STAGE_N: u32 = 3;
pub const NCCL_NET_NEURON_MAX_REQUESTS: u32 = 128;
pub const NEC_MAX_STREAM_N: u32 = 4;
pub const NEC_KANGARING_MAX_NUM_RANKS: u32 = 128;

/// The kinds of network communicator of the proxy.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ofi_comm_type {
    NET_SEND_COMM = 0,
    NET_RECV_COMM = 1,
    NET_RECV_LISTEN_COMM = 2,
    LOCAL_RECV_COMM = 3,
    LOCAL_SEND_COMM = 4,
}

/// The SDK's typedef of [`ofi_comm_type`]; C code names the type either way
/// (`ofi_comm_type_t`, `enum ofi_comm_type`).
pub type ofi_comm_type_t = ofi_comm_type;

/// Reduction operators (the same codes as `nrt_op_type_t`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum nec_op_type {
    NEC_OP_ADD = 0,
    NEC_OP_FMA = 1,
    NEC_OP_MAX = 2,
    NEC_OP_MIN = 3,
    NEC_OP_INVALID = 15,
}

/// The SDK's typedef of [`nec_op_type`]; C code names the type either way
/// (`nec_op_type_t`, `enum nec_op_type`).
pub type nec_op_type_t = nec_op_type;

/// Element types (the device's codes, as `nrt_dtype_t`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum nec_data_type {
    NEC_DTYPE_INVALID = 0,
    NEC_DTYPE_UINT64 = 1,
    NEC_DTYPE_INT8 = 2,
    NEC_DTYPE_UINT8 = 3,
    NEC_DTYPE_INT16 = 4,
    NEC_DTYPE_UINT16 = 5,
    NEC_DTYPE_BFLOAT16 = 6,
    NEC_DTYPE_FP16 = 7,
    NEC_DTYPE_INT32 = 8,
    NEC_DTYPE_UINT32 = 9,
    NEC_DTYPE_FP32 = 10,
    NEC_DTYPE_INT64 = 12,
    NEC_DTYPE_FP8_E3 = 13,
    NEC_DTYPE_FP8_E4 = 14,
    NEC_DTYPE_FP8_E5 = 15,
}

/// The SDK's typedef of [`nec_data_type`]; C code names the type either way
/// (`nec_data_type_t`, `enum nec_data_type`).
pub type nec_data_type_t = nec_data_type;

/// How the devices of a pod are connected.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum nec_pod_type {
    NEC_POD_TYPE_NONE = 0,
    NEC_POD_TYPE_P2P = 1,
    NEC_POD_TYPE_SWITCH = 2,
    NEC_POD_TYPE_INVALID = 3,
}

/// The SDK's typedef of [`nec_pod_type`]; C code names the type either way
/// (`nec_pod_type_t`, `enum nec_pod_type`).
pub type nec_pod_type_t = nec_pod_type;

/// A pod type as a C caller may pass it (any integer). The header spells
/// this type `nec_pod_type_t`.
pub type NecPodTypeArg = u32;

/// Collective patterns.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum enc_pattern {
    ENC_PATTERN_RING = 0,
    ENC_PATTERN_MESH = 1,
    ENC_PATTERN_INVALID = 2,
}

/// The SDK's typedef of [`enc_pattern`]; C code names the type either way
/// (`enc_pattern_t`, `enum enc_pattern`).
pub type enc_pattern_t = enc_pattern;

/// Network connectivity of a collective.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum enc_net_connectivity {
    ENC_CONNECTIVITY_MESH = 0,
    ENC_CONNECTIVITY_RDH = 1,
    ENC_CONNECTIVITY_DEFAULT = 2,
}

/// The SDK's typedef of [`enc_net_connectivity`]; C code names the type
/// either way (`enc_net_connectivity_t`, `enum enc_net_connectivity`).
pub type enc_net_connectivity_t = enc_net_connectivity;

/// Device topology modes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum enc_topology_mode {
    ENC_TOPO_NULL = 0,
    ENC_TOPO_4_DEVS_IN_ROW = 1,
    ENC_TOPO_4_DEVS_IN_COLUMN = 2,
}

/// The SDK's typedef of [`enc_topology_mode`]; C code names the type either
/// way (`enc_topology_mode_t`, `enum enc_topology_mode`).
pub type enc_topology_mode_t = enc_topology_mode;

/// Ring kinds.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum metaring_type {
    RING = 0,
    KANGARING = 1,
    SINGLE_CYCLE_RING = 2,
    RDH = 3,
    INVALID_METARING = 4,
}

/// The SDK's typedef of [`metaring_type`]; C code names the type either way
/// (`metaring_type_t`, `enum metaring_type`).
pub type metaring_type_t = metaring_type;

/// Mesh algorithm kinds.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum enc_alg_mesh_type {
    ENC_ALG_FULL_MESH = 0,
    ENC_ALG_GROUPED_MESH = 1,
    ENC_ALG_MESH_TRN2 = 2,
    ENC_ALG_MESH_INVALID = 3,
}

/// The SDK's typedef of [`enc_alg_mesh_type`]; C code names the type either
/// way (`enc_alg_mesh_type_t`, `enum enc_alg_mesh_type`).
pub type enc_alg_mesh_type_t = enc_alg_mesh_type;

/// What a network address entry is for.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum net_addr_mark {
    NET_TRANSFER = 0,
    NET_OP_COMPLETE = 1,
    EXEC_COMPLETE = 2,
}

/// The SDK's typedef of [`net_addr_mark`]; C code names the type either way
/// (`net_addr_mark_t`, `enum net_addr_mark`).
pub type net_addr_mark_t = net_addr_mark;

/// A device (DMA) address.
pub type dma_addr_t = u64;

/// The collectives library's communicator (never built here).
pub struct enc_comm {
    _private: [u8; 0],
}

/// The collectives library's channel (never built here).
pub struct enc_channel {
    _private: [u8; 0],
}

/// A communicator handle.
pub type nec_comm_t = *mut enc_comm;
/// A channel handle.
pub type nec_channel_t = *mut enc_channel;

/// Host memory mapped for the device.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct enc_host_mem {
    pub mem_handle: *mut c_void,
    pub va: *mut c_void,
    pub pa: dma_addr_t,
    pub size: usize,
}

/// The SDK's typedef of [`enc_host_mem`]; C code names the type either way
/// (`enc_host_mem_t`, `struct enc_host_mem`).
pub type enc_host_mem_t = enc_host_mem;

/// Host memory shared by reference count.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct enc_host_mem_shared {
    pub mem: enc_host_mem_t,
    pub refcnt: c_int,
}

/// The SDK's typedef of [`enc_host_mem_shared`]; C code names the type
/// either way (`enc_host_mem_shared_t`, `struct enc_host_mem_shared`).
pub type enc_host_mem_shared_t = enc_host_mem_shared;

/// A source address of a network operation.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct net_src_addr {
    pub net_op_idx: u32,
    pub complete: c_int,
    pub dev_addr: dma_addr_t,
    pub host_addr: *mut c_void,
    pub nccl_mhandle: *mut c_void,
    pub size: u32,
    pub mark: net_addr_mark_t,
    pub proxy_histogram_tag: *mut c_void,
    /// Mesh only.
    pub dst_rank: c_int,
}

/// The SDK's typedef of [`net_src_addr`]; C code names the type either way
/// (`net_src_addr_t`, `struct net_src_addr`).
pub type net_src_addr_t = net_src_addr;

/// A destination address of a network operation.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct net_dest_addr {
    pub net_op_idx: u32,
    pub complete: c_int,
    pub dev_addr: dma_addr_t,
    pub host_addr: *mut c_void,
    pub nccl_mhandle: *mut c_void,
    pub size: u32,
    pub mark: net_addr_mark_t,
    /// Mesh only.
    pub src_rank: c_int,
}

/// The SDK's typedef of [`net_dest_addr`]; C code names the type either way
/// (`net_dest_addr_t`, `struct net_dest_addr`).
pub type net_dest_addr_t = net_dest_addr;

/// The collectives library's version. New fields are only appended, after
/// `compatibility_version`.
#[repr(C)]
pub struct nec_version_info {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    pub maintenance: u64,
    pub git_hash: [c_char; 16],
    pub compatibility_version: u64,
    /// Fields of later versions (a flexible array member in C).
    pub future_fields: [u8; 0],
}

/// The SDK's typedef of [`nec_version_info`]; C code names the type either
/// way (`nec_version_info_t`, `struct nec_version_info`).
pub type nec_version_info_t = nec_version_info;
