//! The registry of live pointers handed to C, and the [`Handle`] trait that
//! ties each C handle type to the Rust object behind it.
//!
//! Every object the library gives a C caller (a model, a tensor, a tensor
//! set, a trace or profiling options object, a tensor-info array) is a `Box`
//! turned into a raw pointer and recorded here with its kind. A pointer is
//! dereferenced only while it is recorded, and only under this registry's
//! lock, and it is freed only by the call that removed it from the registry.
//! So NULL, a stale pointer (a second unload or free) or a pointer of another
//! kind is refused with a status instead of being freed twice or read after
//! free.
//!
//! A freed address may be reused by a later allocation; a caller that keeps
//! using a freed handle may then reach the new object. That is a caller bug
//! the registry cannot detect (as with any C API), but it is never undefined
//! behaviour inside this library.

use std::collections::BTreeSet;
use std::sync::{Mutex, MutexGuard};

use tracing::error;

use crate::abi::nrt_status::NRT_STATUS;
use crate::boundary::non_null;

/// What a registered pointer points to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Kind {
    Model,
    Tensor,
    TensorSet,
    TensorInfo,
    TraceConfig,
    TraceFetchOptions,
    ProfileOptions,
    InspectConfig,
}

static LIVE: Mutex<BTreeSet<(Kind, usize)>> = Mutex::new(BTreeSet::new());

fn live() -> MutexGuard<'static, BTreeSet<(Kind, usize)>> {
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Records a pointer just produced by an allocation of `kind`.
pub(crate) fn register<T>(kind: Kind, ptr: *mut T) {
    live().insert((kind, ptr as usize));
}

/// Removes a pointer; true when it was live (the caller now owns the
/// allocation and must free it), false when it was not (nothing may be done
/// with it).
pub(crate) fn unregister<T>(kind: Kind, ptr: *const T) -> bool {
    live().remove(&(kind, ptr as usize))
}

/// A C handle type: an opaque marker the caller holds a pointer to, whose
/// pointee is a boxed [`Handle::Rust`]. Only the provided methods turn one
/// into the other, so a pointer of this kind is always a live `Box<Rust>`.
pub(crate) trait Handle {
    /// The object behind the handle.
    type Rust;
    /// The registry kind of this handle type (one per implementor).
    const KIND: Kind;
    /// What the handle is, for messages ("trace configuration").
    const NAME: &'static str;

    /// Boxes `object` and returns the caller's new handle to it.
    fn hand_out(object: Self::Rust) -> *mut Self
    where
        Self: Sized,
    {
        let ptr = Box::into_raw(Box::new(object));
        register(Self::KIND, ptr);
        ptr.cast::<Self>()
    }

    /// Runs `f` on the object if `ptr` is a live handle of this kind, holding
    /// the registry lock so it cannot be freed meanwhile; `None` otherwise.
    fn with<R>(ptr: *const Self, f: impl FnOnce(&mut Self::Rust) -> R) -> Option<R>
    where
        Self: Sized,
    {
        let set = live();
        if ptr.is_null() || !set.contains(&(Self::KIND, ptr as usize)) {
            return None;
        }
        // SAFETY: pointers of `KIND` are registered only by `hand_out`, from
        // `Box::<Rust>::into_raw`, and not freed yet: freeing first removes
        // the pointer from the registry, which needs the lock we hold.
        // Holding the lock also makes this the only access in progress.
        let object = unsafe { &mut *(ptr as *mut Self::Rust) };
        let result = f(object);
        drop(set);
        Some(result)
    }

    /// As [`Handle::with`] for the argument `what` of `api`: NULL, or a
    /// pointer that is not a live handle of this kind, is logged and gives
    /// `NRT_INVALID`.
    fn with_arg<R>(
        api: &str,
        what: &str,
        ptr: *const Self,
        f: impl FnOnce(&mut Self::Rust) -> R,
    ) -> Result<R, NRT_STATUS>
    where
        Self: Sized,
    {
        non_null(api, what, ptr)?;
        Self::with(ptr, f).ok_or_else(|| {
            error!("{api}: {ptr:p} is not a live {}", Self::NAME);
            NRT_STATUS::NRT_INVALID
        })
    }

    /// Removes a live handle from the registry and returns its object (the
    /// caller now owns it); `None` when `ptr` is not a live handle.
    fn take(ptr: *const Self) -> Option<Box<Self::Rust>>
    where
        Self: Sized,
    {
        if ptr.is_null() || !unregister(Self::KIND, ptr) {
            return None;
        }
        // SAFETY: the pointer was live (so made by `hand_out` from
        // `Box::<Rust>::into_raw`) and is now unregistered, so this call is
        // its only owner.
        Some(unsafe { Box::from_raw(ptr as *mut Self::Rust) })
    }

    /// Removes every live handle of this kind and returns their objects (for
    /// `nrt_close`).
    fn drain() -> Vec<Box<Self::Rust>>
    where
        Self: Sized,
    {
        let mut set = live();
        let taken: Vec<usize> = set
            .iter()
            .filter(|(k, _)| *k == Self::KIND)
            .map(|&(_, p)| p)
            .collect();
        for p in &taken {
            set.remove(&(Self::KIND, *p));
        }
        taken
            .into_iter()
            // SAFETY: each pointer was live (made by `hand_out`) and is now
            // removed from the registry, so this is its only owner.
            .map(|p| unsafe { Box::from_raw(p as *mut Self::Rust) })
            .collect()
    }
}
