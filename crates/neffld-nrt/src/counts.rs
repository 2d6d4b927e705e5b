//! Core counts, instance information and memory statistics. The counts and
//! the instance information work before `nrt_init` (from the environment's
//! configuration); memory statistics need the runtime.

use neffld::device::Geometry;
use neffld::Arch;

use crate::abi::nrt::{
    nrt_instance_info_t, nrt_vnc_memory_stats_t, NRT_INSTANCE_SIZE_UNKNOWN, NRT_INSTANCE_TRN1,
    NRT_INSTANCE_TRN2, NRT_INSTANCE_TRN3,
};
use crate::boundary::{non_null, NrtResult};
use crate::model::write_prefix;
use crate::{state, status};

/// # Safety
/// `out` must be NULL or writable.
unsafe fn put(api: &str, out: *mut u32, value: u32) -> NrtResult {
    non_null(api, "vnc_count", out)?;
    // SAFETY: non-NULL and writable per this function's contract.
    unsafe { *out = value };
    Ok(())
}

/// Logical cores on the device.
///
/// # Safety
/// `out` must be NULL or writable.
pub(crate) unsafe fn total(out: *mut u32) -> NrtResult {
    let config = state::config()?;
    let lnc = config.lnc_size().max(1);
    let total = Geometry::for_arch(config.arch).cores() / lnc;
    // SAFETY: forwarded from this function's contract.
    unsafe { put("nrt_get_total_vnc_count", out, total) }
}

/// Logical cores visible to this process.
///
/// # Safety
/// `out` must be NULL or writable.
pub(crate) unsafe fn visible(out: *mut u32) -> NrtResult {
    let config = state::config()?;
    let lnc = config.lnc_size().max(1);
    let total = Geometry::for_arch(config.arch).cores() / lnc;
    let visible = config
        .visible_cores
        .as_ref()
        .map_or(total, |list| list.len() as u32);
    // SAFETY: forwarded from this function's contract.
    unsafe { put("nrt_get_visible_vnc_count", out, visible) }
}

/// `nrt_get_instance_info`.
///
/// # Safety
/// `info` must be NULL or point to `len` writable bytes.
pub(crate) unsafe fn instance_info(info: *mut nrt_instance_info_t, len: usize) -> NrtResult {
    non_null("nrt_get_instance_info", "info", info)?;
    let config = state::config()?;
    let family = match config.arch {
        Arch::Sunda => NRT_INSTANCE_TRN1,
        Arch::Cayman => NRT_INSTANCE_TRN2,
        Arch::Mariana => NRT_INSTANCE_TRN3,
    };
    let mut full = nrt_instance_info_t {
        family,
        size: NRT_INSTANCE_SIZE_UNKNOWN,
        arch_name: [0; 16],
        device_revision: [0; 8],
    };
    for (dst, &b) in full
        .arch_name
        .iter_mut()
        .zip(config.arch.instance().as_bytes().iter().take(15))
    {
        *dst = b as _;
    }
    // SAFETY: forwarded from this function's contract.
    unsafe { write_prefix(&full, info, len, std::ptr::null_mut()) };
    Ok(())
}

/// `nrt_get_vnc_memory_stats`.
///
/// # Safety
/// `stats` must be NULL or point to `size_in` writable bytes; `size_out`
/// must be NULL or writable.
pub(crate) unsafe fn memory_stats(
    vnc: u32,
    stats: *mut nrt_vnc_memory_stats_t,
    size_in: usize,
    size_out: *mut usize,
) -> NrtResult {
    const API: &str = "nrt_get_vnc_memory_stats";
    let rt = state::runtime()?;
    non_null(API, "stats", stats)?;
    let s = rt
        .memory_stats(vnc)
        .map_err(|e| status::load_error(API, &e))?;
    let full = nrt_vnc_memory_stats_t {
        bytes_used: s.used as usize,
        bytes_limit: s.limit as usize,
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { write_prefix(&full, stats, size_in, size_out) };
    Ok(())
}
