//! The parse cache: concurrent loads of the same NEFF share one parse.
//!
//! This reproduces the reference runtime's single-slot rendezvous
//! (stage.md §4): the first loader of a NEFF parses it (CREATOR); loaders of
//! the same NEFF that arrive meanwhile wait and then reuse the result
//! (REUSE after wait), or, if the parse failed, parse on their own while
//! still holding a reference (INDEPENDENT holding a ref); loaders of another
//! NEFF while the slot is busy parse independently. The slot returns to
//! empty when its last user releases it, so nothing outlives the loads that
//! shared it — unless retention is enabled (below).
//!
//! Deliberate differences from the reference:
//! - **The key is the uuid AND the bytes**, not the uuid alone. The uuid is
//!   written by the producer and never validated, so a damaged or repacked
//!   copy carrying the same uuid would otherwise reuse a parse it does not
//!   match. A slot is found by a cheap key (uuid, length, a fingerprint of a
//!   few KiB sampled across the file); a parse is shared only when a keyed
//!   128-bit fingerprint of every byte matches too (fresh random keys per
//!   cache, so colliding inputs cannot be prepared in advance). That full
//!   fingerprint is computed only when a second loader meets the slot (or
//!   the slot may be retained), so a load that shares with nobody never
//!   reads the file a second time.
//! - **Several slots** can be enabled ([`CachePolicy::slots`]); the default
//!   is one, as in the reference.
//! - **Retention** ([`CachePolicy::retain`], opt-in): the last N parses
//!   stay after their loads end, bounded by bytes and evicted least recently
//!   used, so loading one NEFF on core after core parses it once.
//! - **A creator that fails or panics** marks its slot failed on the way out
//!   (a drop guard), so its waiters always wake.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// Where a loader looks for "the same NEFF" (cheap: no pass over the file).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CacheKey {
    pub uuid: [u8; 16],
    pub len: u64,
    /// Fingerprint of the sampled bytes ([`crate::container::sample`]).
    pub sample: u128,
}

/// How much the cache keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CachePolicy {
    /// NEFFs that can be in use at once, each with its own slot (1 = the
    /// reference).
    pub slots: usize,
    /// Parses kept after their last load releases them (0 = none, the
    /// reference).
    pub retain: usize,
    /// Ceiling on the bytes of the retained parses ([`HostBytes`]); a parse
    /// larger than this is never retained.
    pub retain_bytes: u64,
    /// A loader that arrives after the parse, while its creator still holds
    /// the slot, may reuse it (the reference's REUSE). This needs the
    /// creator's full fingerprint whenever it publishes. Off (a caller that
    /// makes one load at a time, like the CLI), the full fingerprint is
    /// computed only when a loader met the slot during the parse or
    /// retention may keep it, and late arrivals parse on their own.
    pub late_reuse: bool,
}

impl Default for CachePolicy {
    fn default() -> Self {
        CachePolicy {
            slots: 1,
            retain: 0,
            retain_bytes: DEFAULT_RETAIN_BYTES,
            late_reuse: true,
        }
    }
}

/// Default ceiling on retained parses: 1 GiB.
pub const DEFAULT_RETAIN_BYTES: u64 = 1 << 30;

/// The memory a cached product holds, for the retention ceiling.
pub trait HostBytes {
    fn host_bytes(&self) -> u64;
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
    /// Loaders holding this slot (including waiters); at 0 the slot is
    /// removed or, if retention takes it, kept unpinned.
    refs: u32,
    /// Fingerprint of every byte of the creator's file, once computed.
    full: Option<u128>,
    /// When the slot was last used (retention's LRU clock).
    used: u64,
}

struct Inner<T> {
    slots: HashMap<CacheKey, Slot<T>>,
    clock: u64,
}

/// A rendezvous cache of parse products of type `T`.
pub struct ParseCache<T> {
    inner: Mutex<Inner<T>>,
    changed: Condvar,
    policy: CachePolicy,
    /// Fingerprint keys, fresh per cache.
    seed: [u64; 4],
}

impl<T: HostBytes> Default for ParseCache<T> {
    fn default() -> Self {
        ParseCache::new(CachePolicy::default())
    }
}

/// Releases a loader's reference to its slot when dropped.
pub struct CacheRef<'c, T: HostBytes> {
    cache: &'c ParseCache<T>,
    key: Option<CacheKey>,
}

impl<T: HostBytes> Drop for CacheRef<'_, T> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            // Evicted products are dropped after the lock is released: freeing
            // a large inflated buffer must not hold up other loaders.
            let evicted = self.cache.release(key);
            drop(evicted);
        }
    }
}

/// The creator's hold on a pending slot: dropped without [`Self::finish`]
/// (the parse returned an error or panicked), it marks the slot failed and
/// wakes every waiter, so none is stranded.
struct Creating<'c, T: HostBytes> {
    cache: &'c ParseCache<T>,
    key: CacheKey,
    done: bool,
}

impl<T: HostBytes> Creating<'_, T> {
    /// Publishes a successful parse. `bytes` are the creator's file: their
    /// full fingerprint (`known` when the caller has it) is computed only if
    /// another loader has met the slot or the slot may be retained.
    fn finish(mut self, product: &Arc<T>, bytes: &[u8], known: Option<u128>) {
        let mut inner = self.cache.lock();
        loop {
            let slot = inner
                .slots
                .get_mut(&self.key)
                .expect("the creator holds its slot");
            let policy = &self.cache.policy;
            if slot.full.is_some() || (slot.refs < 2 && policy.retain == 0 && !policy.late_reuse) {
                slot.state = State::Ready;
                slot.product = Some(Arc::clone(product));
                break;
            }
            drop(inner);
            let full = known.unwrap_or_else(|| fingerprint(bytes, &self.cache.seed));
            inner = self.cache.lock();
            if let Some(slot) = inner.slots.get_mut(&self.key) {
                slot.full = Some(full);
            }
        }
        drop(inner);
        self.done = true;
        self.cache.changed.notify_all();
    }
}

impl<T: HostBytes> Drop for Creating<'_, T> {
    fn drop(&mut self) {
        if !self.done {
            if let Some(slot) = self.cache.lock().slots.get_mut(&self.key) {
                slot.state = State::Failed;
            }
            self.cache.changed.notify_all();
        }
    }
}

/// What a caller knows of a buffer from fingerprinting it once
/// ([`ParseCache::fingerprint_of`], [`ParseCache::sample_of`]): a load of
/// it then reads none of it to find its parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Known {
    pub print: u128,
    pub sample: u128,
}

/// The outcome of [`ParseCache::get_or_parse_known`].
pub struct Entry<'c, T: HostBytes, E> {
    pub role: Role,
    pub result: Result<Arc<T>, E>,
    /// Kept for its drop: the slot stays the load's while the product is in
    /// use.
    pub _hold: CacheRef<'c, T>,
}

impl<T: HostBytes> ParseCache<T> {
    /// A cache with `slots` concurrent NEFFs (1 = the reference behaviour)
    /// and no retention.
    #[cfg(test)]
    pub fn with_slots(slots: usize) -> ParseCache<T> {
        ParseCache::new(CachePolicy {
            slots,
            ..CachePolicy::default()
        })
    }

    pub fn new(policy: CachePolicy) -> ParseCache<T> {
        ParseCache {
            inner: Mutex::new(Inner {
                slots: HashMap::new(),
                clock: 0,
            }),
            changed: Condvar::new(),
            policy: CachePolicy {
                slots: policy.slots.max(1),
                ..policy
            },
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

    #[cfg(test)]
    pub fn policy(&self) -> CachePolicy {
        self.policy
    }

    // A poisoned lock only means a parse panicked on another thread; the slot
    // table itself is always left consistent, so keep using it.
    fn lock(&self) -> MutexGuard<'_, Inner<T>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The key of a NEFF buffer: its uuid (header offset 0xCC), its length
    /// and a keyed fingerprint of a few KiB sampled across it.
    pub fn key(&self, uuid: [u8; 16], bytes: &[u8]) -> CacheKey {
        CacheKey {
            uuid,
            len: bytes.len() as u64,
            sample: self.sample_of(bytes),
        }
    }

    /// The keyed fingerprint of the few KiB of `bytes` a key samples.
    pub fn sample_of(&self, bytes: &[u8]) -> u128 {
        fingerprint(&crate::container::sample::gather(bytes), &self.seed)
    }

    /// Loaders holding the slot of `key` (for tests).
    #[cfg(test)]
    fn refs(&self, key: &CacheKey) -> u32 {
        self.lock().slots.get(key).map_or(0, |s| s.refs)
    }

    /// Slots currently in use, i.e. held by a load (for tests and diagnostics).
    #[cfg(test)]
    pub fn busy_slots(&self) -> usize {
        self.lock().slots.values().filter(|s| s.refs > 0).count()
    }

    /// Parses kept by retention with no load holding them.
    #[cfg(test)]
    pub fn retained(&self) -> usize {
        self.lock().slots.values().filter(|s| s.refs == 0).count()
    }

    /// Drops one reference to `key`'s slot; returns what this evicted.
    fn release(&self, key: CacheKey) -> Vec<Slot<T>> {
        let mut inner = self.lock();
        let mut out = Vec::new();
        let Some(slot) = inner.slots.get_mut(&key) else {
            return out;
        };
        slot.refs -= 1;
        if slot.refs > 0 {
            return out;
        }
        let keep = self.policy.retain > 0
            && slot.state == State::Ready
            && slot.full.is_some()
            && slot
                .product
                .as_ref()
                .is_some_and(|p| p.host_bytes() <= self.policy.retain_bytes);
        if !keep {
            out.extend(inner.slots.remove(&key));
            return out;
        }
        inner.clock += 1;
        let now = inner.clock;
        inner.slots.get_mut(&key).expect("present").used = now;
        // Evict the least recently used unpinned parses until both bounds hold.
        loop {
            let (mut count, mut bytes) = (0usize, 0u64);
            let mut oldest: Option<(u64, CacheKey)> = None;
            for (k, s) in &inner.slots {
                if s.refs == 0 {
                    count += 1;
                    bytes += s.product.as_ref().map_or(0, |p| p.host_bytes());
                    if oldest.is_none_or(|(u, _)| s.used < u) {
                        oldest = Some((s.used, *k));
                    }
                }
            }
            match oldest {
                Some((_, k)) if count > self.policy.retain || bytes > self.policy.retain_bytes => {
                    out.extend(inner.slots.remove(&k));
                }
                _ => break,
            }
        }
        out
    }

    /// The fingerprint of every byte of `bytes` under this cache's keys
    /// (what [`ParseCache::get_or_parse_known`] takes).
    pub fn fingerprint_of(&self, bytes: &[u8]) -> u128 {
        fingerprint(bytes, &self.seed)
    }

    /// [`ParseCache::get_or_parse_known`] without a fingerprint taken before.
    #[cfg(test)]
    pub fn get_or_parse<E>(
        &self,
        uuid: [u8; 16],
        bytes: &[u8],
        parse: impl FnOnce() -> Result<T, E>,
    ) -> Entry<'_, T, E> {
        self.get_or_parse_known(uuid, bytes, None, parse)
    }

    /// Joins the rendezvous for the NEFF in `bytes`, running `parse` if this
    /// loader has to. `bytes` must stay the same file for the whole call;
    /// `known` is the full fingerprint of them if the caller took it before
    /// ([`ParseCache::fingerprint_of`]), so that matching them to a parse
    /// does not read them again.
    pub fn get_or_parse_known<E>(
        &self,
        uuid: [u8; 16],
        bytes: &[u8],
        known: Option<Known>,
        parse: impl FnOnce() -> Result<T, E>,
    ) -> Entry<'_, T, E> {
        let key = match known {
            Some(k) => CacheKey {
                uuid,
                len: bytes.len() as u64,
                sample: k.sample,
            },
            None => self.key(uuid, bytes),
        };
        let known = known.map(|k| k.print);
        let role = self.join(key, bytes, known);
        let hold = CacheRef {
            cache: self,
            key: matches!(role, Joined::Create | Joined::Shared(..) | Joined::Failed)
                .then_some(key),
        };
        match role {
            Joined::Shared(role, product) => {
                tracing::debug!(
                    "{}",
                    if role == Role::Reuse {
                        "using cache"
                    } else {
                        "using cache after wait"
                    }
                );
                Entry {
                    role,
                    result: Ok(product),
                    _hold: hold,
                }
            }
            Joined::Create => {
                tracing::debug!("first worker, creating cache");
                let creating = Creating {
                    cache: self,
                    key,
                    done: false,
                };
                let result = parse().map(Arc::new);
                if let Ok(p) = &result {
                    creating.finish(p, bytes, known);
                } // else: dropping `creating` marks the slot failed and wakes the waiters.
                Entry {
                    role: Role::Creator,
                    result,
                    _hold: hold,
                }
            }
            Joined::Failed | Joined::Alone => {
                let role = if matches!(role, Joined::Failed) {
                    tracing::debug!("cache creation failed, do my own");
                    Role::IndependentHoldingRef
                } else {
                    tracing::debug!("proceeding independently");
                    Role::Independent
                };
                Entry {
                    role,
                    result: parse().map(Arc::new),
                    _hold: hold,
                }
            }
        }
    }

    /// Finds or makes `key`'s slot and decides this loader's part. On return
    /// the loader holds a reference for `Create`, `Shared` and `Failed`.
    fn join(&self, key: CacheKey, bytes: &[u8], known: Option<u128>) -> Joined<T> {
        let mut inner = self.lock();
        let Some(slot) = inner.slots.get_mut(&key) else {
            if inner.slots.values().filter(|s| s.refs > 0).count() >= self.policy.slots {
                return Joined::Alone;
            }
            inner.slots.insert(
                key,
                Slot {
                    state: State::Pending,
                    product: None,
                    refs: 1,
                    full: None,
                    used: 0,
                },
            );
            return Joined::Create;
        };
        let waited = match slot.state {
            // Stays failed until its holders release it.
            State::Failed => return Joined::Alone,
            // A finished parse whose file was never fingerprinted cannot be
            // matched to these bytes.
            State::Ready if slot.full.is_none() => return Joined::Alone,
            State::Ready => false,
            State::Pending => {
                tracing::debug!("waiting for cache creation");
                true
            }
        };
        // Pinned from here: the slot stays while this loader compares.
        slot.refs += 1;
        drop(inner);
        let mine = known.unwrap_or_else(|| fingerprint(bytes, &self.seed));
        let mut inner = self.lock();
        loop {
            let slot = inner
                .slots
                .get(&key)
                .expect("a slot with holders is never removed");
            match slot.state {
                State::Pending => {
                    inner = self.changed.wait(inner).unwrap_or_else(|p| p.into_inner());
                }
                State::Failed => return Joined::Failed,
                State::Ready if slot.full == Some(mine) => {
                    let product = slot
                        .product
                        .clone()
                        .expect("a ready slot holds its product");
                    inner.clock += 1;
                    let now = inner.clock;
                    inner.slots.get_mut(&key).expect("present").used = now;
                    let role = if waited {
                        Role::ReuseAfterWait
                    } else {
                        Role::Reuse
                    };
                    return Joined::Shared(role, product);
                }
                State::Ready => {
                    // Same cheap key, different file: let go and parse alone.
                    drop(inner);
                    drop(self.release(key));
                    return Joined::Alone;
                }
            }
        }
    }
}

/// What [`ParseCache::join`] decided.
enum Joined<T> {
    Create,
    Shared(Role, Arc<T>),
    Failed,
    Alone,
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

    impl HostBytes for u32 {
        fn host_bytes(&self) -> u64 {
            u64::from(*self)
        }
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
                        let e = cache.get_or_parse::<()>([1; 16], b"neff", || {
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
                        let e = cache.get_or_parse([1; 16], b"neff", || {
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
        let first = cache.get_or_parse::<()>([1; 16], b"a", || Ok(1));
        assert_eq!(first.role, Role::Creator);
        let other = cache.get_or_parse::<()>([2; 16], b"b", || Ok(2));
        assert_eq!(other.role, Role::Independent);
        assert_eq!(*other.result.unwrap(), 2);
        let again = cache.get_or_parse::<()>([1; 16], b"a", || panic!("must reuse"));
        assert_eq!(again.role, Role::Reuse);
        drop((first, again));
        assert_eq!(cache.busy_slots(), 0);
        // Empty again: the other NEFF may now create.
        assert_eq!(
            cache.get_or_parse::<()>([2; 16], b"b", || Ok(2)).role,
            Role::Creator
        );
    }

    #[test]
    fn without_late_reuse_a_lone_creator_skips_the_full_fingerprint() {
        let cache = ParseCache::<u32>::new(CachePolicy {
            late_reuse: false,
            ..CachePolicy::default()
        });
        let first = cache.get_or_parse::<()>([1; 16], b"a", || Ok(1));
        assert_eq!(first.role, Role::Creator);
        assert_eq!(cache.lock().slots.values().next().unwrap().full, None);
        // Nobody met the slot while it was parsed, so the creator's file was
        // never fingerprinted: a late loader cannot prove it is the same
        // file and parses on its own.
        let late = cache.get_or_parse::<()>([1; 16], b"a", || Ok(3));
        assert_eq!(late.role, Role::Independent);
        assert_eq!(*late.result.unwrap(), 3);
        drop(first);
        assert_eq!(cache.busy_slots(), 0);
    }

    #[test]
    fn same_uuid_different_bytes_is_a_different_neff() {
        let cache = ParseCache::<u32>::default();
        let a = cache.get_or_parse::<()>([7; 16], b"original", || Ok(1));
        let b = cache.get_or_parse::<()>([7; 16], b"damaged!", || Ok(2));
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
        let cache = ParseCache::<u32>::with_slots(2);
        let a = cache.get_or_parse::<()>([1; 16], b"a", || Ok(1));
        let b = cache.get_or_parse::<()>([2; 16], b"b", || Ok(2));
        assert_eq!((a.role, b.role), (Role::Creator, Role::Creator));
        assert_eq!(cache.busy_slots(), 2);
        let c = cache.get_or_parse::<()>([3; 16], b"c", || Ok(3));
        assert_eq!(c.role, Role::Independent, "both slots are busy");
        drop((a, b, c));
        assert_eq!(cache.busy_slots(), 0);
    }

    /// A creator that panics must not strand its waiters: the slot turns
    /// failed, every waiter wakes and parses on its own, and a later load of
    /// the same NEFF is served. The waiter runs on a detached thread and is
    /// awaited with a bound, so a stranded waiter fails the test instead of
    /// hanging it.
    #[test]
    fn a_panicking_creator_wakes_its_waiters_and_frees_the_slot() {
        let cache = Arc::new(ParseCache::<u32>::default());
        let k = cache.key([9; 16], b"neff");
        let creator = {
            let cache = Arc::clone(&cache);
            std::thread::spawn(move || {
                let _ = cache.get_or_parse::<()>([9; 16], b"neff", || {
                    // Panic only once a waiter has joined the slot.
                    while cache.refs(&k) < 2 {
                        std::thread::yield_now();
                    }
                    panic!("injected parse panic");
                });
            })
        };
        let (tx, rx) = std::sync::mpsc::channel();
        {
            let cache = Arc::clone(&cache);
            std::thread::spawn(move || {
                while cache.refs(&k) < 1 {
                    std::thread::yield_now();
                }
                // The entry (and its reference on the slot) is gone before
                // the test goes on to the later load.
                let got = {
                    let e = cache.get_or_parse::<()>([9; 16], b"neff", || Ok(7));
                    (e.role, e.result.map(|p| *p))
                };
                let _ = tx.send(got);
            });
        }
        let got = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the waiter of a panicked creator was never woken");
        assert!(creator.join().is_err(), "the creator panicked");
        assert_eq!(got, (Role::IndependentHoldingRef, Ok(7)));
        let later = cache.get_or_parse::<()>([9; 16], b"neff", || Ok(8));
        assert_eq!(
            (later.role, later.result.clone().map(|p| *p)),
            (Role::Creator, Ok(8))
        );
        drop(later);
        assert_eq!(cache.busy_slots(), 0);
    }

    fn retaining(retain: usize, retain_bytes: u64) -> ParseCache<u32> {
        ParseCache::new(CachePolicy {
            slots: 1,
            retain,
            retain_bytes,
            late_reuse: false,
        })
    }

    /// One load of `bytes` (uuid 1); returns its role and product.
    fn load(cache: &ParseCache<u32>, bytes: &[u8], value: u32) -> (Role, u32) {
        let e = cache.get_or_parse::<()>([1; 16], bytes, || Ok(value));
        (e.role, *e.result.unwrap())
    }

    #[test]
    fn retention_keeps_the_last_n_parses_and_evicts_the_least_recently_used() {
        let cache = retaining(2, 1 << 20);
        assert_eq!(load(&cache, b"a", 1), (Role::Creator, 1));
        assert_eq!(load(&cache, b"b", 2), (Role::Creator, 2));
        assert_eq!((cache.retained(), cache.busy_slots()), (2, 0));
        assert_eq!(load(&cache, b"a", 0), (Role::Reuse, 1), "a is used again");
        assert_eq!(load(&cache, b"c", 3), (Role::Creator, 3), "evicts b");
        assert_eq!(cache.retained(), 2);
        assert_eq!(load(&cache, b"b", 4), (Role::Creator, 4), "b was evicted");
        assert_eq!(load(&cache, b"c", 0), (Role::Reuse, 3), "c outlived a");
        assert_eq!(load(&cache, b"a", 5), (Role::Creator, 5), "a was evicted");
    }

    #[test]
    fn retention_is_bounded_by_bytes() {
        let cache = retaining(4, 10);
        assert_eq!(load(&cache, b"a", 6), (Role::Creator, 6));
        assert_eq!(load(&cache, b"b", 6), (Role::Creator, 6));
        assert_eq!(cache.retained(), 1, "6 + 6 bytes exceed 10: a goes");
        assert_eq!(load(&cache, b"b", 0), (Role::Reuse, 6));
        assert_eq!(load(&cache, b"c", 11), (Role::Creator, 11));
        assert_eq!(
            load(&cache, b"c", 12),
            (Role::Creator, 12),
            "too large to keep"
        );
        assert_eq!(load(&cache, b"b", 0), (Role::Reuse, 6));
    }

    /// Two files whose cheap keys agree (one byte apart, outside the sample).
    fn cheap_twins(cache: &ParseCache<u32>) -> (Vec<u8>, Vec<u8>) {
        let a: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        for at in 0..a.len() {
            let mut b = a.clone();
            b[at] ^= 1;
            if cache.key([1; 16], &a) == cache.key([1; 16], &b) {
                return (a, b);
            }
        }
        unreachable!("the sample covers a small part of 20,000 bytes")
    }

    #[test]
    fn a_retained_parse_is_never_shared_with_a_file_that_only_looks_alike() {
        let cache = retaining(1, 1 << 20);
        let (a, b) = cheap_twins(&cache);
        assert_eq!(load(&cache, &a, 1), (Role::Creator, 1));
        assert_eq!(load(&cache, &b, 2), (Role::Independent, 2));
        assert_eq!(load(&cache, &a, 0), (Role::Reuse, 1));
    }

    #[test]
    fn a_waiter_with_a_look_alike_file_parses_alone() {
        let cache = ParseCache::<u32>::new(CachePolicy {
            late_reuse: false,
            ..CachePolicy::default()
        });
        let (a, b) = cheap_twins(&cache);
        let k = cache.key([1; 16], &a);
        let (creator, waiter) = std::thread::scope(|s| {
            let c = s.spawn(|| {
                cache
                    .get_or_parse::<()>([1; 16], &a, || {
                        while cache.refs(&k) < 2 {
                            std::thread::yield_now();
                        }
                        Ok(1)
                    })
                    .result
                    .map(|p| *p)
            });
            while cache.refs(&k) < 1 {
                std::thread::yield_now();
            }
            let w = load(&cache, &b, 2);
            (c.join().unwrap(), w)
        });
        assert_eq!(creator, Ok(1));
        assert_eq!(waiter, (Role::Independent, 2));
        assert_eq!(cache.busy_slots(), 0);
    }

    /// Loads of three files from six threads with retention and eviction
    /// churning: every load gets the product of its own file, and the cache
    /// ends with nothing held and at most `retain` parses kept.
    #[test]
    fn concurrent_loads_with_retention_never_cross_files() {
        let cache = ParseCache::<u32>::new(CachePolicy {
            slots: 2,
            retain: 2,
            retain_bytes: 1 << 20,
            late_reuse: true,
        });
        let files: Vec<Vec<u8>> = (1..=3u8).map(|f| vec![f; 10_000]).collect();
        let parses = AtomicU32::new(0);
        std::thread::scope(|s| {
            for t in 0..6usize {
                let (cache, files, parses) = (&cache, &files, &parses);
                s.spawn(move || {
                    for i in 0..200usize {
                        let f = (t + i * (t + 1)) % 3;
                        let e = cache.get_or_parse::<()>([9; 16], &files[f], || {
                            parses.fetch_add(1, Ordering::Relaxed);
                            Ok(u32::from(files[f][0]))
                        });
                        assert_eq!(*e.result.unwrap(), u32::from(files[f][0]), "{:?}", e.role);
                    }
                });
            }
        });
        assert_eq!(cache.busy_slots(), 0);
        assert!(cache.retained() <= 2);
        assert!(parses.load(Ordering::Relaxed) < 1200, "some loads shared");
    }
}
