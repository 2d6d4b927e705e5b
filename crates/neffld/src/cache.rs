//! The parse cache: concurrent loads of the same NEFF share one parse.
//!
//! This reproduces the reference runtime's single-slot rendezvous
//! (stage.md §4): the first loader of a NEFF parses it (CREATOR); loaders of
//! the same NEFF that arrive meanwhile wait and then reuse the result
//! (REUSE after wait), or, if the parse failed, parse on their own while
//! still holding a reference (INDEPENDENT holding a ref); loaders of another
//! NEFF while the slot is busy parse independently. The slot returns to
//! empty when its last user releases it, so nothing outlives the loads that
//! shared it.
//!
//! Two deliberate differences from the reference:
//! - **The key is the uuid AND the bytes**, not the uuid alone. The uuid is
//!   written by the producer and never validated, so a damaged or repacked
//!   copy carrying the same uuid would otherwise reuse a parse it does not
//!   match. The key adds the length and a 128-bit keyed fingerprint of the
//!   whole buffer (fresh random keys per cache, so colliding inputs cannot be
//!   prepared in advance).
//! - **Several slots** can be enabled ([`ParseCache::with_slots`]); the
//!   default is one, as in the reference.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// What identifies "the same NEFF".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CacheKey {
    pub uuid: [u8; 16],
    pub len: u64,
    pub fingerprint: u128,
}

/// The part a loader played at the rendezvous (the reference's log lines
/// are in the doc of each variant).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// "first worker, creating cache"
    Creator,
    /// "using cache"
    Reuse,
    /// "using cache after wait"
    ReuseAfterWait,
    /// "cache creation failed, do my own" — parsed privately, still holding a ref.
    IndependentHoldingRef,
    /// "proceeding independently" — the slot was busy with another NEFF (or failed).
    Independent,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Pending,
    Ready,
    Failed,
}

struct Slot<T> {
    state: State,
    product: Option<Arc<T>>,
    /// Loaders holding this slot (including waiters); the slot is removed at 0.
    refs: u32,
}

struct Inner<T> {
    slots: HashMap<CacheKey, Slot<T>>,
}

/// A rendezvous cache of parse products of type `T`.
pub struct ParseCache<T> {
    inner: Mutex<Inner<T>>,
    changed: Condvar,
    capacity: usize,
    /// Fingerprint keys, fresh per cache.
    seed: [u64; 4],
}

impl<T> Default for ParseCache<T> {
    fn default() -> Self {
        ParseCache::with_slots(1)
    }
}

/// Releases a loader's reference to its slot when dropped.
pub struct CacheRef<'c, T> {
    cache: &'c ParseCache<T>,
    key: Option<CacheKey>,
}

impl<T> Drop for CacheRef<'_, T> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            let mut inner = self.cache.lock();
            if let Some(slot) = inner.slots.get_mut(&key) {
                slot.refs -= 1;
                if slot.refs == 0 {
                    inner.slots.remove(&key);
                }
            }
        }
    }
}

/// The outcome of [`ParseCache::get_or_parse`].
pub struct Entry<'c, T, E> {
    pub role: Role,
    pub result: Result<Arc<T>, E>,
    /// Hold this for as long as the product is in use by the load.
    pub hold: CacheRef<'c, T>,
}

impl<T> ParseCache<T> {
    /// A cache with `slots` concurrent NEFFs (1 = the reference behaviour).
    pub fn with_slots(slots: usize) -> ParseCache<T> {
        ParseCache {
            inner: Mutex::new(Inner {
                slots: HashMap::new(),
            }),
            changed: Condvar::new(),
            capacity: slots.max(1),
            seed: {
                let r = RandomState::new();
                [
                    r.hash_one(1u8),
                    r.hash_one(2u8),
                    r.hash_one(3u8),
                    r.hash_one(4u8),
                ]
            },
        }
    }

    // A poisoned lock only means a parse panicked on another thread; the slot
    // table itself is always left consistent, so keep using it.
    fn lock(&self) -> MutexGuard<'_, Inner<T>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The key of a NEFF buffer: its uuid (header offset 0xCC), its length
    /// and a keyed fingerprint of every byte.
    pub fn key(&self, uuid: [u8; 16], bytes: &[u8]) -> CacheKey {
        CacheKey {
            uuid,
            len: bytes.len() as u64,
            fingerprint: fingerprint(bytes, &self.seed),
        }
    }

    /// Slots currently in use (for tests and diagnostics).
    pub fn busy_slots(&self) -> usize {
        self.lock().slots.len()
    }

    /// Joins the rendezvous for `key`, running `parse` if this loader has to.
    pub fn get_or_parse<E>(
        &self,
        key: CacheKey,
        parse: impl FnOnce() -> Result<T, E>,
    ) -> Entry<'_, T, E> {
        let mut inner = self.lock();
        let state = inner.slots.get(&key).map(|slot| slot.state);
        let role = match state {
            Some(State::Ready) => {
                let slot = inner.slots.get_mut(&key).expect("present");
                slot.refs += 1;
                let product = slot
                    .product
                    .clone()
                    .expect("a ready slot holds its product");
                tracing::debug!("using cache");
                return Entry {
                    role: Role::Reuse,
                    result: Ok(product),
                    hold: CacheRef {
                        cache: self,
                        key: Some(key),
                    },
                };
            }
            Some(State::Pending) => {
                inner.slots.get_mut(&key).expect("present").refs += 1;
                tracing::debug!("waiting for cache creation");
                loop {
                    inner = self.changed.wait(inner).unwrap_or_else(|p| p.into_inner());
                    let slot = inner
                        .slots
                        .get(&key)
                        .expect("a slot with waiters is never removed");
                    match slot.state {
                        State::Pending => continue,
                        State::Ready => {
                            let product = slot
                                .product
                                .clone()
                                .expect("a ready slot holds its product");
                            tracing::debug!("using cache after wait");
                            return Entry {
                                role: Role::ReuseAfterWait,
                                result: Ok(product),
                                hold: CacheRef {
                                    cache: self,
                                    key: Some(key),
                                },
                            };
                        }
                        State::Failed => break Role::IndependentHoldingRef,
                    }
                }
            }
            Some(State::Failed) => Role::Independent, // stays failed until its holders release it
            None if inner.slots.len() < self.capacity => {
                inner.slots.insert(
                    key,
                    Slot {
                        state: State::Pending,
                        product: None,
                        refs: 1,
                    },
                );
                Role::Creator
            }
            None => Role::Independent,
        };
        drop(inner);
        let hold = CacheRef {
            cache: self,
            key: matches!(role, Role::Creator | Role::IndependentHoldingRef).then_some(key),
        };
        match role {
            Role::Creator => {
                tracing::debug!("first worker, creating cache");
                let result = parse().map(Arc::new);
                let mut inner = self.lock();
                let slot = inner
                    .slots
                    .get_mut(&key)
                    .expect("the creator holds its slot");
                match &result {
                    Ok(p) => {
                        slot.state = State::Ready;
                        slot.product = Some(Arc::clone(p));
                    }
                    Err(_) => slot.state = State::Failed,
                }
                drop(inner);
                // Every waiter wakes, whatever the outcome: none is stranded.
                self.changed.notify_all();
                Entry { role, result, hold }
            }
            _ => {
                if role == Role::IndependentHoldingRef {
                    tracing::debug!("cache creation failed, do my own");
                } else {
                    tracing::debug!("proceeding independently");
                }
                Entry {
                    role,
                    result: parse().map(Arc::new),
                    hold,
                }
            }
        }
    }
}

/// A keyed 128-bit fingerprint, one pass at memory speed (folded 64×64→128
/// multiplies over 16-byte words, two independent lanes). Not a MAC: its
/// job is to tell two different buffers apart, with keys an input cannot
/// know in advance, at a cost small next to the inflate it saves.
pub fn fingerprint(bytes: &[u8], seed: &[u64; 4]) -> u128 {
    fn fold(a: u64, b: u64) -> u64 {
        let m = u128::from(a).wrapping_mul(u128::from(b));
        (m as u64) ^ ((m >> 64) as u64)
    }
    const P: u64 = 0x9E37_79B9_7F4A_7C15;
    let (mut lo, mut hi) = (
        seed[0] ^ bytes.len() as u64,
        seed[1].rotate_left(17) ^ bytes.len() as u64,
    );
    let mut chunks = bytes.chunks_exact(16);
    for c in &mut chunks {
        let x = u64::from_le_bytes(c[..8].try_into().expect("16-byte chunk"));
        let y = u64::from_le_bytes(c[8..].try_into().expect("16-byte chunk"));
        lo = fold(x ^ seed[2] ^ lo, y ^ seed[3]).wrapping_add(lo.rotate_left(29));
        hi = fold(y ^ seed[0] ^ hi, x ^ seed[1]).wrapping_add(hi.rotate_left(31));
    }
    let mut tail = [0u8; 16];
    tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    let x = u64::from_le_bytes(tail[..8].try_into().expect("16 bytes"));
    let y = u64::from_le_bytes(tail[8..].try_into().expect("16 bytes"));
    lo = fold(lo ^ x ^ P, seed[2] ^ y);
    hi = fold(hi ^ y ^ P, seed[3] ^ x);
    (u128::from(fold(hi, P ^ lo)) << 64) | u128::from(fold(lo, P ^ hi))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Barrier;
    use std::time::Duration;

    fn key(cache: &ParseCache<u32>, uuid: u8, bytes: &[u8]) -> CacheKey {
        cache.key([uuid; 16], bytes)
    }

    #[test]
    fn concurrent_loads_of_one_neff_parse_once() {
        let cache = ParseCache::<u32>::default();
        let parses = AtomicU32::new(0);
        let start = Barrier::new(6);
        let roles: Vec<Role> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..6)
                .map(|_| {
                    s.spawn(|| {
                        start.wait();
                        let e = cache.get_or_parse::<()>(key(&cache, 1, b"neff"), || {
                            parses.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(Duration::from_millis(300));
                            Ok(42)
                        });
                        assert_eq!(*e.result.unwrap(), 42);
                        // Keep holding until everybody has arrived.
                        std::thread::sleep(Duration::from_millis(400));
                        e.role
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(parses.load(Ordering::SeqCst), 1);
        assert_eq!(roles.iter().filter(|r| **r == Role::Creator).count(), 1);
        assert!(
            roles
                .iter()
                .all(|r| matches!(r, Role::Creator | Role::ReuseAfterWait | Role::Reuse)),
            "{roles:?}"
        );
        assert_eq!(
            cache.busy_slots(),
            0,
            "the slot empties when the last user releases it"
        );
    }

    #[test]
    fn a_failed_parse_wakes_every_waiter_who_then_parses_alone() {
        let cache = ParseCache::<u32>::default();
        let parses = AtomicU32::new(0);
        let start = Barrier::new(4);
        let roles: Vec<(Role, bool)> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|i| {
                    let (cache, parses, start) = (&cache, &parses, &start);
                    s.spawn(move || {
                        if i > 0 {
                            std::thread::sleep(Duration::from_millis(30));
                        }
                        start.wait();
                        let e = cache.get_or_parse(key(cache, 1, b"neff"), || {
                            let n = parses.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(Duration::from_millis(300));
                            if n == 0 {
                                Err("broken")
                            } else {
                                Ok(n)
                            }
                        });
                        (e.role, e.result.is_ok())
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(parses.load(Ordering::SeqCst), 4);
        let creators: Vec<_> = roles.iter().filter(|(r, _)| *r == Role::Creator).collect();
        assert_eq!(creators.len(), 1);
        assert!(!creators[0].1, "the creator's parse failed");
        for (r, ok) in &roles {
            if *r != Role::Creator {
                assert!(
                    matches!(r, Role::IndependentHoldingRef | Role::Independent),
                    "{r:?}"
                );
                assert!(ok);
            }
        }
        assert_eq!(cache.busy_slots(), 0);
    }

    #[test]
    fn another_neff_while_busy_parses_independently() {
        let cache = ParseCache::<u32>::default();
        let first = cache.get_or_parse::<()>(key(&cache, 1, b"a"), || Ok(1));
        assert_eq!(first.role, Role::Creator);
        let other = cache.get_or_parse::<()>(key(&cache, 2, b"b"), || Ok(2));
        assert_eq!(other.role, Role::Independent);
        assert_eq!(*other.result.unwrap(), 2);
        let again = cache.get_or_parse::<()>(key(&cache, 1, b"a"), || panic!("must reuse"));
        assert_eq!(again.role, Role::Reuse);
        drop((first, again));
        assert_eq!(cache.busy_slots(), 0);
        // Empty again: the other NEFF may now create.
        assert_eq!(
            cache
                .get_or_parse::<()>(key(&cache, 2, b"b"), || Ok(2))
                .role,
            Role::Creator
        );
    }

    #[test]
    fn same_uuid_different_bytes_is_a_different_neff() {
        let cache = ParseCache::<u32>::default();
        let a = cache.get_or_parse::<()>(key(&cache, 7, b"original"), || Ok(1));
        let b = cache.get_or_parse::<()>(key(&cache, 7, b"damaged!"), || Ok(2));
        assert_eq!(b.role, Role::Independent);
        assert_eq!(*b.result.unwrap(), 2);
        drop(a);
    }

    #[test]
    fn fingerprint_tells_single_byte_changes_apart() {
        let seed = [1, 2, 3, 4];
        let base = vec![0u8; 1000];
        let f0 = fingerprint(&base, &seed);
        let mut seen = std::collections::HashSet::new();
        seen.insert(f0);
        for i in 0..1000 {
            let mut b = base.clone();
            b[i] = 1;
            assert!(seen.insert(fingerprint(&b, &seed)), "collision at byte {i}");
        }
        assert_ne!(fingerprint(&base[..999], &seed), f0, "length matters");
        assert_ne!(fingerprint(&base, &[5, 6, 7, 8]), f0, "the key matters");
    }

    #[test]
    fn multi_slot_mode_caches_several_neffs() {
        let cache = ParseCache::<u32>::with_slots(4);
        let a = cache.get_or_parse::<()>(key(&cache, 1, b"a"), || Ok(1));
        let b = cache.get_or_parse::<()>(key(&cache, 2, b"b"), || Ok(2));
        assert_eq!((a.role, b.role), (Role::Creator, Role::Creator));
        assert_eq!(cache.busy_slots(), 2);
        let b2 = cache.get_or_parse::<()>(key(&cache, 2, b"b"), || panic!("must reuse"));
        assert_eq!(b2.role, Role::Reuse);
        drop((a, b, b2));
        assert_eq!(cache.busy_slots(), 0);
    }
}
