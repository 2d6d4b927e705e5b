//! Bytes with more than one owner: the inflated payload a parse borrows
//! from, which a device may keep a reference to instead of copying what it
//! stages from it. A leaf module, so the container (which makes the bytes)
//! and the device (which may keep them) need not know each other.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// A cheaply cloned handle on one immutable buffer.
#[derive(Clone)]
pub struct SharedBytes(Arc<dyn AsRef<[u8]> + Send + Sync>);

impl SharedBytes {
    pub fn new(bytes: impl AsRef<[u8]> + Send + Sync + 'static) -> SharedBytes {
        SharedBytes(Arc::new(bytes))
    }

    /// Where `part` starts in this buffer, if it lies wholly inside it.
    pub fn offset_of(&self, part: &[u8]) -> Option<usize> {
        let all = self.as_ref();
        let start = (part.as_ptr() as usize).checked_sub(all.as_ptr() as usize)?;
        (start.checked_add(part.len())? <= all.len()).then_some(start)
    }
}

impl Default for SharedBytes {
    fn default() -> SharedBytes {
        SharedBytes::new(Vec::<u8>::new())
    }
}

impl AsRef<[u8]> for SharedBytes {
    fn as_ref(&self) -> &[u8] {
        (*self.0).as_ref()
    }
}

impl Deref for SharedBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_ref()
    }
}

impl fmt::Debug for SharedBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SharedBytes({} bytes)", self.len())
    }
}

/// A part of a shared buffer, which it keeps alive: one engine image among
/// the images of a core that share one allocation (`stage::core`).
#[derive(Clone, Default)]
pub struct SharedSlice {
    all: SharedBytes,
    start: usize,
    len: usize,
}

impl SharedSlice {
    /// `all[range]`; a range outside `all` is a caller's bug.
    pub fn new(all: SharedBytes, range: std::ops::Range<usize>) -> SharedSlice {
        assert!(
            range.start <= range.end && range.end <= all.len(),
            "{range:?} outside {} bytes",
            all.len()
        );
        SharedSlice {
            all,
            start: range.start,
            len: range.end - range.start,
        }
    }
}

impl SharedSlice {
    /// The buffer this is a part of.
    pub fn shared(&self) -> &SharedBytes {
        &self.all
    }
}

impl From<Vec<u8>> for SharedSlice {
    fn from(v: Vec<u8>) -> SharedSlice {
        let len = v.len();
        SharedSlice::new(SharedBytes::new(v), 0..len)
    }
}

impl Deref for SharedSlice {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.all[self.start..self.start + self.len]
    }
}

impl PartialEq for SharedSlice {
    fn eq(&self, other: &SharedSlice) -> bool {
        **self == **other
    }
}

impl Eq for SharedSlice {}

impl fmt::Debug for SharedSlice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SharedSlice({} bytes at {})", self.len, self.start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slice_reads_its_part_and_compares_by_bytes() {
        let all = SharedBytes::new((0u8..100).collect::<Vec<u8>>());
        let part = SharedSlice::new(all.clone(), 10..20);
        assert_eq!(&part[..], &all[10..20]);
        assert_eq!(part, SharedSlice::from((10u8..20).collect::<Vec<u8>>()));
        assert_ne!(part, SharedSlice::new(all, 11..21));
        assert!(SharedSlice::default().is_empty());
    }

    #[test]
    #[should_panic(expected = "outside")]
    fn a_slice_past_the_end_is_refused() {
        SharedSlice::new(SharedBytes::new(vec![0u8; 4]), 2..5);
    }

    #[test]
    fn offsets_are_found_only_for_parts_inside() {
        let s = SharedBytes::new((0u8..100).collect::<Vec<u8>>());
        assert_eq!(s.offset_of(&s[10..20]), Some(10));
        assert_eq!(s.offset_of(&s[100..]), Some(100));
        let other = vec![0u8; 10];
        assert_eq!(s.offset_of(&other), None);
        assert_eq!(s.clone().len(), 100);
    }
}
