//! Tensor sets: named references to tensors, the inputs and outputs of an
//! execution. A set is a `Box` the caller owns until `nrt_destroy_tensor_set`;
//! it never owns the tensors it names.

use std::collections::BTreeMap;
use std::ffi::c_char;

use tracing::{error, warn};

use crate::abi::nrt::{nrt_tensor_set_t, nrt_tensor_t};
use crate::abi::nrt_status::NRT_STATUS;
use crate::boundary::{non_null, NrtResult};
use crate::handles::{self, Kind};
use crate::state;

/// The object behind a `nrt_tensor_set_t *`.
#[derive(Default)]
struct TensorSet {
    /// Name → tensor pointer (borrowed from the caller).
    tensors: BTreeMap<String, usize>,
}

/// Runs `f` on a live set, or logs and returns `NRT_INVALID`.
fn with_set<R>(
    api: &str,
    ptr: *mut nrt_tensor_set_t,
    f: impl FnOnce(&mut TensorSet) -> R,
) -> Result<R, NRT_STATUS> {
    non_null(api, "tensor_set", ptr)?;
    // SAFETY: set pointers are registered only by `allocate`, from `Box::<TensorSet>::into_raw`.
    unsafe { handles::with_live(Kind::TensorSet, ptr.cast::<TensorSet>(), f) }.ok_or_else(|| {
        error!("{api}: {ptr:p} is not a live tensor set");
        NRT_STATUS::NRT_INVALID
    })
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
    let ptr = Box::into_raw(Box::<TensorSet>::default());
    handles::register(Kind::TensorSet, ptr);
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
    let ptr = unsafe { *slot }.cast::<TensorSet>();
    if ptr.is_null() {
        return;
    }
    if handles::unregister(Kind::TensorSet, ptr) {
        // SAFETY: just removed from the registry, so this call is the only
        // owner; the pointer came from `Box::<TensorSet>::into_raw`.
        drop(unsafe { Box::from_raw(ptr) });
    } else {
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
    // SAFETY: tensor pointers are registered only from `Box::<nrt_tensor_t>::into_raw`.
    if unsafe { handles::with_live(Kind::Tensor, tensor, |_: &mut nrt_tensor_t| ()) }.is_none() {
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
