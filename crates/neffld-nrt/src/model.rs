//! Model handles: `nrt_load`, `nrt_load_collectives`, `nrt_unload` and the
//! per-model getters.
//!
//! A `nrt_model_t` is a `Box` the caller owns from a successful load until
//! `nrt_unload` (or `nrt_close`) frees it. The handle is allocated before it
//! is returned and after the runtime has registered the model; Rust aborts
//! on host memory exhaustion, so the reference runtime's leak of a
//! registered model whose handle could not be allocated cannot happen.

use std::ffi::c_void;

use neffld::api::{Collective, Model, Runtime};
use tracing::{debug, error, info};

use crate::abi::nrt_experimental::nrt_model_info_t;
use crate::abi::nrt_status::NRT_STATUS;
use crate::boundary::{guarded, non_null, write_prefix, NrtResult};
use crate::handles::{Handle, Kind};
use crate::{memory_log, state, status, trace};

/// A loaded model. Opaque to C: created by `nrt_load` / `nrt_load_collectives`,
/// owned by the caller, released only by `nrt_unload` (or by `nrt_close`,
/// which unloads and frees every model still loaded).
pub struct nrt_model {
    _private: [u8; 0],
}

/// The name C callers use for [`nrt_model`].
pub type nrt_model_t = nrt_model;

impl Handle for nrt_model {
    type Rust = Model;
    const KIND: Kind = Kind::Model;
    const NAME: &'static str = "loaded model";
}

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
    // `vnc_count` is deprecated (stage.md §2.2): -1, and the 0 and 1 old
    // callers pass, mean one logical core; the library has no such argument.
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
    // A core below -1 is refused here, before the header is read (the
    // reference reads the header first; either way `NRT_INVALID` unless the
    // header is bad too).
    let vnc = status::vnc_arg(api, req.vnc, &rt)?;
    let loaded = match req.collectives {
        None => rt.load(bytes, vnc),
        Some((id, count)) => rt.load_collectives(bytes, vnc, id, count),
    };
    let model = loaded.map_err(|e| status::load_error(api, &e))?;
    info!(
        "{api}: loaded \"{}\" as {} on {}",
        model.name,
        model.h_nn,
        placement(&rt, &model)
    );
    memory_log::loaded(&rt, &model);
    log_collectives(api, &rt, &model);
    let loaded = model.clone();
    let ptr = nrt_model::hand_out(model);
    // A close that began after the runtime registered the model has
    // unloaded it; if it also missed this handle, the handle is freed here
    // and the load reports the close (a close that drained it freed it).
    if !state::is_current(&rt) {
        error!("{api}: NRT already closed");
        drop(nrt_model::take(ptr));
        return Err(NRT_STATUS::NRT_CLOSED);
    }
    trace::model_loaded(&loaded);
    // SAFETY: non-NULL (checked above) and writable per this function's contract.
    unsafe { *out = ptr };
    Ok(())
}

/// The collectives of a model just loaded: at INFO what the memory figures
/// leave out for them, at DEBUG each one. No public struct of the SDK's
/// headers has room for them (`nrt_model_info_t` holds the logical core
/// only), so the log is where a C client sees them (docs/decisions.md,
/// "Collectives").
fn log_collectives(api: &str, rt: &Runtime, model: &Model) {
    if !tracing::enabled!(tracing::Level::INFO) {
        return;
    }
    let Ok(summary) = rt.summary(model) else {
        return;
    };
    let Some(note) = Collective::uncounted_note(&summary.collectives) else {
        return;
    };
    info!("{api}: {}: {note}", model.h_nn);
    for c in summary.collectives.iter() {
        debug!(
            "{api}: {} {} {}#{} {} {}: {} in, {} out{}{}",
            model.h_nn,
            neffld::text::escape(&c.subgraph),
            c.engine,
            c.index,
            c.form,
            c.operation,
            c.elements_in,
            c.elements_out,
            c.group.map_or(String::new(), |g| format!(", group {g}")),
            c.peer.map_or(String::new(), |p| format!(", peer rank {p}"))
        );
    }
}

/// Where a loaded model is, in the runtime's numbering and the device's:
/// `logical core 0 (the instance's logical core 2: ND 0 nc4, nc5)`.
fn placement(rt: &Runtime, model: &Model) -> String {
    let Ok(m) = rt.summary(model) else {
        return format!("logical core {}", model.vnc);
    };
    let pcores: Vec<String> = m.pcores.iter().map(|p| format!("nc{}", p.0)).collect();
    format!(
        "logical core {} (the instance's logical core {}: ND {} {})",
        m.vnc,
        m.lcore.0,
        m.device,
        pcores.join(", ")
    )
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
    let model = nrt_model::with(ptr, |m| m.clone()).ok_or_else(|| {
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
    if let Some(model) = nrt_model::take(ptr) {
        trace::model_unloaded(&model);
    }
    Ok(())
}

/// Frees every model handle still live, after `nrt_close` unloaded their
/// models; each counts as an unload for the system trace.
pub(crate) fn release_all() {
    for model in nrt_model::drain() {
        trace::model_unloaded(&model);
    }
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
    let full = nrt_model_info_t { vnc: model.vnc };
    // SAFETY: forwarded from this function's contract.
    unsafe { write_prefix(&full, info, size_in, size_out) };
    Ok(())
}

// ---- C entry points (nrt.h) ----

/// Loads `size` bytes of NEFF on logical core `vnc` (-1: the first free one).
/// `vnc_count` is deprecated: pass -1 (1 and 0 are accepted too).
///
/// On success `*model` receives a new handle the caller owns until it passes
/// it to `nrt_unload`. On failure `*model` is left untouched.
///
/// # Safety
/// `neff_bytes` must be NULL or point to `size` readable bytes; `model` must
/// be NULL or point to writable storage for one pointer.
#[no_mangle]
pub unsafe extern "C" fn nrt_load(
    neff_bytes: *const c_void,
    size: usize,
    vnc: i32,
    vnc_count: i32,
    model: *mut *mut nrt_model_t,
) -> NRT_STATUS {
    let req = LoadRequest {
        api: "nrt_load",
        neff_bytes,
        size,
        vnc,
        vnc_count,
        collectives: None,
    };
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_load", || unsafe { load(req, model) })
}

/// As `nrt_load`, for a NEFF with collective operations; records
/// `ctx_device_id` as the model's global device id.
///
/// # Safety
/// As for `nrt_load`.
#[no_mangle]
pub unsafe extern "C" fn nrt_load_collectives(
    neff_bytes: *const c_void,
    size: usize,
    vnc: i32,
    vnc_count: i32,
    ctx_device_id: u32,
    ctx_device_count: u32,
    model: *mut *mut nrt_model_t,
) -> NRT_STATUS {
    let req = LoadRequest {
        api: "nrt_load_collectives",
        neff_bytes,
        size,
        vnc,
        vnc_count,
        collectives: Some((ctx_device_id, ctx_device_count)),
    };
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_load_collectives", || unsafe { load(req, model) })
}

/// Unloads a model and frees its handle. NULL gives `NRT_INVALID`; a pointer
/// that is not a live handle (already unloaded, freed by `nrt_close`, or
/// never returned by a load) gives `NRT_INVALID_HANDLE` and is not touched.
/// If the unload fails before the model is removed, the handle stays valid.
///
/// # Safety
/// `model` may be any pointer value; it is only dereferenced when it is a
/// live handle of this library.
#[no_mangle]
pub unsafe extern "C" fn nrt_unload(model: *mut nrt_model_t) -> NRT_STATUS {
    guarded("nrt_unload", || unload(model))
}

/// Writes 1 to `*vnc_count`: a model occupies one logical core. Deprecated.
///
/// # Safety
/// `vnc_count` must be NULL or writable; `model` as for `nrt_unload`.
#[no_mangle]
pub unsafe extern "C" fn nrt_get_model_nc_count(
    model: *const nrt_model_t,
    vnc_count: *mut u32,
) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_get_model_nc_count", || unsafe {
        self::vnc_count(model, vnc_count)
    })
}

/// Same as `nrt_get_model_nc_count`. Deprecated.
///
/// # Safety
/// As for `nrt_get_model_nc_count`.
#[no_mangle]
pub unsafe extern "C" fn nrt_get_model_vnc_count(
    model: *const nrt_model_t,
    vnc_count: *mut u32,
) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_get_model_vnc_count", || unsafe {
        self::vnc_count(model, vnc_count)
    })
}
