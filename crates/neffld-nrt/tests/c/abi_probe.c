/* Prints the ABI facts of the shipped headers, one "key value" per line:
 * sizes and field offsets of every public struct, enum values and
 * constants. tests/abi_probe.rs compares them with the SDK's. */
#include <nrt/nrt.h>
#include <nrt/nrt_status.h>
#include <nrt/nrt_experimental.h>
#include <nrt/nrt_version.h>
#include <nrt/nrt_profile.h>
#include <nrt/nrt_sys_trace.h>
#include <nrt/nrt_async.h>
#include <nrt/nrt_async_sendrecv.h>
#include <nrt/ndebug_stream.h>
#include <nrt/nec.h>

#include <stddef.h>
#include <stdio.h>

#define V(expr) printf("%s %lld\n", #expr, (long long)(expr))
#define S(type) printf("sizeof(%s) %zu\n", #type, sizeof(type))
#define O(type, field) printf("offsetof(%s, %s) %zu\n", #type, #field, offsetof(type, field))

int main(void) {
  /* nrt.h */
  V(NRT_MAJOR_VERSION); V(NRT_MINOR_VERSION);
  V(NRT_TENSOR_PLACEMENT_DEVICE); V(NRT_TENSOR_PLACEMENT_HOST); V(NRT_TENSOR_PLACEMENT_VIRTUAL);
  V(NRT_FRAMEWORK_TYPE_INVALID); V(NRT_FRAMEWORK_TYPE_NO_FW); V(NRT_FRAMEWORK_TYPE_TENSORFLOW);
  V(NRT_FRAMEWORK_TYPE_PYTORCH); V(NRT_FRAMEWORK_TYPE_MXNET); V(NRT_FRAMEWORK_TYPE_PRECHECK);
  V(NRT_INSTANCE_UNKNOWN); V(NRT_INSTANCE_INF1); V(NRT_INSTANCE_TRN1); V(NRT_INSTANCE_TRN1N);
  V(NRT_INSTANCE_INF2); V(NRT_INSTANCE_TRN2); V(NRT_INSTANCE_TRN2N); V(NRT_INSTANCE_INF2E);
  V(NRT_INSTANCE_TRN2P); V(NRT_INSTANCE_TRN2U); V(NRT_INSTANCE_TRN2E); V(NRT_INSTANCE_TRN2EU);
  V(NRT_INSTANCE_TRN2AC); V(NRT_INSTANCE_TRN2UAC); V(NRT_INSTANCE_TRN3); V(NRT_INSTANCE_TRN3PDS98);
  V(NRT_INSTANCE_SIZE_1XL); V(NRT_INSTANCE_SIZE_2XL); V(NRT_INSTANCE_SIZE_4XL); V(NRT_INSTANCE_SIZE_6XL);
  V(NRT_INSTANCE_SIZE_8XL); V(NRT_INSTANCE_SIZE_24XL); V(NRT_INSTANCE_SIZE_32XL); V(NRT_INSTANCE_SIZE_48XL);
  V(NRT_INSTANCE_SIZE_3XL); V(NRT_INSTANCE_SIZE_UNKNOWN); V(NRT_INSTANCE_SIZE_NUM);
  V(NRT_OP_ADD); V(NRT_OP_FMA); V(NRT_OP_MAX); V(NRT_OP_MIN); V(NRT_OP_INVALID);
  V(NRT_DTYPE_UNKNOWN); V(NRT_DTYPE_INVALID); V(NRT_DTYPE_FP8_E3); V(NRT_DTYPE_FP8_E4); V(NRT_DTYPE_FP8_E5);
  V(NRT_DTYPE_FLOAT16); V(NRT_DTYPE_BFLOAT16); V(NRT_DTYPE_FLOAT32); V(NRT_DTYPE_FP32R);
  V(NRT_DTYPE_UINT8); V(NRT_DTYPE_UINT16); V(NRT_DTYPE_UINT32); V(NRT_DTYPE_UINT64);
  V(NRT_DTYPE_INT8); V(NRT_DTYPE_INT16); V(NRT_DTYPE_INT32); V(NRT_DTYPE_INT64);
  V(NRT_CC_ALLGATHER); V(NRT_CC_ALLREDUCE); V(NRT_CC_REDUCESCATTER);
  S(nrt_tensor_placement_t); S(nrt_framework_type_t); S(nrt_dtype_t); S(nrt_op_type_t);
  S(nrt_instance_info_t); O(nrt_instance_info_t, family); O(nrt_instance_info_t, size);
  O(nrt_instance_info_t, arch_name); O(nrt_instance_info_t, device_revision);
  S(nrt_tensor_batch_offset_t); S(nrt_tensor_batch_size_t);
  S(nrt_tensor_batch_op_t); O(nrt_tensor_batch_op_t, offset); O(nrt_tensor_batch_op_t, size);
  O(nrt_tensor_batch_op_t, buffer);
  S(nrt_tensor_batch_t); O(nrt_tensor_batch_t, tensor); O(nrt_tensor_batch_t, ops); O(nrt_tensor_batch_t, num_ops);
  S(nrt_tensor_device_allocation_info_t); O(nrt_tensor_device_allocation_info_t, physical_address);
  O(nrt_tensor_device_allocation_info_t, size); O(nrt_tensor_device_allocation_info_t, hbm_index);
  S(nrt_vnc_memory_stats_t); O(nrt_vnc_memory_stats_t, bytes_used); O(nrt_vnc_memory_stats_t, bytes_limit);
  S(nrt_cc_comm_t); O(nrt_cc_comm_t, replica_group); O(nrt_cc_comm_t, rank); O(nrt_cc_comm_t, rank_n);
  O(nrt_cc_comm_t, ctx_device_id); O(nrt_cc_comm_t, ctx_device_count); O(nrt_cc_comm_t, vnc);
  S(nrt_tensor_list_t); O(nrt_tensor_list_t, tensors); O(nrt_tensor_list_t, num_tensors);
  /* nrt_status.h */
  S(NRT_STATUS);
  V(NRT_SUCCESS); V(NRT_FAILURE); V(NRT_INVALID); V(NRT_INVALID_HANDLE); V(NRT_RESOURCE);
  V(NRT_TIMEOUT); V(NRT_HW_ERROR); V(NRT_QUEUE_FULL); V(NRT_LOAD_NOT_ENOUGH_NC);
  V(NRT_UNSUPPORTED_NEFF_VERSION); V(NRT_FAIL_HOST_MEM_ALLOC); V(NRT_UNINITIALIZED); V(NRT_CLOSED);
  V(NRT_QUEUE_EMPTY); V(NRT_EXEC_UNIT_UNRECOVERABLE); V(NRT_EXEC_BAD_INPUT);
  V(NRT_EXEC_COMPLETED_WITH_NUM_ERR); V(NRT_EXEC_COMPLETED_WITH_ERR); V(NRT_EXEC_NC_BUSY);
  V(NRT_EXEC_OOB); V(NRT_COLL_PENDING); V(NRT_EXEC_HW_ERR_COLLECTIVES); V(NRT_EXEC_HW_ERR_HBM_UE);
  V(NRT_EXEC_HW_ERR_NC_UE); V(NRT_EXEC_HW_ERR_DMA_ABORT); V(NRT_EXEC_SW_NQ_OVERFLOW);
  V(NRT_EXEC_HW_ERR_REPAIRABLE_HBM_UE); V(NRT_NETWORK_PROXY_FAILURE);
  /* nrt_experimental.h */
  V(NRT_TENSOR_USAGE_INPUT); V(NRT_TENSOR_USAGE_OUTPUT); V(NRT_TENSOR_NAME_MAX);
  S(nrt_tensor_usage_t);
  S(nrt_tensor_info_t); O(nrt_tensor_info_t, name); O(nrt_tensor_info_t, usage); O(nrt_tensor_info_t, size);
  O(nrt_tensor_info_t, dtype); O(nrt_tensor_info_t, shape); O(nrt_tensor_info_t, ndim);
  S(nrt_tensor_info_array_t); O(nrt_tensor_info_array_t, tensor_count); O(nrt_tensor_info_array_t, tensor_array);
  S(nrt_ucode_img); O(nrt_ucode_img, bin); O(nrt_ucode_img, size);
  S(nrt_ucode_info); O(nrt_ucode_info, iram); O(nrt_ucode_info, dram);
  S(nrt_model_info_t); O(nrt_model_info_t, vnc);
  S(NRT_ASYNC_EXEC_STATUS_CALLBACK);
  /* nrt_version.h */
  V(RT_VERSION_DETAIL_LEN); V(GIT_HASH_LEN);
  S(nrt_version_t); O(nrt_version_t, rt_major); O(nrt_version_t, rt_minor); O(nrt_version_t, rt_patch);
  O(nrt_version_t, rt_maintenance); O(nrt_version_t, rt_detail); O(nrt_version_t, git_hash);
  /* nrt_async.h */
  V(NRTA_XU_TENSOR_OP); V(NRTA_XU_COMPUTE); V(NRTA_XU_COLLECTIVES); V(NRTA_XU_TYPE_NUM);
  S(nrta_seq_t); S(nrta_xu_id_t); V(NRTA_SEQ_NUM_MAX); V(NRTA_SEQ_NUM_MASK);
  V(NRTA_SEQ_GET_SEQ_NUM((5ull << 48) | 7)); V(NRTA_SEQ_GET_XU_ID((5ull << 48) | 7));
  /* ndebug_stream.h */
  V(NDEBUG_STREAM_EVENT_TYPE_INVALID); V(NDEBUG_STREAM_EVENT_TYPE_DEBUG_TENSOR_READ);
  S(ndebug_stream_event_header_t); O(ndebug_stream_event_header_t, data_size);
  O(ndebug_stream_event_header_t, type); O(ndebug_stream_event_header_t, reserved);
  S(ndebug_stream_payload_debug_tensor_read_t);
  O(ndebug_stream_payload_debug_tensor_read_t, prefix);
  O(ndebug_stream_payload_debug_tensor_read_t, logical_nc_id);
  O(ndebug_stream_payload_debug_tensor_read_t, pipe);
  O(ndebug_stream_payload_debug_tensor_read_t, tensor_dtype);
  O(ndebug_stream_payload_debug_tensor_read_t, tensor_shape);
  O(ndebug_stream_payload_debug_tensor_read_t, tensor_data_size);
  O(ndebug_stream_payload_debug_tensor_read_t, reserved0);
  O(ndebug_stream_payload_debug_tensor_read_t, tensor_data);
  /* nec.h */
  V(NEC_MAX_CHANNELS); V(NEC_MAX_NR_CHANNEL_CHUNKS); V(NEC_MAX_FOLD_N); V(NEC_MAX_COMM_N);
  V(NEC_MAX_NET_BUFFERS); V(NEC_CACHE_LINE_SIZE); V(NEC_NET_CONNECTOR_RANK); V(NEC_NET_MLA_DEV);
  V(NEC_POD_MLA_DEV); V(NEC_UNKNOWN_RANK); V(NEC_UNKNOWN_MLA_DEV); V(NEC_HIER_CC_PIPELINE_STAGE_N);
  V(NCCL_NET_NEURON_MAX_REQUESTS); V(NEC_MAX_STREAM_N); V(NEC_KANGARING_MAX_NUM_RANKS);
  V(NET_SEND_COMM); V(NET_RECV_COMM); V(NET_RECV_LISTEN_COMM); V(LOCAL_RECV_COMM); V(LOCAL_SEND_COMM);
  V(NEC_OP_ADD); V(NEC_OP_FMA); V(NEC_OP_MAX); V(NEC_OP_MIN); V(NEC_OP_INVALID);
  V(NEC_DTYPE_INVALID); V(NEC_DTYPE_FP8_E3); V(NEC_DTYPE_FP8_E4); V(NEC_DTYPE_FP8_E5); V(NEC_DTYPE_FP16);
  V(NEC_DTYPE_BFLOAT16); V(NEC_DTYPE_FP32); V(NEC_DTYPE_UINT8); V(NEC_DTYPE_UINT16); V(NEC_DTYPE_UINT32);
  V(NEC_DTYPE_UINT64); V(NEC_DTYPE_INT8); V(NEC_DTYPE_INT16); V(NEC_DTYPE_INT32); V(NEC_DTYPE_INT64);
  V(NEC_POD_TYPE_NONE); V(NEC_POD_TYPE_P2P); V(NEC_POD_TYPE_SWITCH); V(NEC_POD_TYPE_INVALID);
  V(ENC_PATTERN_RING); V(ENC_PATTERN_MESH); V(ENC_PATTERN_INVALID);
  V(ENC_CONNECTIVITY_MESH); V(ENC_CONNECTIVITY_RDH); V(ENC_CONNECTIVITY_DEFAULT);
  V(ENC_TOPO_NULL); V(ENC_TOPO_4_DEVS_IN_ROW); V(ENC_TOPO_4_DEVS_IN_COLUMN);
  V(RING); V(KANGARING); V(SINGLE_CYCLE_RING); V(RDH); V(INVALID_METARING);
  V(ENC_ALG_FULL_MESH); V(ENC_ALG_GROUPED_MESH); V(ENC_ALG_MESH_TRN2); V(ENC_ALG_MESH_INVALID);
  V(NET_TRANSFER); V(NET_OP_COMPLETE); V(EXEC_COMPLETE);
  S(dma_addr_t); S(nec_comm_t); S(nec_channel_t);
  S(enc_host_mem_t); O(enc_host_mem_t, mem_handle); O(enc_host_mem_t, va); O(enc_host_mem_t, pa);
  O(enc_host_mem_t, size);
  S(enc_host_mem_shared_t); O(enc_host_mem_shared_t, mem); O(enc_host_mem_shared_t, refcnt);
  S(net_src_addr_t); O(net_src_addr_t, net_op_idx); O(net_src_addr_t, complete); O(net_src_addr_t, dev_addr);
  O(net_src_addr_t, host_addr); O(net_src_addr_t, nccl_mhandle); O(net_src_addr_t, size);
  O(net_src_addr_t, mark); O(net_src_addr_t, proxy_histogram_tag); O(net_src_addr_t, dst_rank);
  S(net_dest_addr_t); O(net_dest_addr_t, net_op_idx); O(net_dest_addr_t, complete);
  O(net_dest_addr_t, dev_addr); O(net_dest_addr_t, host_addr); O(net_dest_addr_t, nccl_mhandle);
  O(net_dest_addr_t, size); O(net_dest_addr_t, mark); O(net_dest_addr_t, src_rank);
  S(nec_version_info_t); O(nec_version_info_t, major); O(nec_version_info_t, minor);
  O(nec_version_info_t, patch); O(nec_version_info_t, maintenance); O(nec_version_info_t, git_hash);
  O(nec_version_info_t, compatibility_version); O(nec_version_info_t, future_fields);
  return 0;
}
