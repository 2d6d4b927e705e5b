//! The two handle spaces and the model table (stage.md §3.4, §10, §11).
//!
//! `H_MODEL` names a load's per-core model records; it is taken from an
//! atomic counter **before** staging (so every core of the load shares it)
//! and skips 0. `H_NN` names the registered model; it is taken under the
//! registry's write lock **after** staging succeeded, so a failed load never
//! consumes one. Unload erases the entry first (no new users can find it),
//! then waits for the users that already hold it.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{fence, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use thiserror::Error;

use crate::ids::{HModel, HNn};
use crate::NrtStatus;

/// `DLR_MODEL_STATE` value of a loaded, idle model: the only value load
/// stores and unload accepts.
pub const STATE_READY: u32 = 4;

/// How long an unload waits for a model's users before it says so (it
/// goes on waiting, without a timeout, as the reference does).
const WAIT_WARN_AFTER: Duration = Duration::from_secs(10);

#[derive(Debug, Error, PartialEq, Eq)]
pub enum RegistryError {
    #[error("Failed to find model: {0}")]
    UnknownModel(u32),
    #[error("DLR {h_nn} state {state}, must be stopped before unloading")]
    WrongState { h_nn: u32, state: u32 },
}

impl RegistryError {
    pub fn status(&self) -> NrtStatus {
        match self {
            RegistryError::UnknownModel(_) => NrtStatus::InvalidHandle,
            RegistryError::WrongState { .. } => NrtStatus::Invalid,
        }
    }
}

/// A registered model: its handle, state and payload.
#[derive(Debug)]
pub struct Registered<M> {
    state: AtomicU32,
    pub model: M,
}

impl<M> Registered<M> {
    pub fn state(&self) -> u32 {
        self.state.load(Ordering::Acquire)
    }

    /// Sets the state word (tests use it to exercise the unload guard).
    #[cfg(any(test, feature = "testkit"))]
    pub fn set_state(&self, state: u32) {
        self.state.store(state, Ordering::Release);
    }
}

/// A use of a registered model; unload waits until every one is dropped.
pub struct ModelRef<M> {
    /// `None` only while dropping.
    entry: Option<Arc<Registered<M>>>,
    released: Arc<Released>,
}

impl<M> std::ops::Deref for ModelRef<M> {
    type Target = Registered<M>;
    fn deref(&self) -> &Registered<M> {
        self.entry.as_ref().expect("only drop takes the entry")
    }
}

impl<M> Drop for ModelRef<M> {
    /// Lets go of the entry, then wakes an unload waiting for its users. An
    /// unload checks the users under the same lock it waits on, so a
    /// release between its check and its wait still wakes it.
    ///
    /// Only when an unload waits: a condition variable's wake is a system
    /// call even with nobody to wake, and every use of a model ends here
    /// (two for each load of a plan). The release and the unload's count of waiters are each followed by
    /// a sequentially consistent fence, so of the two reads after them (the
    /// unload's of the users, this one's of the waiters) at least one sees
    /// the other's write: the unload finds no user left, or it is woken.
    fn drop(&mut self) {
        drop(self.entry.take());
        fence(Ordering::SeqCst);
        if self.released.waiting.load(Ordering::Relaxed) == 0 {
            return;
        }
        let _held = self
            .released
            .lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        self.released.signal.notify_all();
    }
}

/// Where an unload waits for a model's users to let go.
#[derive(Default)]
struct Released {
    lock: Mutex<()>,
    signal: Condvar,
    /// Unloads between counting themselves in and having their model back.
    waiting: AtomicUsize,
}

struct Table<M> {
    next_nn: u32,
    models: HashMap<HNn, Arc<Registered<M>>>,
}

/// The process-wide model table.
pub struct Registry<M> {
    table: RwLock<Table<M>>,
    last_model: AtomicU32,
    released: Arc<Released>,
}

impl<M> Default for Registry<M> {
    fn default() -> Self {
        Registry {
            table: RwLock::new(Table {
                next_nn: 1,
                models: HashMap::new(),
            }),
            last_model: AtomicU32::new(0),
            released: Arc::default(),
        }
    }
}

impl<M> Registry<M> {
    fn read(&self) -> RwLockReadGuard<'_, Table<M>> {
        self.table.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Table<M>> {
        self.table.write().unwrap_or_else(|p| p.into_inner())
    }

    /// A fresh `H_MODEL`: increments, and increments again past 0 (reserved).
    pub fn new_h_model(&self) -> HModel {
        loop {
            let id = self
                .last_model
                .fetch_add(1, Ordering::AcqRel)
                .wrapping_add(1);
            if id != 0 {
                return HModel(id);
            }
        }
    }

    /// Registers a staged model as READY and returns its `H_NN`.
    pub fn register(&self, model: M) -> HNn {
        let mut t = self.write();
        let mut id = t.next_nn;
        // Skip 0 and any handle still in use after a wrap.
        while id == 0 || t.models.contains_key(&HNn(id)) {
            id = id.wrapping_add(1);
        }
        t.next_nn = id.wrapping_add(1);
        let h = HNn(id);
        t.models.insert(
            h,
            Arc::new(Registered {
                state: AtomicU32::new(STATE_READY),
                model,
            }),
        );
        h
    }

    /// Looks a model up; unload waits until the returned reference drops.
    pub fn acquire(&self, h: HNn) -> Result<ModelRef<M>, RegistryError> {
        let t = self.read();
        let entry = t.models.get(&h).ok_or(RegistryError::UnknownModel(h.0))?;
        Ok(ModelRef {
            entry: Some(Arc::clone(entry)),
            released: Arc::clone(&self.released),
        })
    }

    /// The unload commit point: checks the state, erases the entry so no new
    /// user can find it, then waits (without a timeout, as the reference
    /// does) for current users to finish. Returns the model for teardown.
    pub fn remove(&self, h: HNn) -> Result<Registered<M>, RegistryError> {
        let entry = {
            let mut t = self.write();
            let entry = t.models.get(&h).ok_or(RegistryError::UnknownModel(h.0))?;
            let state = entry.state();
            if state != STATE_READY {
                return Err(RegistryError::WrongState { h_nn: h.0, state });
            }
            t.models.remove(&h).expect("present")
        };
        // Every user holds a clone of the entry; the registry's is the last.
        let mut entry = entry;
        let mut held = self
            .released
            .lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        self.released.waiting.fetch_add(1, Ordering::SeqCst);
        loop {
            // Pairs with the fence after a user's release (`ModelRef::drop`).
            fence(Ordering::SeqCst);
            match Arc::try_unwrap(entry) {
                Ok(owned) => {
                    self.released.waiting.fetch_sub(1, Ordering::Relaxed);
                    return Ok(owned);
                }
                Err(shared) => entry = shared,
            }
            let (next, waited) = self
                .released
                .signal
                .wait_timeout(held, WAIT_WARN_AFTER)
                .unwrap_or_else(PoisonError::into_inner);
            held = next;
            if waited.timed_out() {
                tracing::warn!("still waiting for model[{}] ref count 0", h.0);
            }
        }
    }

    /// Every registered handle, in ascending order.
    pub fn handles(&self) -> Vec<HNn> {
        let mut v: Vec<HNn> = self.read().models.keys().copied().collect();
        v.sort();
        v
    }

    pub fn len(&self) -> usize {
        self.read().models.len()
    }

    #[cfg(any(test, feature = "testkit"))]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The NEFF name of every load that holds device memory, by `H_MODEL`:
/// from the moment its `H_MODEL` is taken, before staging allocates
/// anything, until its model is unloaded or the load fails. The runtime's
/// out-of-memory report names each NEFF id it lists, the load being refused
/// among them, and is written by an observer of the device, which can hold
/// this book but not the runtime.
#[derive(Debug, Default)]
pub struct ModelNames {
    names: Mutex<BTreeMap<HModel, String>>,
}

impl ModelNames {
    /// The name of the load `h`, while it holds memory.
    pub fn get(&self, h: HModel) -> Option<String> {
        self.lock().get(&h).cloned()
    }

    /// Names `h` until the returned entry drops.
    pub fn enter(self: &Arc<ModelNames>, h: HModel, name: String) -> NameEntry {
        self.lock().insert(h, name);
        NameEntry {
            names: Arc::clone(self),
            h,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<HModel, String>> {
        self.names.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One load's name in [`ModelNames`], removed when dropped.
#[derive(Debug)]
pub struct NameEntry {
    names: Arc<ModelNames>,
    h: HModel,
}

impl Drop for NameEntry {
    fn drop(&mut self) {
        self.names.lock().remove(&self.h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn h_model_skips_zero_and_h_nn_is_taken_at_registration() {
        let r = Registry::<&str>::default();
        assert_eq!(r.new_h_model(), HModel(1));
        assert_eq!(r.new_h_model(), HModel(2));
        r.last_model.store(u32::MAX, Ordering::SeqCst);
        assert_eq!(r.new_h_model(), HModel(1), "wraps past 0");
        let a = r.register("a");
        let b = r.register("b");
        assert_eq!((a, b), (HNn(1), HNn(2)));
        assert_eq!(r.acquire(a).unwrap().model, "a");
        assert_eq!(r.acquire(a).unwrap().state(), STATE_READY);
    }

    #[test]
    fn unload_guards_and_commit_point() {
        let r = Registry::<u32>::default();
        let h = r.register(7);
        assert_eq!(
            r.remove(HNn(99)).unwrap_err().status(),
            NrtStatus::InvalidHandle
        );
        r.acquire(h).unwrap().set_state(2);
        let e = r.remove(h).unwrap_err();
        assert_eq!(e, RegistryError::WrongState { h_nn: 1, state: 2 });
        assert_eq!(e.status(), NrtStatus::Invalid);
        assert_eq!(r.len(), 1, "a refused unload changes nothing");
        r.acquire(h).unwrap().set_state(STATE_READY);
        assert_eq!(r.remove(h).unwrap().model, 7);
        assert!(r.is_empty());
        assert_eq!(
            r.remove(h).unwrap_err(),
            RegistryError::UnknownModel(1),
            "double unload"
        );
    }

    #[test]
    fn unload_waits_for_users_and_hides_the_model_at_once() {
        let r = Registry::<u32>::default();
        let h = r.register(1);
        let user = r.acquire(h).unwrap();
        std::thread::scope(|s| {
            let t = s.spawn(|| r.remove(h).map(|e| e.model));
            std::thread::sleep(Duration::from_millis(50));
            assert!(r.acquire(h).is_err(), "erased before draining");
            assert!(!t.is_finished(), "still draining");
            drop(user);
            assert_eq!(t.join().unwrap(), Ok(1));
        });
    }

    /// Users let go while unloads are between counting their users and
    /// waiting: every unload gets its model back at once. A lost wake would
    /// leave one waiting until its timed recheck (`WAIT_WARN_AFTER`); the
    /// shorter deadline makes that a failure (the threads are not scoped,
    /// so a stuck one cannot hold the test).
    #[test]
    fn no_release_is_missed_by_a_waiting_unload() {
        let r = Arc::new(Registry::<u32>::default());
        for round in 0..2_000u32 {
            let h = r.register(round);
            let (done, finished) = std::sync::mpsc::channel();
            for spin in [round % 7, round % 50, 0] {
                let user = r.acquire(h).unwrap();
                std::thread::spawn(move || {
                    for _ in 0..spin {
                        std::hint::spin_loop();
                    }
                    drop(user);
                });
            }
            let unloader = Arc::clone(&r);
            std::thread::spawn(move || done.send(unloader.remove(h).map(|e| e.model)));
            let got = finished.recv_timeout(WAIT_WARN_AFTER / 2);
            assert_eq!(got, Ok(Ok(round)), "round {round}");
        }
        assert!(r.is_empty());
    }

    #[test]
    fn a_name_lasts_as_long_as_its_entry() {
        let names = Arc::new(ModelNames::default());
        let a = names.enter(HModel(3), "a".into());
        let b = names.enter(HModel(4), "b".into());
        assert_eq!(names.get(HModel(3)).as_deref(), Some("a"));
        drop(a);
        assert_eq!(names.get(HModel(3)), None);
        assert_eq!(names.get(HModel(4)).as_deref(), Some("b"));
        drop(b);
        assert!(names.lock().is_empty());
    }
}
