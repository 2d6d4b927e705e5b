//! The shipped headers are ABI-identical to the SDK's: `tests/c/abi_probe.c`
//! is compiled against `include/` and prints the size and field offsets of
//! every public struct, every enum value and every constant; each is
//! compared with the value the SDK's headers (aws-neuron-sdk,
//! `src/libnrt/include/nrt/`) give on LP64 Linux, written out below —
//! except `nrt_async.h`, which is async API 3.0 (libnrt 2.31+): its
//! `nrta_xu_t` values are the 3.0 ones of the API documentation, and the
//! 2.x `nrta_error_t` is gone.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The SDK's facts, `key value` per line, keys as the probe prints them.
const SDK: &str = "
NRT_MAJOR_VERSION 2
NRT_MINOR_VERSION 0
NRT_TENSOR_PLACEMENT_DEVICE 0
NRT_TENSOR_PLACEMENT_HOST 1
NRT_TENSOR_PLACEMENT_VIRTUAL 2
NRT_FRAMEWORK_TYPE_INVALID 0
NRT_FRAMEWORK_TYPE_NO_FW 1
NRT_FRAMEWORK_TYPE_TENSORFLOW 2
NRT_FRAMEWORK_TYPE_PYTORCH 3
NRT_FRAMEWORK_TYPE_MXNET 4
NRT_FRAMEWORK_TYPE_PRECHECK 5
NRT_INSTANCE_UNKNOWN 0
NRT_INSTANCE_INF1 1
NRT_INSTANCE_TRN1 2
NRT_INSTANCE_TRN1N 3
NRT_INSTANCE_INF2 4
NRT_INSTANCE_TRN2 5
NRT_INSTANCE_TRN2N 6
NRT_INSTANCE_INF2E 7
NRT_INSTANCE_TRN2P 8
NRT_INSTANCE_TRN2U 9
NRT_INSTANCE_TRN2E 10
NRT_INSTANCE_TRN2EU 11
NRT_INSTANCE_TRN2AC 12
NRT_INSTANCE_TRN2UAC 13
NRT_INSTANCE_TRN3 14
NRT_INSTANCE_TRN3PDS98 15
NRT_INSTANCE_SIZE_1XL 0
NRT_INSTANCE_SIZE_2XL 1
NRT_INSTANCE_SIZE_4XL 2
NRT_INSTANCE_SIZE_6XL 3
NRT_INSTANCE_SIZE_8XL 4
NRT_INSTANCE_SIZE_24XL 5
NRT_INSTANCE_SIZE_32XL 6
NRT_INSTANCE_SIZE_48XL 7
NRT_INSTANCE_SIZE_3XL 8
NRT_INSTANCE_SIZE_UNKNOWN 9
NRT_INSTANCE_SIZE_NUM 9
NRT_OP_ADD 0
NRT_OP_FMA 1
NRT_OP_MAX 2
NRT_OP_MIN 3
NRT_OP_INVALID 15
NRT_DTYPE_UNKNOWN 0
NRT_DTYPE_INVALID 0
NRT_DTYPE_FP8_E3 13
NRT_DTYPE_FP8_E4 14
NRT_DTYPE_FP8_E5 15
NRT_DTYPE_FLOAT16 7
NRT_DTYPE_BFLOAT16 6
NRT_DTYPE_FLOAT32 10
NRT_DTYPE_FP32R 11
NRT_DTYPE_UINT8 3
NRT_DTYPE_UINT16 5
NRT_DTYPE_UINT32 9
NRT_DTYPE_UINT64 1
NRT_DTYPE_INT8 2
NRT_DTYPE_INT16 4
NRT_DTYPE_INT32 8
NRT_DTYPE_INT64 12
NRT_CC_ALLGATHER 0
NRT_CC_ALLREDUCE 1
NRT_CC_REDUCESCATTER 2
sizeof(nrt_tensor_placement_t) 4
sizeof(nrt_framework_type_t) 4
sizeof(nrt_dtype_t) 4
sizeof(nrt_op_type_t) 4
sizeof(nrt_instance_info_t) 32
offsetof(nrt_instance_info_t, family) 0
offsetof(nrt_instance_info_t, size) 4
offsetof(nrt_instance_info_t, arch_name) 8
offsetof(nrt_instance_info_t, device_revision) 24
sizeof(nrt_tensor_batch_offset_t) 8
sizeof(nrt_tensor_batch_size_t) 8
sizeof(nrt_tensor_batch_op_t) 24
offsetof(nrt_tensor_batch_op_t, offset) 0
offsetof(nrt_tensor_batch_op_t, size) 8
offsetof(nrt_tensor_batch_op_t, buffer) 16
sizeof(nrt_tensor_batch_t) 24
offsetof(nrt_tensor_batch_t, tensor) 0
offsetof(nrt_tensor_batch_t, ops) 8
offsetof(nrt_tensor_batch_t, num_ops) 16
sizeof(nrt_tensor_device_allocation_info_t) 24
offsetof(nrt_tensor_device_allocation_info_t, physical_address) 0
offsetof(nrt_tensor_device_allocation_info_t, size) 8
offsetof(nrt_tensor_device_allocation_info_t, hbm_index) 16
sizeof(nrt_vnc_memory_stats_t) 16
offsetof(nrt_vnc_memory_stats_t, bytes_used) 0
offsetof(nrt_vnc_memory_stats_t, bytes_limit) 8
sizeof(nrt_cc_comm_t) 32
offsetof(nrt_cc_comm_t, replica_group) 0
offsetof(nrt_cc_comm_t, rank) 8
offsetof(nrt_cc_comm_t, rank_n) 12
offsetof(nrt_cc_comm_t, ctx_device_id) 16
offsetof(nrt_cc_comm_t, ctx_device_count) 20
offsetof(nrt_cc_comm_t, vnc) 24
sizeof(nrt_tensor_list_t) 16
offsetof(nrt_tensor_list_t, tensors) 0
offsetof(nrt_tensor_list_t, num_tensors) 8
sizeof(NRT_STATUS) 4
NRT_SUCCESS 0
NRT_FAILURE 1
NRT_INVALID 2
NRT_INVALID_HANDLE 3
NRT_RESOURCE 4
NRT_TIMEOUT 5
NRT_HW_ERROR 6
NRT_QUEUE_FULL 7
NRT_LOAD_NOT_ENOUGH_NC 9
NRT_UNSUPPORTED_NEFF_VERSION 10
NRT_FAIL_HOST_MEM_ALLOC 11
NRT_UNINITIALIZED 13
NRT_CLOSED 14
NRT_QUEUE_EMPTY 15
NRT_EXEC_UNIT_UNRECOVERABLE 101
NRT_EXEC_BAD_INPUT 1002
NRT_EXEC_COMPLETED_WITH_NUM_ERR 1003
NRT_EXEC_COMPLETED_WITH_ERR 1004
NRT_EXEC_NC_BUSY 1005
NRT_EXEC_OOB 1006
NRT_COLL_PENDING 1100
NRT_EXEC_HW_ERR_COLLECTIVES 1200
NRT_EXEC_HW_ERR_HBM_UE 1201
NRT_EXEC_HW_ERR_NC_UE 1202
NRT_EXEC_HW_ERR_DMA_ABORT 1203
NRT_EXEC_SW_NQ_OVERFLOW 1204
NRT_EXEC_HW_ERR_REPAIRABLE_HBM_UE 1205
NRT_NETWORK_PROXY_FAILURE 1206
NRT_TENSOR_USAGE_INPUT 0
NRT_TENSOR_USAGE_OUTPUT 1
NRT_TENSOR_NAME_MAX 256
sizeof(nrt_tensor_usage_t) 4
sizeof(nrt_tensor_info_t) 296
offsetof(nrt_tensor_info_t, name) 0
offsetof(nrt_tensor_info_t, usage) 256
offsetof(nrt_tensor_info_t, size) 264
offsetof(nrt_tensor_info_t, dtype) 272
offsetof(nrt_tensor_info_t, shape) 280
offsetof(nrt_tensor_info_t, ndim) 288
sizeof(nrt_tensor_info_array_t) 8
offsetof(nrt_tensor_info_array_t, tensor_count) 0
offsetof(nrt_tensor_info_array_t, tensor_array) 8
sizeof(nrt_ucode_img) 16
offsetof(nrt_ucode_img, bin) 0
offsetof(nrt_ucode_img, size) 8
sizeof(nrt_ucode_info) 32
offsetof(nrt_ucode_info, iram) 0
offsetof(nrt_ucode_info, dram) 16
sizeof(nrt_model_info_t) 4
offsetof(nrt_model_info_t, vnc) 0
sizeof(NRT_ASYNC_EXEC_STATUS_CALLBACK) 8
RT_VERSION_DETAIL_LEN 128
GIT_HASH_LEN 64
sizeof(nrt_version_t) 224
offsetof(nrt_version_t, rt_major) 0
offsetof(nrt_version_t, rt_minor) 8
offsetof(nrt_version_t, rt_patch) 16
offsetof(nrt_version_t, rt_maintenance) 24
offsetof(nrt_version_t, rt_detail) 32
offsetof(nrt_version_t, git_hash) 160
NRTA_XU_TENSOR_OP 0
NRTA_XU_COMPUTE 1
NRTA_XU_COLLECTIVES 2
NRTA_XU_TYPE_NUM 3
sizeof(nrta_seq_t) 8
sizeof(nrta_xu_id_t) 2
NRTA_SEQ_NUM_MAX 281474976710655
NRTA_SEQ_NUM_MASK 281474976710655
NRTA_SEQ_GET_SEQ_NUM((5ull << 48) | 7) 7
NRTA_SEQ_GET_XU_ID((5ull << 48) | 7) 5
NDEBUG_STREAM_EVENT_TYPE_INVALID 0
NDEBUG_STREAM_EVENT_TYPE_DEBUG_TENSOR_READ 1
sizeof(ndebug_stream_event_header_t) 64
offsetof(ndebug_stream_event_header_t, data_size) 0
offsetof(ndebug_stream_event_header_t, type) 8
offsetof(ndebug_stream_event_header_t, reserved) 12
sizeof(ndebug_stream_payload_debug_tensor_read_t) 1024
offsetof(ndebug_stream_payload_debug_tensor_read_t, prefix) 0
offsetof(ndebug_stream_payload_debug_tensor_read_t, logical_nc_id) 512
offsetof(ndebug_stream_payload_debug_tensor_read_t, pipe) 516
offsetof(ndebug_stream_payload_debug_tensor_read_t, tensor_dtype) 520
offsetof(ndebug_stream_payload_debug_tensor_read_t, tensor_shape) 536
offsetof(ndebug_stream_payload_debug_tensor_read_t, tensor_data_size) 600
offsetof(ndebug_stream_payload_debug_tensor_read_t, reserved0) 608
offsetof(ndebug_stream_payload_debug_tensor_read_t, tensor_data) 1024
NEC_MAX_CHANNELS 32
NEC_MAX_NR_CHANNEL_CHUNKS 32
NEC_MAX_FOLD_N 8
NEC_MAX_COMM_N 12
NEC_MAX_NET_BUFFERS 24
NEC_CACHE_LINE_SIZE 128
NEC_NET_CONNECTOR_RANK -1
NEC_NET_MLA_DEV -1
NEC_POD_MLA_DEV -2
NEC_UNKNOWN_RANK -3
NEC_UNKNOWN_MLA_DEV -3
NEC_HIER_CC_PIPELINE_STAGE_N 3
NCCL_NET_NEURON_MAX_REQUESTS 128
NEC_MAX_STREAM_N 4
NEC_KANGARING_MAX_NUM_RANKS 128
NET_SEND_COMM 0
NET_RECV_COMM 1
NET_RECV_LISTEN_COMM 2
LOCAL_RECV_COMM 3
LOCAL_SEND_COMM 4
NEC_OP_ADD 0
NEC_OP_FMA 1
NEC_OP_MAX 2
NEC_OP_MIN 3
NEC_OP_INVALID 15
NEC_DTYPE_INVALID 0
NEC_DTYPE_FP8_E3 13
NEC_DTYPE_FP8_E4 14
NEC_DTYPE_FP8_E5 15
NEC_DTYPE_FP16 7
NEC_DTYPE_BFLOAT16 6
NEC_DTYPE_FP32 10
NEC_DTYPE_UINT8 3
NEC_DTYPE_UINT16 5
NEC_DTYPE_UINT32 9
NEC_DTYPE_UINT64 1
NEC_DTYPE_INT8 2
NEC_DTYPE_INT16 4
NEC_DTYPE_INT32 8
NEC_DTYPE_INT64 12
NEC_POD_TYPE_NONE 0
NEC_POD_TYPE_P2P 1
NEC_POD_TYPE_SWITCH 2
NEC_POD_TYPE_INVALID 3
ENC_PATTERN_RING 0
ENC_PATTERN_MESH 1
ENC_PATTERN_INVALID 2
ENC_CONNECTIVITY_MESH 0
ENC_CONNECTIVITY_RDH 1
ENC_CONNECTIVITY_DEFAULT 2
ENC_TOPO_NULL 0
ENC_TOPO_4_DEVS_IN_ROW 1
ENC_TOPO_4_DEVS_IN_COLUMN 2
RING 0
KANGARING 1
SINGLE_CYCLE_RING 2
RDH 3
INVALID_METARING 4
ENC_ALG_FULL_MESH 0
ENC_ALG_GROUPED_MESH 1
ENC_ALG_MESH_TRN2 2
ENC_ALG_MESH_INVALID 3
NET_TRANSFER 0
NET_OP_COMPLETE 1
EXEC_COMPLETE 2
sizeof(dma_addr_t) 8
sizeof(nec_comm_t) 8
sizeof(nec_channel_t) 8
sizeof(enc_host_mem_t) 32
offsetof(enc_host_mem_t, mem_handle) 0
offsetof(enc_host_mem_t, va) 8
offsetof(enc_host_mem_t, pa) 16
offsetof(enc_host_mem_t, size) 24
sizeof(enc_host_mem_shared_t) 40
offsetof(enc_host_mem_shared_t, mem) 0
offsetof(enc_host_mem_shared_t, refcnt) 32
sizeof(net_src_addr_t) 56
offsetof(net_src_addr_t, net_op_idx) 0
offsetof(net_src_addr_t, complete) 4
offsetof(net_src_addr_t, dev_addr) 8
offsetof(net_src_addr_t, host_addr) 16
offsetof(net_src_addr_t, nccl_mhandle) 24
offsetof(net_src_addr_t, size) 32
offsetof(net_src_addr_t, mark) 36
offsetof(net_src_addr_t, proxy_histogram_tag) 40
offsetof(net_src_addr_t, dst_rank) 48
sizeof(net_dest_addr_t) 48
offsetof(net_dest_addr_t, net_op_idx) 0
offsetof(net_dest_addr_t, complete) 4
offsetof(net_dest_addr_t, dev_addr) 8
offsetof(net_dest_addr_t, host_addr) 16
offsetof(net_dest_addr_t, nccl_mhandle) 24
offsetof(net_dest_addr_t, size) 32
offsetof(net_dest_addr_t, mark) 36
offsetof(net_dest_addr_t, src_rank) 40
sizeof(nec_version_info_t) 56
offsetof(nec_version_info_t, major) 0
offsetof(nec_version_info_t, minor) 8
offsetof(nec_version_info_t, patch) 16
offsetof(nec_version_info_t, maintenance) 24
offsetof(nec_version_info_t, git_hash) 32
offsetof(nec_version_info_t, compatibility_version) 48
offsetof(nec_version_info_t, future_fields) 56
";

fn facts(text: &str) -> BTreeMap<String, i64> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').expect("key value");
            (k.to_string(), v.parse().expect("a number"))
        })
        .collect()
}

#[test]
fn headers_match_the_sdk_abi() {
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join("abi_probe");
    let status = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(crate_dir.join("include"))
        .arg(crate_dir.join("tests/c/abi_probe.c"))
        .arg("-o")
        .arg(&exe)
        .status()
        .expect("a C compiler (cc) is needed to check the headers");
    assert!(
        status.success(),
        "abi_probe.c does not compile against include/"
    );
    let out = Command::new(&exe).output().expect("abi_probe runs");
    assert!(out.status.success());
    let ours = facts(&String::from_utf8_lossy(&out.stdout));
    let sdk = facts(SDK);
    let mut wrong = Vec::new();
    for (k, v) in &sdk {
        match ours.get(k) {
            Some(o) if o == v => {}
            other => wrong.push(format!("{k}: SDK {v}, ours {other:?}")),
        }
    }
    for k in ours.keys().filter(|k| !sdk.contains_key(*k)) {
        wrong.push(format!("{k}: probed but no SDK value to compare"));
    }
    assert!(
        wrong.is_empty(),
        "{} differences:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert_eq!(sdk.len(), 288);
}
