//! The registry of live pointers handed to C.
//!
//! Every object the library gives a C caller (a model, a tensor, a tensor
//! set, a tensor-info array) is a `Box` turned into a raw pointer and
//! recorded here with its kind. A pointer is dereferenced only while it is
//! recorded, and only under this registry's lock, and it is freed only by the
//! call that removed it from the registry. So NULL, a stale pointer (a second
//! unload or free) or a pointer of another kind is refused with a status
//! instead of being freed twice or read after free.
//!
//! A freed address may be reused by a later allocation; a caller that keeps
//! using a freed handle may then reach the new object. That is a caller bug
//! the registry cannot detect (as with any C API), but it is never undefined
//! behaviour inside this library.

use std::collections::BTreeSet;
use std::sync::{Mutex, MutexGuard};

/// What a registered pointer points to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Kind {
    Model,
    Tensor,
    TensorSet,
    TensorInfo,
}

static LIVE: Mutex<BTreeSet<(Kind, usize)>> = Mutex::new(BTreeSet::new());

fn live() -> MutexGuard<'static, BTreeSet<(Kind, usize)>> {
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Records a pointer just produced by `Box::into_raw` for `kind`.
pub(crate) fn register<T>(kind: Kind, ptr: *mut T) {
    live().insert((kind, ptr as usize));
}

/// Removes a pointer; true when it was live (the caller now owns the box
/// and must free it), false when it was not (nothing may be done with it).
pub(crate) fn unregister<T>(kind: Kind, ptr: *const T) -> bool {
    live().remove(&(kind, ptr as usize))
}

/// Removes and returns every live pointer of a kind (for `nrt_close`).
pub(crate) fn drain(kind: Kind) -> Vec<usize> {
    let mut set = live();
    let taken: Vec<usize> = set
        .iter()
        .filter(|(k, _)| *k == kind)
        .map(|&(_, p)| p)
        .collect();
    for p in &taken {
        set.remove(&(kind, *p));
    }
    taken
}

/// Runs `f` on the object behind `ptr` if it is a live pointer of `kind`,
/// holding the registry lock so it cannot be freed meanwhile.
///
/// # Safety
/// Every pointer registered with `kind` must have been produced by
/// `Box::<T>::into_raw` for this same `T`.
pub(crate) unsafe fn with_live<T, R>(
    kind: Kind,
    ptr: *const T,
    f: impl FnOnce(&mut T) -> R,
) -> Option<R> {
    let set = live();
    if ptr.is_null() || !set.contains(&(kind, ptr as usize)) {
        return None;
    }
    // SAFETY: the pointer is registered for `kind`, so (by this function's
    // contract) it came from `Box::<T>::into_raw` and has not been freed:
    // freeing first removes it from the registry, which needs the lock we
    // hold. Holding the lock also makes this the only access in progress.
    let object = unsafe { &mut *(ptr as *mut T) };
    let result = f(object);
    drop(set);
    Some(result)
}
