//! Host memory whose size a NEFF or a caller chooses is reserved here,
//! fallibly: a size the host cannot hold becomes an error
//! (`NRT_FAIL_HOST_MEM_ALLOC`, the status libnrt returns when host memory
//! runs out), never an abort of the process. Each layer wraps [`HostOom`]
//! in its own error enum and takes its status from it.

use thiserror::Error;

use crate::NrtStatus;

/// A host allocation that could not be made.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("cannot allocate {bytes} bytes of host memory for {what}")]
pub struct HostOom {
    /// What the memory was for.
    pub what: &'static str,
    /// Bytes asked for.
    pub bytes: u64,
}

impl HostOom {
    /// `NRT_FAIL_HOST_MEM_ALLOC`: the host, not the device, ran out.
    pub fn status(&self) -> NrtStatus {
        NrtStatus::FailHostMemAlloc
    }
}

/// Reserves room for `additional` more elements in `v`.
pub fn reserve<T>(v: &mut Vec<T>, additional: usize, what: &'static str) -> Result<(), HostOom> {
    v.try_reserve_exact(additional).map_err(|_| HostOom {
        what,
        bytes: (additional as u64).saturating_mul(std::mem::size_of::<T>() as u64),
    })
}

/// Reserves room for `additional` more entries in `m`.
pub fn reserve_map<K: std::hash::Hash + Eq, V>(
    m: &mut std::collections::HashMap<K, V>,
    additional: usize,
    what: &'static str,
) -> Result<(), HostOom> {
    m.try_reserve(additional).map_err(|_| HostOom {
        what,
        bytes: (additional as u64).saturating_mul(std::mem::size_of::<(K, V)>() as u64),
    })
}

/// An empty vector with room for `n` elements.
pub fn with_capacity<T>(n: usize, what: &'static str) -> Result<Vec<T>, HostOom> {
    let mut v = Vec::new();
    reserve(&mut v, n, what)?;
    Ok(v)
}

/// Checks that `bytes` more of host memory can still be had: reserved and
/// given back at once, never touched, so it costs an `mmap` and no page.
/// Work that grows a little at a time (a plan, step by step) asks before
/// each part for more than the part can take, so that a host running out
/// (an address-space limit, `ulimit -v`) is this error between two parts,
/// not an abort inside one. Where the system overcommits memory the answer
/// is yes until the kernel says otherwise, as for any allocation.
pub fn room(bytes: usize, what: &'static str) -> Result<(), HostOom> {
    with_capacity::<u8>(bytes, what).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_impossible_size_is_an_error_not_an_abort() {
        let e = with_capacity::<u64>(usize::MAX / 4, "descriptors").unwrap_err();
        assert_eq!(e.what, "descriptors");
        assert_eq!(e.status(), NrtStatus::FailHostMemAlloc);
        assert_eq!(e.bytes, u64::MAX, "the byte count saturates");
        assert!(e.to_string().starts_with("cannot allocate "), "{e}");
        let mut v = with_capacity::<u8>(16, "bytes").unwrap();
        assert!(v.capacity() >= 16);
        v.extend_from_slice(&[1; 16]);
        assert!(reserve(&mut v, usize::MAX, "more bytes").is_err());
        assert_eq!(v.len(), 16, "a failed reserve leaves the vector as it was");
    }
}
