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

#[cfg(test)]
mod tests {
    use super::*;

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
