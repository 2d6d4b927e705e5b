//! The runtime domain: `nrt_init` / `nrt_close` (over [`crate::state`]),
//! core counts, instance information and memory statistics. The counts and
//! the instance information work before `nrt_init` (from the environment's
//! configuration); memory statistics need the runtime.

use neffld::instance::Geometry;
use neffld::instance::Instance;
use neffld::Arch;

use crate::abi::nrt::{
    nrt_instance_info_t, nrt_vnc_memory_stats_t, NRT_INSTANCE_INF2, NRT_INSTANCE_SIZE_1XL,
    NRT_INSTANCE_SIZE_24XL, NRT_INSTANCE_SIZE_2XL, NRT_INSTANCE_SIZE_32XL, NRT_INSTANCE_SIZE_3XL,
    NRT_INSTANCE_SIZE_48XL, NRT_INSTANCE_SIZE_8XL, NRT_INSTANCE_SIZE_UNKNOWN, NRT_INSTANCE_TRN1,
    NRT_INSTANCE_TRN1N, NRT_INSTANCE_TRN2, NRT_INSTANCE_TRN2U, NRT_INSTANCE_TRN3,
    NRT_INSTANCE_UNKNOWN,
};
use std::ffi::c_char;

use crate::abi::nrt::NrtFrameworkArg;
use crate::abi::nrt_status::NRT_STATUS;
use crate::boundary::{guarded, guarded_value, non_null, write_prefix, NrtResult};
use crate::model;
use crate::{state, status};
use tracing::error;

/// # Safety
/// `out` must be NULL or writable.
unsafe fn put(api: &str, out: *mut u32, value: u32) -> NrtResult {
    non_null(api, "vnc_count", out)?;
    // SAFETY: non-NULL and writable per this function's contract.
    unsafe { *out = value };
    Ok(())
}

/// Logical cores on the instance (every chip).
///
/// # Safety
/// `out` must be NULL or writable.
pub(crate) unsafe fn total(out: *mut u32) -> NrtResult {
    let config = state::config()?;
    // SAFETY: forwarded from this function's contract.
    unsafe { put("nrt_get_total_vnc_count", out, config.total_vnc_count()) }
}

/// Logical cores visible to this process.
///
/// # Safety
/// `out` must be NULL or writable.
pub(crate) unsafe fn visible(out: *mut u32) -> NrtResult {
    const API: &str = "nrt_get_visible_vnc_count";
    let config = state::config()?;
    // The check `nrt_init` makes, so the count never names cores it refuses.
    let visible = config
        .logical_cores(
            &Geometry::for_arch(config.topology.arch),
            config.topology.chips.max(1),
        )
        .map_err(|e| {
            error!("{API}: {e}");
            status::from_core(e.status())
        })?;
    // SAFETY: forwarded from this function's contract.
    unsafe { put(API, out, visible.len() as u32) }
}

/// `nrt_get_instance_info`.
///
/// # Safety
/// `info` must be NULL or point to `len` writable bytes.
pub(crate) unsafe fn instance_info(info: *mut nrt_instance_info_t, len: usize) -> NrtResult {
    non_null("nrt_get_instance_info", "info", info)?;
    let config = state::config()?;
    let (family, size) = config.topology.instance.map_or(
        (
            family_of_arch(config.topology.arch),
            NRT_INSTANCE_SIZE_UNKNOWN,
        ),
        codes,
    );
    let mut full = nrt_instance_info_t {
        family,
        size,
        arch_name: [0; 16],
        device_revision: [0; 8],
    };
    for (dst, &b) in full
        .arch_name
        .iter_mut()
        .zip(config.topology.arch.instance().as_bytes().iter().take(15))
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
    let s =
        neffld::report::MemoryStats::of_vnc(&rt, vnc).map_err(|e| status::load_error(API, &e))?;
    let full = nrt_vnc_memory_stats_t {
        bytes_used: s.used as usize,
        bytes_limit: s.limit as usize,
    };
    // SAFETY: forwarded from this function's contract.
    unsafe { write_prefix(&full, stats, size_in, size_out) };
    Ok(())
}

fn family_of_arch(arch: Arch) -> u32 {
    match arch {
        Arch::Sunda => NRT_INSTANCE_TRN1,
        Arch::Cayman => NRT_INSTANCE_TRN2,
        Arch::Mariana => NRT_INSTANCE_TRN3,
        // A chip the library gains before this header names it.
        _ => NRT_INSTANCE_UNKNOWN,
    }
}

/// The header's family and size codes of an instance of the catalog.
fn codes(i: &Instance) -> (u32, u32) {
    let family = match i.family {
        "trn1n" => NRT_INSTANCE_TRN1N,
        "inf2" => NRT_INSTANCE_INF2,
        "trn2u" => NRT_INSTANCE_TRN2U,
        _ => family_of_arch(i.arch),
    };
    let size = match i.size {
        "xlarge" => NRT_INSTANCE_SIZE_1XL,
        "2xlarge" => NRT_INSTANCE_SIZE_2XL,
        "3xlarge" => NRT_INSTANCE_SIZE_3XL,
        "8xlarge" => NRT_INSTANCE_SIZE_8XL,
        "24xlarge" => NRT_INSTANCE_SIZE_24XL,
        "32xlarge" => NRT_INSTANCE_SIZE_32XL,
        "48xlarge" => NRT_INSTANCE_SIZE_48XL,
        _ => NRT_INSTANCE_SIZE_UNKNOWN,
    };
    (family, size)
}

// ---- C entry points (nrt.h) ----

/// Fills `info` (up to `instance_info_len` bytes of it) with the simulated
/// instance: family and size of `NEFFLD_INSTANCE`, else the family of
/// `NEFFLD_ARCH` with the size unknown.
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
        instance_info(info, instance_info_len)
    })
}

/// Starts the runtime: reads the configuration (`NEFFLD_DEVICE`,
/// `NEFFLD_INSTANCE`, `NEFFLD_ARCH`, `NEURON_RT_*`) and creates the
/// simulated devices (one per chip of the instance).
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
    guarded_value("nrt_close", (), || {
        // A forked child's runtime is its parent's: nothing to close.
        if state::child().is_err() {
            return;
        }
        state::close();
        model::release_all();
        crate::nrta::forget_registrations();
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
    guarded("nrt_get_total_nc_count", || unsafe { total(vnc_count) })
}

/// Logical cores on the (simulated) device; may be called before `nrt_init`.
///
/// # Safety
/// `vnc_count` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_get_total_vnc_count(vnc_count: *mut u32) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_get_total_vnc_count", || unsafe { total(vnc_count) })
}

/// Logical cores this process may use (`NEURON_RT_VISIBLE_CORES`).
/// Deprecated name; may be called before `nrt_init`.
///
/// # Safety
/// `vnc_count` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_get_visible_nc_count(vnc_count: *mut u32) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_get_visible_nc_count", || unsafe { visible(vnc_count) })
}

/// Logical cores this process may use; may be called before `nrt_init`.
///
/// # Safety
/// `vnc_count` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_get_visible_vnc_count(vnc_count: *mut u32) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_get_visible_vnc_count", || unsafe {
        visible(vnc_count)
    })
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
        memory_stats(vnc, stats, stats_size_in, stats_size_out)
    })
}
