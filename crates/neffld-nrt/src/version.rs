//! The version domain (`nrt_version.h`): `nrt_get_version` reports this
//! library's own version (neffld's), with a detail string saying what it is.

use std::ffi::c_char;

use crate::abi::nrt_status::NRT_STATUS;
use crate::abi::nrt_version::{nrt_version_t, GIT_HASH_LEN, RT_VERSION_DETAIL_LEN};
use crate::boundary::{guarded, non_null, write_prefix, NrtResult};

/// The version record of this library.
fn current() -> nrt_version_t {
    let number = |s: &str| s.parse::<u64>().unwrap_or(0);
    let mut v = nrt_version_t {
        rt_major: number(env!("CARGO_PKG_VERSION_MAJOR")),
        rt_minor: number(env!("CARGO_PKG_VERSION_MINOR")),
        rt_patch: number(env!("CARGO_PKG_VERSION_PATCH")),
        rt_maintenance: 0,
        rt_detail: [0; RT_VERSION_DETAIL_LEN],
        git_hash: [0; GIT_HASH_LEN],
    };
    let detail = format!(
        "{} (libnrt API on a simulated device)",
        neffld::RUNTIME_NAME
    );
    for (dst, &b) in v
        .rt_detail
        .iter_mut()
        .zip(detail.as_bytes().iter().take(RT_VERSION_DETAIL_LEN - 1))
    {
        *dst = b as c_char;
    }
    v
}

/// `nrt_get_version`.
///
/// # Safety
/// `ver` must be NULL or point to `size` writable bytes.
unsafe fn get(ver: *mut nrt_version_t, size: usize) -> NrtResult {
    non_null("nrt_get_version", "ver", ver)?;
    // SAFETY: forwarded from this function's contract.
    unsafe { write_prefix(&current(), ver, size, std::ptr::null_mut()) };
    Ok(())
}

/// Fills at most `size` bytes of `*ver` with this library's version (usable
/// in any runtime state).
///
/// # Safety
/// `ver` must be NULL or point to `size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn nrt_get_version(ver: *mut nrt_version_t, size: usize) -> NRT_STATUS {
    // SAFETY: forwarded from this function's contract.
    guarded("nrt_get_version", || unsafe { get(ver, size) })
}
