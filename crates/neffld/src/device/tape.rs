//! What one thread asks of the devices, kept while it stages a NEFF for
//! real, so that later loads of the same NEFF on the same cores can make
//! the same requests without staging again (`stage::replay`); and the
//! quiet a replay runs in, so that a request it finds refused is not shown
//! to observers: the load is then staged for real, which makes that
//! request again and shows its refusal as every load does.
//!
//! Both are per thread: a staging that records builds its cores on its own
//! thread, and a device other threads use at the same time records none of
//! their requests.

use std::cell::{Cell, RefCell};

use super::{AllocReq, BatchReq, Owner};

/// One request that succeeded, owned: whom it was for, and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Taped {
    pub owner: Owner,
    pub req: BatchReq,
}

impl Taped {
    /// `req`, owned.
    pub fn of(req: &AllocReq<'_>) -> Taped {
        Taped {
            owner: req.owner,
            req: BatchReq::of(req),
        }
    }
}

thread_local! {
    static TAPE: RefCell<Option<Vec<Taped>>> = const { RefCell::new(None) };
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f`, keeping every allocation this thread makes on any device
/// meanwhile that succeeds, in order. A recording inside another is its
/// own: the outer one sees none of the inner one's requests.
pub fn recording<R>(f: impl FnOnce() -> R) -> (R, Vec<Taped>) {
    struct Restore(Option<Vec<Taped>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let outer = self.0.take();
            TAPE.with(|t| *t.borrow_mut() = outer);
        }
    }
    let outer = TAPE.with(|t| t.borrow_mut().replace(Vec::new()));
    let restore = Restore(outer);
    let r = f();
    let taped = TAPE.with(|t| t.borrow_mut().take()).unwrap_or_default();
    drop(restore);
    (r, taped)
}

/// Runs `f` with this thread's refused allocations shown to no observer.
pub fn quietly<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            QUIET.with(|q| q.set(self.0));
        }
    }
    let _restore = Restore(QUIET.with(|q| q.replace(true)));
    f()
}

/// Whether this thread's refusals are kept from observers.
pub(super) fn quiet() -> bool {
    QUIET.with(Cell::get)
}

/// Keeps `req`, which succeeded, when this thread records.
pub(super) fn note(req: &AllocReq<'_>) {
    TAPE.with(|t| {
        if let Some(tape) = t.borrow_mut().as_mut() {
            tape.push(Taped::of(req));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{Geometry, MemUsage, NullDevice, Place};
    use crate::ids::PCore;
    use crate::Arch;
    use std::sync::Arc;

    fn req(hint: &str, size: u64) -> AllocReq<'_> {
        AllocReq {
            size,
            align: 0,
            core: PCore(0),
            usage: MemUsage::Weight,
            owner: Owner::Client,
            place: Place::Kernel,
            hint,
        }
    }

    #[test]
    fn a_recording_keeps_its_own_threads_successes_in_order() {
        let dev = NullDevice::new(Geometry::for_arch(Arch::Cayman));
        let too_big = dev.geometry().hbm_bytes_per_channel() * 2;
        let (inner, outer) = recording(|| {
            dev.alloc(req("a", 4096)).unwrap();
            assert!(dev.alloc(req("refused", too_big)).is_err());
            let ((), inner) = recording(|| {
                dev.alloc(req("inner", 8192)).unwrap();
            });
            let dev = &dev;
            std::thread::scope(|s| {
                s.spawn(|| dev.alloc(req("other thread", 4096)).unwrap());
            });
            dev.alloc(req("b", 100)).unwrap();
            inner
        });
        let hints = |t: &[Taped]| t.iter().map(|r| r.req.hint.to_string()).collect::<Vec<_>>();
        assert_eq!(hints(&outer), ["a", "b"]);
        assert_eq!(hints(&inner), ["inner"]);
        assert_eq!(outer[1].req.size, 100);
        // Nothing is kept outside a recording.
        dev.alloc(req("after", 4096)).unwrap();
        let ((), none) = recording(|| {});
        assert!(none.is_empty());
    }

    #[derive(Default)]
    struct Refusals(std::sync::Mutex<Vec<String>>);
    impl crate::device::Observer for Refusals {
        fn refused(
            &self,
            req: &AllocReq<'_>,
            _e: &crate::device::DeviceError,
            _l: &crate::device::Ledger,
        ) {
            self.0.lock().unwrap().push(req.hint.to_string());
        }
    }

    #[test]
    fn quiet_refusals_reach_no_observer_and_the_quiet_ends_with_the_call() {
        let dev = NullDevice::new(Geometry::for_arch(Arch::Cayman));
        let seen = Arc::new(Refusals::default());
        dev.observe(seen.clone());
        let too_big = dev.geometry().hbm_bytes_per_channel() * 2;
        let quiet = quietly(|| dev.alloc(req("quiet", too_big)));
        assert!(quiet.is_err());
        assert!(dev.alloc(req("loud", too_big)).is_err());
        assert_eq!(*seen.0.lock().unwrap(), ["loud"]);
    }
}
