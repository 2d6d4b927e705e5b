//! Model handles: `nrt_load`, `nrt_load_collectives`, `nrt_unload` and the
//! per-model getters.
//!
//! A `nrt_model_t` is a `Box` the caller owns from a successful load until
//! `nrt_unload` (or `nrt_close`) frees it. The handle is allocated before it
//! is returned and after the runtime has registered the model; Rust aborts
//! on host memory exhaustion, so the reference runtime's leak of a
//! registered model whose handle could not be allocated cannot happen.

use std::ffi::c_void;

use neffld::api::{Model, Runtime};
use tracing::{error, info};

use crate::abi::nrt::nrt_model_t;
use crate::abi::nrt_experimental::nrt_model_info_t;
use crate::abi::nrt_status::NRT_STATUS;
use crate::boundary::{non_null, NrtResult};
use crate::handles::{self, Kind};
use crate::{state, status};

/// The arguments of one load call.
pub(crate) struct LoadRequest {
    pub api: &'static str,
    pub neff_bytes: *const c_void,
    pub size: usize,
    pub vnc: i32,
    pub vnc_count: i32,
    /// `(ctx_device_id, ctx_device_count)` for `nrt_load_collectives`.
    pub collectives: Option<(u32, u32)>,
}

/// Loads a NEFF and hands out a new model handle. The order of the checks is
/// the reference order (stage.md §2.3): `vnc_count`, then the runtime state,
/// then the arguments, then the runtime's own guard and pipeline.
///
/// # Safety
/// `req.neff_bytes` must be NULL or point to `req.size` readable bytes; `out`
/// must be NULL or writable.
pub(crate) unsafe fn load(req: LoadRequest, out: *mut *mut nrt_model_t) -> NrtResult {
    let api = req.api;
    if !matches!(req.vnc_count, -1..=1) {
        error!("vnc_count is deprecated. only use -1.");
        return Err(NRT_STATUS::NRT_INVALID);
    }
    let rt = state::runtime()?;
    if req.neff_bytes.is_null() {
        error!("Invalid NEFF buffer");
        return Err(NRT_STATUS::NRT_INVALID);
    }
    non_null(api, "the model out-pointer", out)?;
    if req.size > isize::MAX as usize {
        error!("Invalid number of NEFF bytes received {:x}", req.size);
        return Err(NRT_STATUS::NRT_INVALID);
    }
    // SAFETY: non-NULL, `size` readable bytes per this function's contract,
    // and `size` fits an isize.
    let bytes = unsafe { std::slice::from_raw_parts(req.neff_bytes.cast::<u8>(), req.size) };
    let loaded = match req.collectives {
        None => rt.load(bytes, req.vnc, req.vnc_count),
        Some((id, count)) => rt.load_collectives(bytes, req.vnc, req.vnc_count, id, count),
    };
    let model = loaded.map_err(|e| status::load_error(api, &e))?;
    info!(
        "{api}: loaded \"{}\" as {} on {}",
        model.name, model.h_nn, model.vnc
    );
    let ptr = Box::into_raw(Box::new(nrt_model_t { model }));
    handles::register(Kind::Model, ptr);
    // A close that began after the runtime registered the model has
    // unloaded it; if it also missed this handle, the handle is freed here
    // and the load reports the close (a close that drained it freed it).
    if !state::is_current(&rt) {
        error!("{api}: NRT already closed");
        if handles::unregister(Kind::Model, ptr) {
            // SAFETY: just removed from the registry, so this call is the
            // only owner; the pointer came from `Box::into_raw` above.
            drop(unsafe { Box::from_raw(ptr) });
        }
        return Err(NRT_STATUS::NRT_CLOSED);
    }
    // SAFETY: non-NULL (checked above) and writable per this function's contract.
    unsafe { *out = ptr };
    Ok(())
}

/// A copy of the model behind a handle, or `NRT_INVALID` (NULL) /
/// `NRT_INVALID_HANDLE` (not a live handle, or one `rt` did not load: a
/// handle from before a re-init never reaches the new runtime's models).
pub(crate) fn lookup(
    api: &str,
    rt: &Runtime,
    ptr: *const nrt_model_t,
) -> Result<Model, NRT_STATUS> {
    if ptr.is_null() {
        error!("{api}: Invalid model handle");
        return Err(NRT_STATUS::NRT_INVALID);
    }
    // SAFETY: model pointers are registered only by `load`, from `Box::<nrt_model_t>::into_raw`.
    let model =
        unsafe { handles::with_live(Kind::Model, ptr, |m: &mut nrt_model_t| m.model.clone()) }
            .ok_or_else(|| {
                error!("{api}: Failed to find model: {ptr:p} is not a loaded model");
                NRT_STATUS::NRT_INVALID_HANDLE
            })?;
    if model.runtime != rt.generation() {
        error!(
            "{api}: Failed to find model: {ptr:p} was loaded by {}, not by the current {}",
            model.runtime,
            rt.generation()
        );
        return Err(NRT_STATUS::NRT_INVALID_HANDLE);
    }
    Ok(model)
}

/// `nrt_unload`. The runtime's registry erase is the commit point
/// (stage.md §11): if the runtime refuses the unload, the handle stays live
/// and valid; once it succeeds, the handle is removed and freed exactly once.
pub(crate) fn unload(ptr: *mut nrt_model_t) -> NrtResult {
    let rt = state::runtime()?;
    let model = lookup("nrt_unload", &rt, ptr)?;
    info!("Unloading {}", model.h_nn);
    rt.unload(&model)
        .map_err(|e| status::load_error("nrt_unload", &e))?;
    if handles::unregister(Kind::Model, ptr) {
        // SAFETY: just removed from the registry, so this call is the only
        // owner; the pointer came from `Box::<nrt_model_t>::into_raw` in `load`.
        drop(unsafe { Box::from_raw(ptr) });
    }
    Ok(())
}

/// The deprecated count getters: a model occupies one logical core.
///
/// # Safety
/// `out` must be NULL or writable.
pub(crate) unsafe fn vnc_count(ptr: *const nrt_model_t, out: *mut u32) -> NrtResult {
    let rt = state::runtime()?;
    lookup("nrt_get_model_vnc_count", &rt, ptr)?;
    non_null("nrt_get_model_vnc_count", "the output pointer", out)?;
    // SAFETY: non-NULL and writable per this function's contract.
    unsafe { *out = 1 };
    Ok(())
}

/// `nrt_get_model_info`: writes at most `size_in` bytes of the info.
///
/// # Safety
/// `info` must be NULL or point to `size_in` writable bytes; `size_out` must
/// be NULL or writable.
pub(crate) unsafe fn info(
    ptr: *const nrt_model_t,
    info: *mut nrt_model_info_t,
    size_in: usize,
    size_out: *mut usize,
) -> NrtResult {
    let rt = state::runtime()?;
    let model = lookup("nrt_get_model_info", &rt, ptr)?;
    non_null("nrt_get_model_info", "info", info)?;
    let lcore = model.vnc.0;
    let vnc = match &rt.config().visible_cores {
        Some(list) => list.iter().position(|&c| c == lcore).unwrap_or(0) as u32,
        None => lcore,
    };
    let full = nrt_model_info_t { vnc };
    // SAFETY: forwarded from this function's contract.
    unsafe { write_prefix(&full, info, size_in, size_out) };
    Ok(())
}

/// Copies the first `min(size_in, size_of::<T>())` bytes of `value` to `dst`
/// and stores that count in `*size_out` (when not NULL): the versioned-struct
/// convention of the public API.
///
/// # Safety
/// `dst` must point to `size_in` writable bytes; `size_out` must be NULL or writable.
pub(crate) unsafe fn write_prefix<T: Copy>(
    value: &T,
    dst: *mut T,
    size_in: usize,
    size_out: *mut usize,
) {
    let n = size_in.min(std::mem::size_of::<T>());
    // SAFETY: `value` has size_of::<T>() readable bytes, `dst` has `size_in`
    // writable bytes, n is at most both, and they cannot overlap (`value` is
    // a Rust reference to our own copy).
    unsafe { std::ptr::copy_nonoverlapping((value as *const T).cast::<u8>(), dst.cast::<u8>(), n) };
    if !size_out.is_null() {
        // SAFETY: non-NULL and writable per this function's contract.
        unsafe { *size_out = n };
    }
}
