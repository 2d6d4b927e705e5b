/* Compiles only if every struct and enum the SDK's headers declare with a
 * tag (`typedef struct nrt_instance_info {...} nrt_instance_info_t;`) has
 * that tag here too, naming the same type as the typedef, with the SDK's
 * size: SDK-style code spells them either way. (nec.h's internal
 * structures, which these headers do not declare, are left out.)
 * tests/c_api/tag_names.rs compiles it (and tag_names.cpp, the same for
 * C++). */
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

/* `TAG` (spelled with its keyword) and `TYPEDEF` are one type. */
#define SAME(TAG, TYPEDEF) \
  _Static_assert(_Generic((TAG *)0, TYPEDEF *: 1, default: 0), #TAG " is " #TYPEDEF)
/* ... and it has the SDK's size on LP64. */
#define SAME_SIZED(TAG, TYPEDEF, SIZE) \
  SAME(TAG, TYPEDEF);                  \
  _Static_assert(sizeof(TAG) == (SIZE), "sizeof(" #TAG ")")

/* nrt.h (and the tensor batch op of ndl/neuron_driver_shared_tensor_batch_op.h) */
SAME(struct nrt_model, nrt_model_t);
SAME(struct nrt_tensor, nrt_tensor_t);
SAME(struct nrt_cc_context, nrt_cc_context_t);
SAME_SIZED(enum nrt_op_type, nrt_op_type_t, 4);
SAME_SIZED(enum nrt_dtype, nrt_dtype_t, 4);
SAME_SIZED(enum nrt_cc_op_type, nrt_cc_op_type_t, 4);
SAME_SIZED(struct nrt_instance_info, nrt_instance_info_t, 32);
SAME_SIZED(struct nrt_tensor_batch_op, nrt_tensor_batch_op_t, 24);
SAME_SIZED(struct nrt_tensor_batch, nrt_tensor_batch_t, 24);
SAME_SIZED(struct nrt_tensor_device_allocation_info, nrt_tensor_device_allocation_info_t, 24);
SAME_SIZED(struct nrt_vnc_memory_stats, nrt_vnc_memory_stats_t, 16);
SAME_SIZED(struct nrt_cc_comm, nrt_cc_comm_t, 32);
SAME_SIZED(struct nrt_tensor_list, nrt_tensor_list_t, 16);
/* nrt_experimental.h */
SAME_SIZED(enum nrt_tensor_usage, nrt_tensor_usage_t, 4);
SAME_SIZED(struct nrt_tensor_info, nrt_tensor_info_t, 296);
SAME_SIZED(struct nrt_tensor_info_array, nrt_tensor_info_array_t, 8);
SAME_SIZED(struct nrt_ucode_img, nrt_ucode_img, 16);
SAME_SIZED(struct nrt_ucode_info, nrt_ucode_info, 32);
SAME_SIZED(struct nrt_model_info, nrt_model_info_t, 4);
/* nrt_version.h */
SAME_SIZED(struct nrt_version, nrt_version_t, 224);
/* nrt_profile.h, nrt_sys_trace.h, nrt_async_sendrecv.h */
SAME(struct nrt_profile_continuous_options, nrt_profile_continuous_options_t);
SAME(struct nrt_inspect_config, nrt_inspect_config_t);
SAME(struct nrt_sys_trace_config, nrt_sys_trace_config_t);
SAME(struct nrt_sys_trace_fetch_options, nrt_sys_trace_fetch_options_t);
SAME(struct nrt_async_sendrecv_comm, nrt_async_sendrecv_comm_t);
SAME(struct nrt_async_sendrecv_request, nrt_async_sendrecv_request_t);
/* ndebug_stream.h */
SAME_SIZED(enum ndebug_stream_event_type, ndebug_stream_event_type_t, 4);
SAME_SIZED(struct ndebug_stream_event_header, ndebug_stream_event_header_t, 64);
SAME_SIZED(struct ndebug_stream_payload_debug_tensor_read, ndebug_stream_payload_debug_tensor_read_t, 1024);
/* nec.h */
SAME_SIZED(enum ofi_comm_type, ofi_comm_type_t, 4);
SAME_SIZED(enum nec_op_type, nec_op_type_t, 4);
SAME_SIZED(enum nec_data_type, nec_data_type_t, 4);
SAME_SIZED(enum nec_pod_type, nec_pod_type_t, 4);
SAME_SIZED(enum enc_pattern, enc_pattern_t, 4);
SAME_SIZED(enum enc_net_connectivity, enc_net_connectivity_t, 4);
SAME_SIZED(enum enc_topology_mode, enc_topology_mode_t, 4);
SAME_SIZED(enum metaring_type, metaring_type_t, 4);
SAME_SIZED(enum enc_alg_mesh_type, enc_alg_mesh_type_t, 4);
SAME_SIZED(enum net_addr_mark, net_addr_mark_t, 4);
SAME_SIZED(struct enc_host_mem, enc_host_mem_t, 32);
SAME_SIZED(struct enc_host_mem_shared, enc_host_mem_shared_t, 40);
SAME_SIZED(struct net_src_addr, net_src_addr_t, 56);
SAME_SIZED(struct net_dest_addr, net_dest_addr_t, 48);
SAME_SIZED(struct nec_version_info, nec_version_info_t, 56);
SAME(struct enc_comm *, nec_comm_t);
SAME(struct enc_channel *, nec_channel_t);

/* A client written the SDK's way: tag spellings in declarations and calls. */
int sdk_style_client(nrt_model_t *model, nrt_tensor_t *tensor);
int sdk_style_client(nrt_model_t *model, nrt_tensor_t *tensor) {
  struct nrt_instance_info ii;
  struct nrt_vnc_memory_stats st;
  struct nrt_tensor_device_allocation_info ai;
  struct nrt_model_info mi;
  struct nrt_version ver;
  struct nrt_tensor_info_array *info = NULL;
  struct nrt_tensor_batch_op op = {0, 0, NULL};
  struct nrt_tensor_batch batch = {tensor, &op, 1};
  struct nec_version_info nv;
  struct enc_host_mem hm = {NULL, NULL, 0, 0};
  struct ndebug_stream_event_header header;
  enum nrt_dtype dt = NRT_DTYPE_FLOAT32;
  enum nrt_tensor_usage u = NRT_TENSOR_USAGE_INPUT;
  enum nec_pod_type pod = NEC_POD_TYPE_NONE;
  enum net_addr_mark mark = NET_TRANSFER;
  size_t out = 0;
  void *payload = NULL;
  int can = 0;
  int bad = 0;
  bad |= nrt_get_instance_info(&ii, sizeof ii) != NRT_SUCCESS;
  bad |= nrt_get_vnc_memory_stats(0, &st, sizeof st, &out) != NRT_SUCCESS;
  bad |= nrt_tensor_get_device_allocation_info(tensor, &ai) != NRT_SUCCESS;
  bad |= nrt_get_model_info(model, &mi, sizeof mi, &out) != NRT_SUCCESS;
  bad |= nrt_get_version(&ver, sizeof ver) != NRT_SUCCESS;
  bad |= nrt_get_model_tensor_info(model, &info) != NRT_SUCCESS;
  bad |= info->tensor_array[0].usage != u || info->tensor_array[0].dtype != dt;
  bad |= nrt_free_model_tensor_info(info) != NRT_SUCCESS;
  bad |= nrt_tensor_read_batch(&batch, 1, false) != NRT_SUCCESS;
  bad |= nec_get_version_info(&nv) != NRT_SUCCESS;
  bad |= nec_get_dynamic_send_size_bytes(&hm, 4, 0, 1) != 0;
  bad |= nec_pod_node_can_access_peer_node(pod, 0, 0, 0, 0, &can) != NRT_SUCCESS;
  bad |= nrt_debug_client_read_one_event(-1, &header, &payload) != NRT_SUCCESS;
  bad |= mark != NET_TRANSFER;
  return bad;
}
