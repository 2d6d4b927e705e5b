//! Freeing the payload window behind its readers.
//!
//! A large payload read from a mapped file would otherwise stay resident
//! next to its inflated copy until the load ends (peak RSS file + inflated).
//! The window has up to two readers — the inflate and, when the hash is
//! required, the digest on a second thread — so a byte may be dropped only
//! once both have passed it. [`ReadFront`] keeps both positions and hands
//! the range below the slower one to the owner's release function, once.

use std::sync::atomic::{AtomicUsize, Ordering};

/// The window's release function: told a window offset below which no reader
/// will look again (never a smaller one than before). It may keep any of
/// those pages; a page it drops must read back with the same bytes if
/// touched again (a private read-only file mapping does).
pub type Release<'a> = &'a (dyn Fn(usize) + Sync);

/// Who reads the window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reader {
    /// The decoder (inflate, or the copy of a raw tar).
    Decode,
    /// The payload digest.
    Hash,
}

/// How far each reader of the window has come, and how far it has been
/// released.
pub struct ReadFront<'a> {
    release: Release<'a>,
    decode: AtomicUsize,
    hash: AtomicUsize,
    released: AtomicUsize,
}

impl<'a> ReadFront<'a> {
    /// A front for a window of `len` bytes; `hashed` says whether a digest
    /// reads it too (otherwise only the decoder holds pages back).
    pub fn new(release: Release<'a>, len: usize, hashed: bool) -> ReadFront<'a> {
        ReadFront {
            release,
            decode: AtomicUsize::new(0),
            hash: AtomicUsize::new(if hashed { 0 } else { len }),
            released: AtomicUsize::new(0),
        }
    }

    /// `reader` will not read below window offset `pos` again.
    pub fn passed(&self, reader: Reader, pos: usize) {
        let mine = match reader {
            Reader::Decode => &self.decode,
            Reader::Hash => &self.hash,
        };
        mine.fetch_max(pos, Ordering::AcqRel);
        let low = self
            .decode
            .load(Ordering::Acquire)
            .min(self.hash.load(Ordering::Acquire));
        let before = self.released.fetch_max(low, Ordering::AcqRel);
        if low > before {
            (self.release)(low);
        }
    }

    /// Everything below this offset has been handed to the release function.
    #[cfg(test)]
    pub fn released(&self) -> usize {
        self.released.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn recorder(got: &Mutex<Vec<usize>>) -> impl Fn(usize) + Sync + '_ {
        |end| got.lock().unwrap().push(end)
    }

    #[test]
    fn releases_below_the_slower_reader_once() {
        let got = Mutex::new(Vec::new());
        let rel = recorder(&got);
        let f = ReadFront::new(&rel, 100, true);
        f.passed(Reader::Decode, 40);
        assert_eq!(f.released(), 0, "the hash has not started");
        f.passed(Reader::Hash, 30);
        f.passed(Reader::Hash, 60);
        f.passed(Reader::Decode, 20); // a reader never goes back
        f.passed(Reader::Decode, 100);
        f.passed(Reader::Hash, 100);
        assert_eq!(*got.lock().unwrap(), [30, 40, 60, 100]);
        assert_eq!(f.released(), 100);
    }

    #[test]
    fn without_a_hash_the_decoder_alone_decides() {
        let got = Mutex::new(Vec::new());
        let rel = recorder(&got);
        let f = ReadFront::new(&rel, 50, false);
        f.passed(Reader::Decode, 10);
        f.passed(Reader::Decode, 50);
        assert_eq!(*got.lock().unwrap(), [10, 50]);
    }

    #[test]
    fn two_threads_release_in_order_up_to_the_end() {
        let got = Mutex::new(Vec::new());
        {
            let rel = recorder(&got);
            let f = ReadFront::new(&rel, 1 << 16, true);
            std::thread::scope(|s| {
                for reader in [Reader::Decode, Reader::Hash] {
                    let f = &f;
                    s.spawn(move || {
                        for p in (0..=1 << 16).step_by(7) {
                            f.passed(reader, p);
                        }
                        f.passed(reader, 1 << 16);
                    });
                }
            });
        }
        // Each end is reported once; calls may interleave, so sort them.
        let mut ends = got.into_inner().unwrap();
        ends.sort_unstable();
        assert!(
            ends.windows(2).all(|w| w[0] < w[1]),
            "no end reported twice"
        );
        assert_eq!(ends.last(), Some(&(1 << 16)));
    }
}
