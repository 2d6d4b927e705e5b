//! The C boundary: logging set up, panics caught, statuses produced, and
//! the memory conventions of the public API (versioned structs, buffers the
//! caller releases with `free`).

use std::ffi::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

use tracing::error;

use crate::abi::nrt_status::NRT_STATUS;

/// Result of the body of an exported function: `Err` carries the status to
/// return (the body has already logged why).
pub(crate) type NrtResult = Result<(), NRT_STATUS>;

/// Runs the body of an exported function that returns a status.
pub(crate) fn guarded(api: &'static str, body: impl FnOnce() -> NrtResult) -> NRT_STATUS {
    crate::log::ensure();
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => NRT_STATUS::NRT_SUCCESS,
        Ok(Err(status)) => status,
        Err(_) => {
            error!("{api}: internal error (a panic was stopped at the C boundary)");
            NRT_STATUS::NRT_FAILURE
        }
    }
}

/// Runs the body of an exported function that returns a value; a panic
/// yields `fallback` (NULL, 0 or nothing).
pub(crate) fn guarded_value<T>(api: &'static str, fallback: T, body: impl FnOnce() -> T) -> T {
    crate::log::ensure();
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(value) => value,
        Err(_) => {
            error!("{api}: internal error (a panic was stopped at the C boundary)");
            fallback
        }
    }
}

/// Refuses a NULL argument with `NRT_INVALID`.
pub(crate) fn non_null<T>(api: &str, what: &str, ptr: *const T) -> NrtResult {
    if ptr.is_null() {
        error!("{api}: {what} is NULL");
        return Err(NRT_STATUS::NRT_INVALID);
    }
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

extern "C" {
    fn malloc(size: usize) -> *mut c_void;
    fn free(ptr: *mut c_void);
}

/// A copy of `bytes` plus a terminating NUL in memory from the C allocator,
/// for results the public API lets the caller release with `free`; NULL
/// when the allocator has no room.
pub(crate) fn c_string(bytes: &[u8]) -> *mut c_char {
    // SAFETY: `malloc` accepts any size and returns NULL or a block of at
    // least that many writable bytes.
    let p = unsafe { malloc(bytes.len() + 1) }.cast::<u8>();
    if !p.is_null() {
        // SAFETY: `p` has `len + 1` writable bytes; `bytes` is a separate Rust slice.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len());
            *p.add(bytes.len()) = 0;
        }
    }
    p.cast::<c_char>()
}

/// An array of `len` C-allocated pointers (uninitialised), NULL when the
/// allocator has no room.
pub(crate) fn c_pointer_array(len: usize) -> *mut *const c_char {
    // SAFETY: as in `c_string`; the size cannot overflow for any real length.
    unsafe { malloc(len.max(1) * std::mem::size_of::<*const c_char>()) }.cast()
}

/// Releases memory from [`c_string`] or [`c_pointer_array`].
///
/// # Safety
/// `ptr` must be NULL or come from those functions and not be freed yet.
pub(crate) unsafe fn c_free<T>(ptr: *mut T) {
    // SAFETY: per this function's contract (`free` accepts NULL).
    unsafe { free(ptr.cast::<c_void>()) }
}

/// Hands `names` to C as a `malloc`ed array of `malloc`ed strings.
///
/// # Safety
/// `out` and `count` must be NULL or writable.
pub(crate) unsafe fn hand_out_names(
    api: &str,
    names: &[&str],
    out: *mut *mut *const c_char,
    count: *mut usize,
) -> NrtResult {
    non_null(api, "the names out-pointer", out)?;
    non_null(api, "count", count)?;
    let array = c_pointer_array(names.len());
    if array.is_null() {
        error!("{api}: out of host memory");
        return Err(NRT_STATUS::NRT_RESOURCE);
    }
    for (i, name) in names.iter().enumerate() {
        let s = c_string(name.as_bytes());
        if s.is_null() {
            // SAFETY: the first `i` entries and the array came from the C allocator just above.
            unsafe { free_names(array, i) };
            error!("{api}: out of host memory");
            return Err(NRT_STATUS::NRT_RESOURCE);
        }
        // SAFETY: the array has room for `names.len()` pointers.
        unsafe { *array.add(i) = s };
    }
    // SAFETY: both non-NULL (checked) and writable per this function's contract.
    unsafe {
        *out = array;
        *count = names.len();
    }
    Ok(())
}

/// # Safety
/// `array` must be NULL or come from [`hand_out_names`] with `count` entries.
pub(crate) unsafe fn free_names(array: *mut *const c_char, count: usize) {
    if array.is_null() {
        return;
    }
    for i in 0..count {
        // SAFETY: per this function's contract.
        unsafe { c_free((*array.add(i)).cast_mut()) };
    }
    // SAFETY: per this function's contract.
    unsafe { c_free(array) };
}
