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

/// Elsewhere the pages fault as they fill.
#[cfg(not(target_os = "linux"))]
pub fn populate(_: &mut Vec<u8>) {}

/// Spare capacity at least this long is populated in one call.
#[cfg(target_os = "linux")]
const POPULATE_MIN: usize = 256 << 10;

/// Faults in the pages of `v`'s spare capacity in one call
/// (`MADV_POPULATE_WRITE`) instead of one page fault per page as it fills:
/// a one-shot load of matmul_large took 3,140 page faults instead of 4,020
/// with its instruction images populated this way, and about 3 % less CPU
/// time in two of three `perf stat` pairs (the third was noise).
/// An older kernel refuses the advice and the pages fault as usual.
#[cfg(target_os = "linux")]
pub fn populate(v: &mut Vec<u8>) {
    let spare = v.spare_capacity_mut();
    if spare.len() < POPULATE_MIN {
        return;
    }
    const PAGE: usize = 4096;
    let start = (spare.as_mut_ptr() as usize).next_multiple_of(PAGE);
    let end = (spare.as_mut_ptr() as usize + spare.len()) & !(PAGE - 1);
    if end <= start {
        return;
    }
    // SAFETY: [start, end) lies inside `v`'s allocation, which `v` holds
    // for the whole call; the advice only maps its pages and never changes
    // a byte of it (fresh pages read as zero, present ones are left alone),
    // and nothing reads the spare capacity before it is written anyway.
    unsafe {
        libc::madvise(
            start as *mut libc::c_void,
            end - start,
            libc::MADV_POPULATE_WRITE,
        );
    }
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

    /// The whole pages inside `v`'s spare capacity.
    #[cfg(target_os = "linux")]
    fn spare_pages(v: &mut Vec<u8>) -> (usize, usize) {
        let spare = v.spare_capacity_mut();
        let start = (spare.as_mut_ptr() as usize).next_multiple_of(4096);
        let end = (spare.as_mut_ptr() as usize + spare.len()) & !4095;
        (start, end)
    }

    /// Pages of `v`'s spare capacity that are resident, and how many.
    #[cfg(target_os = "linux")]
    fn resident_spare_pages(v: &mut Vec<u8>) -> (usize, usize) {
        let (start, end) = spare_pages(v);
        let pages = (end - start) / 4096;
        let mut vec = vec![0u8; pages];
        // SAFETY: the range is page-aligned and inside `v`'s allocation;
        // mincore only reports residency into `vec`, one byte per page.
        let rc =
            unsafe { libc::mincore(start as *mut libc::c_void, end - start, vec.as_mut_ptr()) };
        assert_eq!(rc, 0);
        (vec.iter().filter(|&&b| b & 1 == 1).count(), pages)
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn populate_makes_spare_capacity_resident_and_keeps_the_contents() {
        let mut v = with_capacity::<u8>(8 << 20, "test").unwrap();
        v.extend_from_slice(b"kept");
        // Whatever memory the allocator handed over, its spare pages start
        // out not resident.
        let (start, end) = spare_pages(&mut v);
        // SAFETY: the range is page-aligned, inside `v`'s allocation, and
        // in its spare capacity, which holds no value anyone reads.
        let rc =
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED) };
        assert_eq!(rc, 0);
        let (before, pages) = resident_spare_pages(&mut v);
        assert_eq!(before, 0, "{before} of {pages} resident before");
        populate(&mut v);
        let (after, _) = resident_spare_pages(&mut v);
        assert_eq!(after, pages, "every page resident after");
        assert_eq!(v, b"kept");
        // Too short to be worth a call: left to fault as it fills.
        let mut small = with_capacity::<u8>(64 << 10, "test").unwrap();
        populate(&mut small);
        assert!(small.is_empty());
    }
}
