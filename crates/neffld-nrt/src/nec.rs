//! The collectives-device domain (`nec.h`). Real where the simulated device
//! has the answer: it is one device (`nec_get_device_count`), its logical
//! core size is the configured one (`nec_get_virtual_core_size`), and
//! `nec_ndl_printk` logs its text. Everything about collectives hardware —
//! semaphores, dynamic send/receive sizes, MLA and routing ids, pods — has
//! no simulated counterpart: each call logs one line and returns
//! `NRT_FAILURE`, -1 (for an `int`), 0 (for a size), `false`, or nothing.

#![allow(unused_variables)]

use std::ffi::{c_char, c_int};

use tracing::info;

use crate::abi::nec::{enc_host_mem_t, nec_version_info_t, NecPodTypeArg};
use crate::abi::nrt_status::NRT_STATUS;
use crate::boundary::{guarded, guarded_value, non_null};
use crate::{state, unsupported};

/// Logs that `api` is not supported and returns `value`.
fn refuse<T>(api: &'static str, value: T) -> T {
    let _ = unsupported::call(api);
    value
}

/// Refused (logged): there are no collectives semaphores.
#[no_mangle]
pub extern "C" fn nec_inc_semaphore(sem_inc_addr: *mut u32, val: u32) {
    refuse("nec_inc_semaphore", ())
}

/// Refused (logged, 0): no collectives run.
#[no_mangle]
pub extern "C" fn nec_get_dynamic_send_size_bytes(
    dyn_input: *mut enc_host_mem_t,
    data_type_sz: usize,
    dst_rank: c_int,
    rank_n: c_int,
) -> usize {
    refuse("nec_get_dynamic_send_size_bytes", 0)
}

/// Refused (logged, 0): no collectives run.
#[no_mangle]
pub extern "C" fn nec_get_dynamic_send_offset_bytes(
    dyn_input: *mut enc_host_mem_t,
    data_type_sz: usize,
    dst_rank: c_int,
    rank_n: c_int,
) -> usize {
    refuse("nec_get_dynamic_send_offset_bytes", 0)
}

/// Refused (logged, 0): no collectives run.
#[no_mangle]
pub extern "C" fn nec_get_dynamic_recv_size_bytes(
    dyn_input: *mut enc_host_mem_t,
    data_type_sz: usize,
    src_rank: c_int,
    rank_n: c_int,
) -> usize {
    refuse("nec_get_dynamic_recv_size_bytes", 0)
}

/// Refused (logged, 0): no collectives run.
#[no_mangle]
pub extern "C" fn nec_get_dynamic_recv_offset_bytes(
    dyn_input: *mut enc_host_mem_t,
    data_type_sz: usize,
    src_rank: c_int,
    rank_n: c_int,
) -> usize {
    refuse("nec_get_dynamic_recv_offset_bytes", 0)
}

/// Refused (logged): no collectives run.
#[no_mangle]
pub extern "C" fn nec_set_recv_size_bytes(
    dyn_input: *mut enc_host_mem_t,
    recv_size_bytes: usize,
    data_type_sz: usize,
    src_rank: c_int,
    rank_n: c_int,
) {
    refuse("nec_set_recv_size_bytes", ())
}

/// The simulated machine has one device, id 0: writes it to the array (when
/// it has room) and returns 1.
///
/// # Safety
/// `available_devices_array` must be NULL or hold `array_size` writable ints.
#[no_mangle]
pub unsafe extern "C" fn nec_get_device_count(
    available_devices_array: *mut c_int,
    array_size: u32,
) -> c_int {
    guarded_value("nec_get_device_count", -1, || {
        if !available_devices_array.is_null() && array_size > 0 {
            // SAFETY: non-NULL with room for one int per this function's contract.
            unsafe { *available_devices_array = 0 };
        }
        1
    })
}

/// Refused (logged, -1): the simulated device has no PCI address.
#[no_mangle]
pub extern "C" fn nec_get_device_pci_bdf(
    neuron_dev: c_int,
    domain: *mut u32,
    bus_num: *mut u32,
    pci_slot: *mut u8,
    dev_func: *mut u8,
) -> c_int {
    refuse("nec_get_device_pci_bdf", -1)
}

/// The logical core size of the configuration (`NEURON_LOGICAL_NC_CONFIG`
/// or the architecture's default); usable before `nrt_init`.
///
/// # Safety
/// `virtual_core_size` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nec_get_virtual_core_size(virtual_core_size: *mut u32) -> NRT_STATUS {
    guarded("nec_get_virtual_core_size", || {
        non_null(
            "nec_get_virtual_core_size",
            "virtual_core_size",
            virtual_core_size,
        )?;
        let config = state::config()?;
        // SAFETY: non-NULL and writable per this function's contract.
        unsafe { *virtual_core_size = config.lnc_size() };
        Ok(())
    })
}

/// Refused (`NRT_FAILURE`): there is no collectives library to report.
#[no_mangle]
pub extern "C" fn nec_get_version_info(version_info: *mut nec_version_info_t) -> NRT_STATUS {
    unsupported::call("nec_get_version_info")
}

/// Refused (`NRT_FAILURE`): no MLA ports or routing ids.
#[no_mangle]
pub extern "C" fn nec_build_port_and_rid_map(
    local_nec_dev_id: c_int,
    mla_indexes: *mut c_int,
    host_device_ids: *mut c_int,
    count: c_int,
) -> NRT_STATUS {
    unsupported::call("nec_build_port_and_rid_map")
}

/// Refused (logged, `false`): no MLAs.
#[no_mangle]
pub extern "C" fn nec_is_mla_available(local_nec_dev_id: c_int, mla_idx: c_int) -> bool {
    refuse("nec_is_mla_available", false)
}

/// Refused (logged, -1): no routing ids.
#[no_mangle]
pub extern "C" fn nec_mla_idx_to_rid(local_nec_dev_id: c_int, mla_idx: c_int) -> c_int {
    refuse("nec_mla_idx_to_rid", -1)
}

/// Refused (logged, -1): no routing ids.
#[no_mangle]
pub extern "C" fn nec_rid_to_mla_idx(local_nec_dev_id: c_int, rid: c_int) -> c_int {
    refuse("nec_rid_to_mla_idx", -1)
}

/// Refused (logged, -1): no MLA peers.
#[no_mangle]
pub extern "C" fn nec_get_peer_mla_idx(
    local_nec_dev_id: c_int,
    mla_idx: c_int,
    port: c_int,
) -> c_int {
    refuse("nec_get_peer_mla_idx", -1)
}

/// Refused (logged, -1): no pods.
#[no_mangle]
pub extern "C" fn nec_get_p2p_pod_peer_node(
    nec_dev_id: u32,
    node: c_int,
    port_distance: u32,
    peer_node: *mut c_int,
) -> c_int {
    refuse("nec_get_p2p_pod_peer_node", -1)
}

/// Refused (`NRT_FAILURE`): no pods.
#[no_mangle]
pub extern "C" fn nec_pod_node_can_access_peer_node(
    pod_type: NecPodTypeArg,
    local_rid: u32,
    local_node_id: u32,
    remote_rid: u32,
    remote_node_id: u32,
    can_access_peer: *mut c_int,
) -> NRT_STATUS {
    unsupported::call("nec_pod_node_can_access_peer_node")
}

/// Logs the first `size` bytes of `str` (up to a NUL) at info level; the
/// `action` code is logged with it.
///
/// # Safety
/// `str` must be NULL or point to `size` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn nec_ndl_printk(str: *mut c_char, size: u32, action: u32) {
    guarded_value("nec_ndl_printk", (), || {
        if str.is_null() {
            return;
        }
        // SAFETY: `size` readable bytes per this function's contract.
        let bytes = unsafe { std::slice::from_raw_parts(str.cast::<u8>(), size as usize) };
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        info!(
            "nec_ndl_printk ({action}): {}",
            String::from_utf8_lossy(&bytes[..end])
        );
    })
}
