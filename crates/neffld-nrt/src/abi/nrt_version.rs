//! C declarations of `nrt/nrt_version.h`: the library version record.

use std::ffi::c_char;

/// Bytes of `nrt_version_t::rt_detail`.
pub const RT_VERSION_DETAIL_LEN: usize = 128;
/// Bytes of `nrt_version_t::git_hash`.
pub const GIT_HASH_LEN: usize = 64;

/// The library version, as `nrt_get_version` reports it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nrt_version {
    pub rt_major: u64,
    pub rt_minor: u64,
    pub rt_patch: u64,
    pub rt_maintenance: u64,
    /// NUL-terminated free text: which library this is.
    pub rt_detail: [c_char; RT_VERSION_DETAIL_LEN],
    /// NUL-terminated source revision (empty when unknown).
    pub git_hash: [c_char; GIT_HASH_LEN],
}

/// The SDK's typedef of [`nrt_version`]; C code names the type either way
/// (`nrt_version_t`, `struct nrt_version`).
pub type nrt_version_t = nrt_version;
