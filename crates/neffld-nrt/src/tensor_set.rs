//! Tensor sets: named references to tensors, the inputs and outputs of an
//! execution. A set is a `Box` the caller owns until `nrt_destroy_tensor_set`;
//! it never owns the tensors it names.

use std::collections::BTreeMap;
use std::ffi::{c_char, c_void};

use tracing::{error, warn};

use crate::abi::nrt_status::NRT_STATUS;
use crate::boundary::{guarded, guarded_value, non_null, NrtResult};
use crate::handles::{Handle, Kind};
use crate::state;
use crate::tensor::{nrt_tensor, nrt_tensor_t};

/// A set of named tensors (inputs or outputs of an execution). Opaque to C
/// (the header spells it `void`); created by `nrt_allocate_tensor_set`,
/// freed by `nrt_destroy_tensor_set`.
pub type nrt_tensor_set_t = c_void;

/// The handle type behind a `nrt_tensor_set_t *` (C sees `void`).
pub(crate) struct TensorSetHandle {
    _private: [u8; 0],
}

impl Handle for TensorSetHandle {
    type Rust = TensorSet;
    const KIND: Kind = Kind::TensorSet;
    const NAME: &'static str = "tensor set";
}

/// The object behind a `nrt_tensor_set_t *`.
#[derive(Default)]
pub(crate) struct TensorSet {
    /// Name → tensor pointer (borrowed from the caller).
    tensors: BTreeMap<String, usize>,
}

/// Runs `f` on a live set, or logs and returns `NRT_INVALID`.
fn with_set<R>(
    api: &str,
    ptr: *mut nrt_tensor_set_t,
    f: impl FnOnce(&mut TensorSet) -> R,
) -> Result<R, NRT_STATUS> {
    TensorSetHandle::with_arg(api, "tensor_set", ptr.cast::<TensorSetHandle>(), f)
}

/// # Safety
/// `name` must be NULL or NUL-terminated.
unsafe fn name_arg(api: &str, name: *const c_char) -> Result<String, NRT_STATUS> {
    non_null(api, "tensor_name", name)?;
    // SAFETY: forwarded from this function's contract.
    Ok(unsafe { state::lossy(name) }.unwrap_or_default())
}

/// `nrt_allocate_tensor_set`.
///
/// # Safety
/// `out` must be NULL or writable.
pub(crate) unsafe fn allocate(out: *mut *mut nrt_tensor_set_t) -> NrtResult {
    non_null("nrt_allocate_tensor_set", "result", out)?;
    let ptr = TensorSetHandle::hand_out(TensorSet::default());
    // SAFETY: non-NULL (checked) and writable per this function's contract.
    unsafe { *out = ptr.cast::<nrt_tensor_set_t>() };
    Ok(())
}

/// `nrt_destroy_tensor_set`.
///
/// # Safety
/// `slot` must be NULL or point to a readable and writable pointer.
pub(crate) unsafe fn destroy(slot: *mut *mut nrt_tensor_set_t) {
    if slot.is_null() {
        return;
    }
    // SAFETY: non-NULL and readable per this function's contract.
    let ptr = unsafe { *slot }.cast::<TensorSetHandle>();
    if ptr.is_null() {
        return;
    }
    if TensorSetHandle::take(ptr).is_none() {
        warn!("nrt_destroy_tensor_set: {ptr:p} is not a live tensor set; ignored");
    }
    // SAFETY: writable per this function's contract.
    unsafe { *slot = std::ptr::null_mut() };
}

/// `nrt_add_tensor_to_tensor_set`.
///
/// # Safety
/// `name` must be NULL or NUL-terminated.
pub(crate) unsafe fn add(
    set: *mut nrt_tensor_set_t,
    name: *const c_char,
    tensor: *mut nrt_tensor_t,
) -> NrtResult {
    const API: &str = "nrt_add_tensor_to_tensor_set";
    // SAFETY: forwarded from this function's contract.
    let name = unsafe { name_arg(API, name) }?;
    non_null(API, "tensor", tensor)?;
    if nrt_tensor::with(tensor, |_| ()).is_none() {
        error!("{API}: {tensor:p} is not a live tensor");
        return Err(NRT_STATUS::NRT_INVALID);
    }
    with_set(API, set, |s| {
        s.tensors.insert(name, tensor as usize);
    })
}

/// `nrt_get_tensor_from_tensor_set`.
///
/// # Safety
/// `name` must be NULL or NUL-terminated; `out` must be NULL or writable.
pub(crate) unsafe fn get(
    set: *mut nrt_tensor_set_t,
    name: *const c_char,
    out: *mut *mut nrt_tensor_t,
) -> NrtResult {
    const API: &str = "nrt_get_tensor_from_tensor_set";
    // SAFETY: forwarded from this function's contract.
    let name = unsafe { name_arg(API, name) }?;
    non_null(API, "tensor", out)?;
    let found = with_set(API, set, |s| s.tensors.get(&name).copied())?;
    let Some(tensor) = found else {
        error!("{API}: no tensor named {name:?} in the set");
        return Err(NRT_STATUS::NRT_INVALID);
    };
    // SAFETY: non-NULL (checked) and writable per this function's contract.
    unsafe { *out = tensor as *mut nrt_tensor_t };
    Ok(())
}

/// The name → tensor pairs of a live set, in name order (for `nrt_execute`).
pub(crate) fn entries(
    api: &str,
    set: *const nrt_tensor_set_t,
) -> Result<Vec<(String, *const nrt_tensor_t)>, NRT_STATUS> {
    with_set(api, set.cast_mut(), |s| {
        s.tensors
            .iter()
            .map(|(n, &p)| (n.clone(), p as *const nrt_tensor_t))
            .collect()
    })
}

// ---- C entry points (nrt.h) ----

/// Creates an empty tensor set; `*result` receives it (owned by the caller
/// until `nrt_destroy_tensor_set`).
///
/// # Safety
/// `result` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_allocate_tensor_set(result: *mut *mut nrt_tensor_set_t) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_allocate_tensor_set", || unsafe { allocate(result) })
}

/// Frees a tensor set (not the tensors in it) and sets `*tensor_set` to NULL.
/// NULL, or a pointer that is not a live set, is ignored.
///
/// # Safety
/// `tensor_set` must be NULL or point to a readable and writable pointer.
#[no_mangle]
pub unsafe extern "C" fn nrt_destroy_tensor_set(tensor_set: *mut *mut nrt_tensor_set_t) {
    // SAFETY: forwarded from this function's contract.
    guarded_value("nrt_destroy_tensor_set", (), || unsafe {
        destroy(tensor_set)
    })
}

/// Adds `tensor` under `tensor_name`, replacing a tensor of that name. The set
/// only refers to the tensor: it must stay allocated while the set is used.
///
/// # Safety
/// `tensor_name` must be NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn nrt_add_tensor_to_tensor_set(
    tensor_set: *mut nrt_tensor_set_t,
    tensor_name: *const c_char,
    tensor: *mut nrt_tensor_t,
) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_add_tensor_to_tensor_set", || unsafe {
        add(tensor_set, tensor_name, tensor)
    })
}

/// Looks a tensor up by name; `*tensor` receives the pointer that was added
/// (still owned by whoever allocated it). An unknown name gives `NRT_INVALID`.
///
/// # Safety
/// `tensor_name` must be NULL or a NUL-terminated string; `tensor` must be
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_get_tensor_from_tensor_set(
    tensor_set: *mut nrt_tensor_set_t,
    tensor_name: *const c_char,
    tensor: *mut *mut nrt_tensor_t,
) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_get_tensor_from_tensor_set", || unsafe {
        get(tensor_set, tensor_name, tensor)
    })
}
