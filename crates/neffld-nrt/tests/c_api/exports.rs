//! The shared library's exported symbols are exactly the functions the
//! shipped headers declare, and it carries the soname `libnrt.so.1`.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

/// The functions each shipped header declares: those of the SDK 2.28
/// headers (aws-neuron-sdk, src/libnrt/include/nrt/), except that
/// `nrt_async.h` is async API 3.0 as libnrt 2.31+ has it (the error
/// tracker and `nrta_get_completion_handle` removed, the two eventfd
/// registrations of 2.32 added) and `nrt.h` adds `nrt_tensor_get_lnc_index`,
/// and the tensor operations of 2.35 with the dtype setter and getter they
/// need, and 2.35's `nrt_inspect_config_set_device_profile_num_warmup` in
/// `nrt_profile.h` (no public header of those declares them; see the
/// headers' comments).
const SDK_FUNCTIONS: [(&str, &[&str]); 10] = [
    (
        "nrt.h",
        &[
            "nrt_get_instance_info",
            "nrt_init",
            "nrt_close",
            "nrt_get_total_nc_count",
            "nrt_get_total_vnc_count",
            "nrt_get_visible_nc_count",
            "nrt_get_visible_vnc_count",
            "nrt_get_vnc_memory_stats",
            "nrt_load",
            "nrt_load_collectives",
            "nrt_unload",
            "nrt_get_model_nc_count",
            "nrt_get_model_vnc_count",
            "nrt_tensor_allocate",
            "nrt_tensor_free",
            "nrt_tensor_read",
            "nrt_tensor_write",
            "nrt_tensor_read_batch",
            "nrt_tensor_write_batch",
            "nrt_tensor_copy",
            "nrt_tensor_get_size",
            "nrt_tensor_memset",
            "nrt_tensor_allocate_empty",
            "nrt_tensor_attach_buffer",
            "nrt_tensor_allocate_slice",
            "nrt_tensor_get_va",
            "nrt_tensor_get_device_allocation_info",
            "nrt_tensor_get_lnc_index",
            "nrt_tensor_set_dtype",
            "nrt_tensor_get_dtype",
            "nrt_tensor_cast",
            "nrt_tensor_compute",
            "nrt_tensor_check_output_completion",
            "nrt_tensor_reset_output_completion",
            "nrt_allocate_tensor_set",
            "nrt_destroy_tensor_set",
            "nrt_add_tensor_to_tensor_set",
            "nrt_get_tensor_from_tensor_set",
            "nrt_execute",
            "nrt_execute_repeat",
            "nrt_build_global_comm",
            "nrt_get_dmabuf_fd",
            "nrt_host_device_id_get",
            "nrt_host_device_id_rid_map_get",
            "nrt_get_hbm_mmap_va",
            "nrt_get_attached_efa_bdf",
            "nrt_cc_global_comm_init",
        ],
    ),
    (
        "nrt_experimental.h",
        &[
            "nrt_get_model_tensor_info",
            "nrt_get_model_instance_count",
            "nrt_free_model_tensor_info",
            "nrt_get_model_info",
            "nrt_trace_start",
            "nrt_trace_stop",
            "nrt_get_libnccl_net",
            "nrt_set_pool_eng_ucode",
            "nrt_memcpy_to_device",
            "nrt_register_async_exec_callback",
            "nrt_barrier",
            "nrt_all_gather",
            "nrt_async_drain_queued_execs",
        ],
    ),
    ("nrt_status.h", &["nrt_get_status_as_str"]),
    ("nrt_version.h", &["nrt_get_version"]),
    (
        "nrt_profile.h",
        &[
            "nrt_profile_start",
            "nrt_profile_stop",
            "nrt_profile_continuous_options_allocate",
            "nrt_profile_continuous_options_free",
            "nrt_profile_continuous_options_set_output_dir",
            "nrt_profile_continuous_start",
            "nrt_profile_continuous_save",
            "nrt_profile_continuous_stop",
            "nrt_inspect_begin",
            "nrt_inspect_stop",
            "nrt_inspect_config_allocate",
            "nrt_inspect_config_set_defaults",
            "nrt_inspect_config_free",
            "nrt_inspect_config_set_session_id",
            "nrt_inspect_config_set_output_dir",
            "nrt_inspect_config_set_device_profile_num_warmup",
            "nrt_inspect_config_set_sys_trace_max_events_per_nc",
            "nrt_inspect_config_set_capture_enabled_for_nc",
            "nrt_inspect_config_set_capture_enabled_for_event_type_string",
            "nrt_inspect_config_set_enable_inspect",
            "nrt_inspect_config_set_enable_inspect_on_fail",
            "nrt_inspect_begin_with_options",
            "nrt_inspect_config_get_all_activity_types",
            "nrt_inspect_config_get_enabled_activity_types",
            "nrt_inspect_config_free_activity_types",
            "nrt_inspect_config_set_activity",
        ],
    ),
    (
        "nrt_sys_trace.h",
        &[
            "nrt_sys_trace_config_allocate",
            "nrt_sys_trace_config_set_defaults",
            "nrt_sys_trace_config_free",
            "nrt_sys_trace_config_set_max_events_per_nc",
            "nrt_sys_trace_config_set_capture_enabled_for_nc",
            "nrt_sys_trace_config_set_capture_enabled_for_event_type",
            "nrt_sys_trace_get_event_types",
            "nrt_sys_trace_free_event_types",
            "nrt_sys_trace_config_get_enabled_event_types",
            "nrt_sys_trace_start",
            "nrt_sys_trace_stop",
            "nrt_sys_trace_fetch_options_allocate",
            "nrt_sys_trace_fetch_options_set_defaults",
            "nrt_sys_trace_fetch_options_free",
            "nrt_sys_trace_fetch_options_set_max_events_per_nc",
            "nrt_sys_trace_fetch_options_set_nc_idx",
            "nrt_sys_trace_fetch_events",
            "nrt_sys_trace_buffer_free",
        ],
    ),
    (
        "nrt_async.h",
        &[
            "nrta_tensor_write",
            "nrta_tensor_read",
            "nrta_tensor_copy",
            "nrta_tensor_cast",
            "nrta_tensor_compute",
            "nrta_execute_schedule",
            "nrta_cc_prepare",
            "nrta_cc_schedule",
            "nrta_is_completed",
            "nrta_get_sequence",
            "nrta_event_register_xu_completion",
            "nrta_event_register_seq_id_completion",
        ],
    ),
    (
        "nrt_async_sendrecv.h",
        &[
            "nrt_async_sendrecv_get_max_num_communicators_per_lnc",
            "nrt_async_sendrecv_get_max_num_pending_request",
            "nrt_async_sendrecv_init",
            "nrt_async_sendrecv_close",
            "nrt_async_sendrecv_connect",
            "nrt_async_sendrecv_accept",
            "nrt_async_sendrecv_test_comm",
            "nrt_async_sendrecv_send_tensor",
            "nrt_async_sendrecv_recv_tensor",
            "nrt_async_sendrecv_test_request",
            "nrt_async_sendrecv_flush",
        ],
    ),
    (
        "ndebug_stream.h",
        &[
            "nrt_debug_client_connect",
            "nrt_debug_client_connect_close",
            "nrt_debug_client_read_one_event",
        ],
    ),
    (
        "nec.h",
        &[
            "nec_inc_semaphore",
            "nec_get_dynamic_send_size_bytes",
            "nec_get_dynamic_send_offset_bytes",
            "nec_get_dynamic_recv_size_bytes",
            "nec_get_dynamic_recv_offset_bytes",
            "nec_set_recv_size_bytes",
            "nec_get_device_count",
            "nec_get_device_pci_bdf",
            "nec_get_virtual_core_size",
            "nec_get_version_info",
            "nec_build_port_and_rid_map",
            "nec_is_mla_available",
            "nec_mla_idx_to_rid",
            "nec_rid_to_mla_idx",
            "nec_get_peer_mla_idx",
            "nec_get_p2p_pod_peer_node",
            "nec_pod_node_can_access_peer_node",
            "nec_ndl_printk",
        ],
    ),
];

/// Every function name declared in `include/nrt/*.h`: an identifier with a
/// public prefix directly followed by `(` outside comments.
fn declared() -> BTreeSet<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("include/nrt");
    let mut names = BTreeSet::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        for line in text.lines().filter(|l| {
            let t = l.trim_start();
            !(t.starts_with('*')
                || t.starts_with("//")
                || t.starts_with("/*")
                || t.starts_with('#'))
        }) {
            let bytes = line.as_bytes();
            for prefix in ["nrt_", "nrta_", "nec_"] {
                for (i, _) in line.match_indices(prefix) {
                    if i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_') {
                        continue;
                    }
                    let rest = &line[i..];
                    let end = rest
                        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .unwrap_or(rest.len());
                    if rest[end..].starts_with('(') {
                        names.insert(rest[..end].to_string());
                    }
                }
            }
        }
    }
    names
}

/// The cdylib cargo built for this test run (in `deps/`, beside this test
/// executable).
fn library() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let lib = exe.parent().unwrap().join("libneffld_nrt.so");
    assert!(lib.exists(), "{} was not built", lib.display());
    lib
}

fn tool(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd)
        .args(args)
        .arg(library())
        .output()
        .unwrap_or_else(|e| panic!("{cmd} must be installed to check the library: {e}"));
    assert!(out.status.success(), "{cmd} failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The C calls the line table says a line adds that this library does not
/// build, each with why.
const NOT_BUILT: [(&str, &str); 4] = [
    ("nrt_cc_create_stream", "2.31: its signature is not public"),
    (
        "nrt_debug_log_oom_report",
        "2.33: its signature is not public",
    ),
    (
        "nrt_dump_device_allocation_info",
        "2.33: its signature and output are not public",
    ),
    ("nrt_inspect_export", "2.34: its mask's bits are not public"),
];

/// Every C call a line of the library's table adds is declared by the
/// shipped headers (and so exported), or said not to be built.
#[test]
fn the_calls_the_lines_add_are_declared() {
    let declared = declared();
    let mut unbuilt: Vec<&str> = Vec::new();
    for f in neffld::lines::FACTS {
        for &call in f.c_calls {
            if !declared.contains(call) {
                unbuilt.push(call);
            }
        }
    }
    let listed: Vec<&str> = NOT_BUILT.iter().map(|(c, _)| *c).collect();
    assert_eq!(unbuilt, listed);
}

#[test]
fn exported_symbols_are_exactly_the_declared_functions() {
    let exported: BTreeSet<String> = tool("nm", &["-D", "--defined-only"])
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
        .collect();
    let declared = declared();
    let missing: Vec<&String> = declared.difference(&exported).collect();
    let extra: Vec<&String> = exported.difference(&declared).collect();
    assert!(missing.is_empty(), "declared but not exported: {missing:?}");
    assert!(extra.is_empty(), "exported but not declared: {extra:?}");
    let sdk: BTreeSet<String> = SDK_FUNCTIONS
        .iter()
        .flat_map(|(_, names)| names.iter().map(|n| n.to_string()))
        .collect();
    assert_eq!(sdk.len(), 150);
    let not_declared: Vec<&String> = sdk.difference(&declared).collect();
    let not_sdk: Vec<&String> = declared.difference(&sdk).collect();
    assert!(
        not_declared.is_empty(),
        "in the SDK headers, not ours: {not_declared:?}"
    );
    assert!(
        not_sdk.is_empty(),
        "in our headers, not the SDK's: {not_sdk:?}"
    );
    // Each function is in the header of the same name as the SDK's.
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("include/nrt");
    for (header, names) in SDK_FUNCTIONS {
        let text = std::fs::read_to_string(dir.join(header)).unwrap();
        for n in names {
            let declared_here = [' ', '*']
                .iter()
                .any(|c| text.contains(&format!("{c}{n}(")));
            assert!(declared_here, "{n} is not declared in {header}");
        }
    }
    for f in [
        "nrt_init",
        "nrt_load",
        "nrt_profile_start",
        "nrt_profile_stop",
        "nrt_sys_trace_fetch_events",
        "nrta_execute_schedule",
        "nec_get_version_info",
        "nrt_get_version",
        "nrt_debug_client_connect",
    ] {
        assert!(exported.contains(f), "{f} is not exported");
    }
}

#[test]
fn soname_is_libnrt_so_1() {
    let dynamic = tool("readelf", &["-d"]);
    assert!(
        dynamic
            .lines()
            .any(|l| l.contains("(SONAME)") && l.contains("[libnrt.so.1]")),
        "{dynamic}"
    );
}
