//! Watching a device: every allocation, free and copy, shown to observers
//! before (or after) the bookkeeping layer performs it. The CLI records
//! what a load placed so a failed load can still show it, tests hold a
//! build at a chosen point, the benchmarks time the copies; none of them
//! has to stand between the loader and the device and forward every call.

use std::time::Duration;

use super::{AllocReq, Allocation, DeviceError, Ledger, MemHandle, Write};

/// What an observer is shown. Every hook defaults to doing nothing; a hook
/// runs on the calling thread, outside the device's locks, so it may block
/// (a test holding a build) but must not call back into the same device
/// for an allocation it is being shown.
pub trait Observer: Send + Sync {
    /// An allocation is about to be attempted.
    fn allocating(&self, _req: &AllocReq<'_>) {}

    /// An allocation was refused for want of room; `ledger` is the device's
    /// memory as the refusal found it (what the runtime's out-of-memory
    /// report shows). Shown before [`Observer::allocated`].
    fn refused(&self, _req: &AllocReq<'_>, _error: &DeviceError, _ledger: &Ledger) {}

    /// Whether the next refusal is wanted by [`Observer::refused`]: the
    /// ledger is copied for it only when some observer says yes (a copy of
    /// a ledger holding thousands of loads is not free, and a planner
    /// measuring headroom meets refusals by design).
    fn wants_refusals(&self) -> bool {
        true
    }

    /// Whether each allocation is to be shown ([`Observer::allocating`],
    /// [`Observer::allocated`], [`Observer::refused`]) now: while none
    /// wants them, a batch ([`super::Device::alloc_batch`]) is made in one
    /// step and only a refusal is shown.
    fn wants_allocations(&self) -> bool {
        true
    }

    /// An allocation was attempted, with its outcome.
    fn allocated(&self, _req: &AllocReq<'_>, _result: Result<&Allocation, &DeviceError>) {}

    /// A live allocation is about to be freed.
    fn freeing(&self, _handle: MemHandle) {}

    /// A copy is about to be checked and performed (each write of a batch).
    fn writing(&self, _write: &Write<'_>) {}

    /// A batch of copies (one for a single write) finished after `elapsed`;
    /// only the copies before the first refused one were performed.
    fn written(&self, _writes: &[Write<'_>], _elapsed: Duration) {}
}
