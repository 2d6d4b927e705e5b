//! The model-information domain of `nrt_experimental.h`: tensor
//! information (`nrt_get_model_tensor_info` / `nrt_free_model_tensor_info`),
//! the instance count and `nrt_get_model_info`.
//!
//! The array is one allocation: the 8-byte count followed by `count` entries
//! of 296 bytes. Each non-empty shape is a separate boxed `[u32]` of `ndim`
//! elements. Both are owned by the caller between the two calls and released
//! only by `nrt_free_model_tensor_info`, which finds every size it needs in
//! the array itself (`tensor_count`, each `ndim`).

use std::alloc::{self, Layout};
use std::ffi::c_char;

use neffld::api::{TensorInfo, TensorUsage};
use tracing::{error, warn};

use crate::abi::nrt::{nrt_dtype, nrt_dtype_t};
use crate::abi::nrt_experimental::{
    nrt_model_info_t, nrt_tensor_info_array_t, nrt_tensor_info_t, nrt_tensor_usage_t,
    NRT_TENSOR_NAME_MAX,
};
use crate::abi::nrt_status::NRT_STATUS;
use crate::boundary::{guarded, non_null, NrtResult};
use crate::handles::{self, Kind};
use crate::model::{self, nrt_model_t};
use crate::{state, status};

/// Layout of an array of `count` entries.
fn array_layout(count: usize) -> Option<Layout> {
    let header = Layout::new::<nrt_tensor_info_array_t>();
    let entries = Layout::array::<nrt_tensor_info_t>(count).ok()?;
    let (layout, offset) = header.extend(entries).ok()?;
    debug_assert_eq!(
        offset,
        std::mem::offset_of!(nrt_tensor_info_array_t, tensor_array)
    );
    Some(layout.pad_to_align())
}

/// The C dtype of a neffld dtype code (the same numbering); codes the header
/// does not name become `NRT_DTYPE_UNKNOWN`.
pub(crate) fn c_dtype(code: u32) -> nrt_dtype_t {
    use nrt_dtype::*;
    match code {
        1 => NRT_DTYPE_UINT64,
        2 => NRT_DTYPE_INT8,
        3 => NRT_DTYPE_UINT8,
        4 => NRT_DTYPE_INT16,
        5 => NRT_DTYPE_UINT16,
        6 => NRT_DTYPE_BFLOAT16,
        7 => NRT_DTYPE_FLOAT16,
        8 => NRT_DTYPE_INT32,
        9 => NRT_DTYPE_UINT32,
        10 => NRT_DTYPE_FLOAT32,
        11 => NRT_DTYPE_FP32R,
        12 => NRT_DTYPE_INT64,
        13 => NRT_DTYPE_FP8_E3,
        14 => NRT_DTYPE_FP8_E4,
        15 => NRT_DTYPE_FP8_E5,
        _ => NRT_DTYPE_UNKNOWN,
    }
}

/// One C entry; the shape is moved into a leaked box the entry now owns.
fn entry(t: &TensorInfo) -> Result<nrt_tensor_info_t, NRT_STATUS> {
    let mut name = [0 as c_char; NRT_TENSOR_NAME_MAX];
    let bytes = t.name.as_bytes();
    if bytes.len() >= NRT_TENSOR_NAME_MAX {
        warn!(
            "tensor name {:?} is longer than {} bytes; truncated",
            t.name,
            NRT_TENSOR_NAME_MAX - 1
        );
    }
    for (dst, &b) in name
        .iter_mut()
        .zip(bytes.iter().take(NRT_TENSOR_NAME_MAX - 1))
    {
        *dst = b as c_char;
    }
    let size = usize::try_from(t.size).map_err(|_| {
        error!(
            "tensor {:?}: {} bytes do not fit this platform's size_t",
            t.name, t.size
        );
        NRT_STATUS::NRT_FAILURE
    })?;
    let ndim = t.shape.len() as u32;
    let shape = if t.shape.is_empty() {
        std::ptr::null_mut()
    } else {
        Box::into_raw(t.shape.clone().into_boxed_slice()).cast::<u32>()
    };
    Ok(nrt_tensor_info_t {
        name,
        usage: match t.usage {
            TensorUsage::Input => nrt_tensor_usage_t::NRT_TENSOR_USAGE_INPUT,
            TensorUsage::Output => nrt_tensor_usage_t::NRT_TENSOR_USAGE_OUTPUT,
        },
        size,
        dtype: c_dtype(t.dtype.code()),
        shape,
        ndim,
    })
}

/// Frees the shape of an entry built by [`entry`].
///
/// # Safety
/// `e` must come from [`entry`] and its shape must not be freed yet.
unsafe fn free_shape(e: &nrt_tensor_info_t) {
    if !e.shape.is_null() {
        let slice = std::ptr::slice_from_raw_parts_mut(e.shape, e.ndim as usize);
        // SAFETY: the shape was made by `Box::<[u32]>::into_raw` of `ndim` elements in `entry`.
        drop(unsafe { Box::from_raw(slice) });
    }
}

/// `nrt_get_model_tensor_info`.
///
/// # Safety
/// `out` must be NULL or writable.
pub(crate) unsafe fn get(
    ptr: *mut nrt_model_t,
    out: *mut *mut nrt_tensor_info_array_t,
) -> NrtResult {
    const API: &str = "nrt_get_model_tensor_info";
    let rt = state::runtime()?;
    let model = model::lookup(API, &rt, ptr)?;
    non_null(API, "the tensor info out-pointer", out)?;
    let tensors = rt
        .tensor_info(&model)
        .map_err(|e| status::load_error(API, &e))?;
    let mut entries = Vec::with_capacity(tensors.len());
    for t in tensors.iter() {
        match entry(t) {
            Ok(e) => entries.push(e),
            Err(s) => {
                for e in &entries {
                    // SAFETY: built by `entry` just above, not freed yet.
                    unsafe { free_shape(e) };
                }
                return Err(s);
            }
        }
    }
    let layout = array_layout(entries.len()).ok_or_else(|| {
        error!("{API}: {} tensors are too many to describe", entries.len());
        NRT_STATUS::NRT_FAILURE
    })?;
    // SAFETY: the layout has a non-zero size (it holds at least the count).
    let array = unsafe { alloc::alloc(layout) }.cast::<nrt_tensor_info_array_t>();
    if array.is_null() {
        alloc::handle_alloc_error(layout);
    }
    // SAFETY: `array` is a fresh allocation of `layout`, which holds the
    // count and `entries.len()` entries at the offsets of the C struct.
    unsafe {
        std::ptr::addr_of_mut!((*array).tensor_count).write(entries.len() as u64);
        let first = std::ptr::addr_of_mut!((*array).tensor_array).cast::<nrt_tensor_info_t>();
        std::ptr::copy_nonoverlapping(entries.as_ptr(), first, entries.len());
    }
    handles::register(Kind::TensorInfo, array);
    // SAFETY: non-NULL (checked above) and writable per this function's contract.
    unsafe { *out = array };
    Ok(())
}

/// `nrt_free_model_tensor_info`.
pub(crate) fn free(array: *mut nrt_tensor_info_array_t) -> NrtResult {
    const API: &str = "nrt_free_model_tensor_info";
    non_null(API, "tensor_info", array)?;
    if !handles::unregister(Kind::TensorInfo, array) {
        error!(
            "{API}: {array:p} is not a tensor info array of this library (or was already freed)"
        );
        return Err(NRT_STATUS::NRT_INVALID);
    }
    // SAFETY: the array was live (so built by `get`, with a valid count and
    // entries) and is now unregistered, so this call is its only owner.
    unsafe {
        let count = (*array).tensor_count as usize;
        let first = std::ptr::addr_of!((*array).tensor_array).cast::<nrt_tensor_info_t>();
        for i in 0..count {
            free_shape(&*first.add(i));
        }
        let layout = array_layout(count).expect("the layout was valid when the array was built");
        alloc::dealloc(array.cast::<u8>(), layout);
    }
    Ok(())
}

// ---- C entry points (nrt_experimental.h) ----

/// Describes every input and output of a loaded model. On success
/// `*tensor_info` receives an array the caller owns and must release with
/// `nrt_free_model_tensor_info` (not with `free`). NULL arguments give
/// `NRT_INVALID`; a pointer that is not a live model `NRT_INVALID_HANDLE`.
///
/// # Safety
/// `tensor_info` must be NULL or writable; `model` may be any pointer value
/// (it is only dereferenced when it is a live handle).
#[no_mangle]
pub unsafe extern "C" fn nrt_get_model_tensor_info(
    model: *mut nrt_model_t,
    tensor_info: *mut *mut nrt_tensor_info_array_t,
) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_get_model_tensor_info", || unsafe {
        get(model, tensor_info)
    })
}

/// Writes 1 to `*instance_count`: nothing executes here, so one caller at a
/// time is as good as any. Deprecated.
///
/// # Safety
/// `instance_count` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_get_model_instance_count(
    model: *mut nrt_model_t,
    instance_count: *mut u32,
) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_get_model_instance_count", || unsafe {
        model::vnc_count(model, instance_count)
    })
}

/// Releases an array returned by `nrt_get_model_tensor_info`, shapes
/// included. NULL gives `NRT_INVALID`; an array this library did not return
/// (or already released) is not touched and gives `NRT_INVALID`.
///
/// # Safety
/// `tensor_info` may be any pointer value; it is only dereferenced when it is
/// a live array of this library.
#[no_mangle]
pub unsafe extern "C" fn nrt_free_model_tensor_info(
    tensor_info: *mut nrt_tensor_info_array_t,
) -> NRT_STATUS {
    guarded("nrt_free_model_tensor_info", || free(tensor_info))
}

/// Fills at most `info_size_in` bytes of `*info` and stores the number of
/// bytes written in `*info_size_out` (when not NULL).
///
/// # Safety
/// `info` must be NULL or point to `info_size_in` writable bytes;
/// `info_size_out` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrt_get_model_info(
    model: *const nrt_model_t,
    info: *mut nrt_model_info_t,
    info_size_in: usize,
    info_size_out: *mut usize,
) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_get_model_info", || unsafe {
        model::info(model, info, info_size_in, info_size_out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_layout_matches_the_public_header() {
        use std::mem::{offset_of, size_of};
        assert_eq!(size_of::<nrt_tensor_info_t>(), 296);
        assert_eq!(offset_of!(nrt_tensor_info_t, name), 0);
        assert_eq!(offset_of!(nrt_tensor_info_t, usage), 256);
        assert_eq!(offset_of!(nrt_tensor_info_t, size), 264);
        assert_eq!(offset_of!(nrt_tensor_info_t, dtype), 272);
        assert_eq!(offset_of!(nrt_tensor_info_t, shape), 280);
        assert_eq!(offset_of!(nrt_tensor_info_t, ndim), 288);
        assert_eq!(offset_of!(nrt_tensor_info_array_t, tensor_count), 0);
        assert_eq!(offset_of!(nrt_tensor_info_array_t, tensor_array), 8);
        assert_eq!(array_layout(3).unwrap().size(), 8 + 3 * 296);
    }

    #[test]
    fn dtype_codes_round_trip() {
        for code in 0..16u32 {
            assert_eq!(c_dtype(code) as u32, code);
        }
        assert_eq!(c_dtype(99), nrt_dtype_t::NRT_DTYPE_UNKNOWN);
    }
}
