//! Host memory whose size a NEFF or a caller chooses is reserved here,
//! fallibly: a size the host cannot hold becomes an error (`NRT_RESOURCE`
//! at the library boundary), never an abort of the process. Each layer wraps
//! [`HostOom`] in its own error enum.

use thiserror::Error;

/// A host allocation that could not be made.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("cannot allocate {bytes} bytes of host memory for {what}")]
pub struct HostOom {
    pub what: &'static str,
    pub bytes: u64,
}

/// Reserves room for `additional` more elements in `v`.
pub fn reserve<T>(v: &mut Vec<T>, additional: usize, what: &'static str) -> Result<(), HostOom> {
    v.try_reserve_exact(additional).map_err(|_| HostOom {
        what,
        bytes: (additional as u64).saturating_mul(std::mem::size_of::<T>() as u64),
    })
}

/// An empty vector with room for `n` elements.
pub fn with_capacity<T>(n: usize, what: &'static str) -> Result<Vec<T>, HostOom> {
    let mut v = Vec::new();
    reserve(&mut v, n, what)?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_impossible_size_is_an_error_not_an_abort() {
        let e = with_capacity::<u64>(usize::MAX / 4, "descriptors").unwrap_err();
        assert_eq!(e.what, "descriptors");
        assert_eq!(e.bytes, u64::MAX, "the byte count saturates");
        assert!(e.to_string().starts_with("cannot allocate "), "{e}");
        let mut v = with_capacity::<u8>(16, "bytes").unwrap();
        assert!(v.capacity() >= 16);
        v.extend_from_slice(&[1; 16]);
        assert!(reserve(&mut v, usize::MAX, "more bytes").is_err());
        assert_eq!(v.len(), 16, "a failed reserve leaves the vector as it was");
    }
}
