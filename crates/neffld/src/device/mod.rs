//! The device the loader stages onto (docs/reference/stage.md §3.3, §6.1, §13).
//!
//! Two layers. A [`Storage`] backend is what a driver does: place an
//! allocation in HBM, free it, copy bytes in and out. [`Device`] is the
//! runtime's bookkeeping above it, written once for every backend: the
//! live-allocation table, the one usage [`Ledger`] (core, owner, usage),
//! bounds checks, fault injection ([`FaultPlan`]) and [`Observer`]s. The
//! backends:
//!
//! - [`SimStorage`] keeps what is written, sparsely, so tests can read back
//!   weights, instruction images and rings at the addresses the loader chose;
//! - [`NullStorage`] keeps no bytes (a checksum of them on request), for
//!   NEFFs too large to mirror, for `verify`, and for planning deployments.
//!
//! `Device<S>` coerces to `Device` (`Device<dyn Storage>`), which is what
//! the loader holds. What a load allocates is owned by an [`AllocSet`] that
//! frees it when dropped, so no stage frees by hand.

pub mod address;
pub mod alloc;
mod bookkeeping;
pub mod counters;
pub mod fault;
mod free_index;
pub mod geometry;
pub mod ledger;
mod live_table;
pub mod null;
pub mod observe;
pub mod owned;
pub mod sim;
pub mod storage;
pub mod tape;

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::Instant;

use alloc::AllocFailure;
use bookkeeping::Bookkeeping;

use crate::ids::{LCore, PCore, Pa};
use crate::shared::SharedBytes;
use crate::status::NrtStatus;

#[cfg(any(test, feature = "testkit"))]
pub use alloc::SMALL_POOL_BYTES;
pub use alloc::{Place, Pool, PoolFree, StartTaken};
pub use counters::{CoreCounters, DeviceMem, MemCounter};
pub use fault::FaultOp;
#[cfg(any(test, feature = "testkit"))]
pub use fault::FaultPlan;
pub use geometry::{Geometry, CARVEOUT, GRANULE};
pub use ledger::{
    ChargeRows, Ledger, MemCategory, MemLocation, MemUsage, Owner, Rows, VncMemoryStats,
};
pub use null::NullStorage;
pub use observe::Observer;
pub use owned::{AllocSet, Owned};
pub use sim::SimStorage;
pub use storage::{CopyIn, Storage};

/// The default backend: keeps every written byte.
pub type SimDevice = Device<SimStorage>;

/// A backend that keeps no bytes.
pub type NullDevice = Device<NullStorage>;

/// Opaque handle of one live allocation. Handles are never 0 and never
/// reused within a device, so a stale handle is always `UnknownHandle`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MemHandle(pub u64);

impl fmt::Display for MemHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "mem{}", self.0)
    }
}

/// One HBM allocation request. The channel is always the HBM of `core`
/// (`hbm_of`), as in the runtime.
#[derive(Clone, Copy, Debug)]
pub struct AllocReq<'a> {
    /// Bytes the caller will use; rounded up to 4 KiB when charged.
    pub size: u64,
    /// 0 for none, else a power of two.
    pub align: u64,
    pub core: PCore,
    pub usage: MemUsage,
    /// Who the allocation is charged to.
    pub owner: Owner,
    /// Where on the channel; the kernel's size rule unless the runtime
    /// places its own start-up allocations.
    pub place: Place,
    /// What the memory is for (a variable name, "scratchpad", ...), kept for
    /// leak reports and OOM messages.
    pub hint: &'a str,
}

/// One request of a [`Device::alloc_batch`]: an [`AllocReq`] whose owner
/// is the batch's, its hint shared by every batch that repeats it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchReq {
    /// As [`AllocReq::size`].
    pub size: u64,
    /// As [`AllocReq::align`].
    pub align: u64,
    /// As [`AllocReq::core`].
    pub core: PCore,
    /// As [`AllocReq::usage`].
    pub usage: MemUsage,
    /// As [`AllocReq::place`].
    pub place: Place,
    /// As [`AllocReq::hint`].
    pub hint: Arc<str>,
}

impl BatchReq {
    /// `req` owned, its owner left out.
    pub fn of(req: &AllocReq<'_>) -> BatchReq {
        BatchReq {
            size: req.size,
            align: req.align,
            core: req.core,
            usage: req.usage,
            place: req.place,
            hint: req.hint.into(),
        }
    }

    /// The request as [`Device::alloc`] takes it.
    pub fn request(&self, owner: Owner) -> AllocReq<'_> {
        AllocReq {
            size: self.size,
            align: self.align,
            core: self.core,
            usage: self.usage,
            owner,
            place: self.place,
            hint: &self.hint,
        }
    }
}

/// What a [`Device::alloc_batch`] holds: one row of the books (its first
/// handle) or, while an observer watches each allocation, the allocations
/// made one by one.
#[derive(Debug)]
pub enum Batch {
    Row(MemHandle),
    Each(Vec<Allocation>),
}

/// A successful allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allocation {
    pub handle: MemHandle,
    /// Device address of the first byte; never 0, never in the carve-out.
    pub pa: Pa,
    /// Bytes requested (reads and writes are bounded by this).
    pub size: u64,
    /// Bytes charged to the ledger (`size` rounded up to 4 KiB).
    pub charged: u64,
}

/// A live allocation as listed by [`Device::live_allocations`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveAlloc {
    pub handle: MemHandle,
    pub owner: Owner,
    pub core: PCore,
    pub channel: u32,
    pub usage: MemUsage,
    pub pa: Pa,
    pub size: u64,
    pub charged: u64,
    pub hint: String,
}

/// Direction of a copy, for error messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CopyOp {
    Read,
    Write,
}

impl fmt::Display for CopyOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CopyOp::Read => "read",
            CopyOp::Write => "write",
        })
    }
}

/// Errors of the device layer. Each maps to one [`NrtStatus`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DeviceError {
    /// The channel has no free range that fits (`-ENOMEM` → `NRT_RESOURCE`).
    #[error(
        "Failed to allocate {size} bytes (alignment: {align}, usage: {usage}) on NC {core}: \
         out of device memory (HBM {channel} has {free} bytes free{})",
        aligned_hint(*.align),
        core = .core.0
    )]
    NoMem {
        size: u64,
        align: u64,
        core: PCore,
        channel: u32,
        usage: MemUsage,
        free: u64,
    },
    /// A malformed request (`-EINVAL` → `NRT_INVALID`).
    #[error("{reason}")]
    Invalid { reason: String },
    /// Free, read or write of a handle that is not live.
    #[error("unknown device memory handle {handle}")]
    UnknownHandle { handle: MemHandle },
    /// A copy that does not fit inside its allocation.
    #[error(
        "Copy from buffer to memory failed: {op} of {len} bytes at offset {offset} \
         is outside {handle} ({size} bytes)"
    )]
    OutOfBounds {
        op: CopyOp,
        handle: MemHandle,
        offset: u64,
        len: u64,
        size: u64,
    },
    /// A read from a backend that keeps no bytes ([`NullDevice`]).
    #[error("cannot read {handle}: this device keeps none of the bytes written")]
    NoStorage { handle: MemHandle },
    /// A failure requested by the armed [`FaultPlan`].
    #[error("injected fault: {op} #{nth} failed as planned")]
    InjectedFault { op: FaultOp, nth: u64 },
    /// The host could not hold the bytes a backend keeps for the device
    /// (`NRT_FAIL_HOST_MEM_ALLOC`).
    #[error("the simulated device's storage: {0}")]
    HostMemory(#[from] crate::fallible::HostOom),
}

/// The runtime's extra advice when an aligned request runs out of memory.
fn aligned_hint(align: u64) -> &'static str {
    if align > GRANULE {
        "; aligned allocations may fail even if HBM has space"
    } else {
        ""
    }
}

impl DeviceError {
    /// The status `nrt_load` returns when this error ends a load.
    pub fn status(&self) -> NrtStatus {
        match self {
            DeviceError::NoMem { .. } => NrtStatus::Resource,
            DeviceError::Invalid { .. } => NrtStatus::Invalid,
            DeviceError::UnknownHandle { .. }
            | DeviceError::OutOfBounds { .. }
            | DeviceError::NoStorage { .. } => NrtStatus::Failure,
            DeviceError::InjectedFault { op, .. } => match op {
                FaultOp::Alloc => NrtStatus::Resource,
                FaultOp::Write => NrtStatus::Failure,
            },
            DeviceError::HostMemory(oom) => oom.status(),
        }
    }
}

/// One copy of a batch given to [`Device::write_all`].
#[derive(Clone, Copy, Debug)]
pub struct Write<'a> {
    pub handle: MemHandle,
    pub offset: u64,
    pub data: &'a [u8],
    /// The buffer `data` lies in, when a backend may keep a reference to
    /// it instead of a copy (weights, from the inflated payload). The bytes
    /// are the same either way.
    pub shared: Option<&'a SharedBytes>,
}

/// The bookkeeping layer over a backend `S`: what the loader, the C library
/// and the tools talk to. Shareable: methods take `&self`, the books sit
/// behind one lock held only to check and enter, and the backend locks its
/// own bytes, so per-core builds on several threads copy in parallel.
pub struct Device<S: Storage + ?Sized = dyn Storage> {
    geometry: Geometry,
    books: Mutex<Bookkeeping>,
    observers: RwLock<Vec<Arc<dyn Observer>>>,
    /// Set by [`Device::retire`]: frees release nothing.
    retired: std::sync::atomic::AtomicBool,
    storage: S,
}

impl<S: Storage> Device<S> {
    /// A device of `geometry` over `storage` (built for the same geometry).
    pub fn over(geometry: Geometry, storage: S) -> Device<S> {
        let limits = (0..geometry.hbm_channels())
            .map(|c| storage.capacity(c))
            .collect();
        Device {
            books: Mutex::new(Bookkeeping::new(limits)),
            observers: RwLock::new(Vec::new()),
            retired: std::sync::atomic::AtomicBool::new(false),
            geometry,
            storage,
        }
    }
}

impl<S: Storage + ?Sized> fmt::Debug for Device<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Device")
            .field("geometry", &self.geometry)
            .field("storage", &&self.storage)
            .finish_non_exhaustive()
    }
}

impl<S: Storage + ?Sized> Device<S> {
    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// The backend (a test reads a [`SimStorage`]'s page counts from it).
    #[cfg(any(test, feature = "testkit"))]
    pub fn storage(&self) -> &S {
        &self.storage
    }

    /// A poisoned lock only means another thread panicked mid-call; the
    /// books are updated in an order that keeps them consistent.
    fn books(&self) -> MutexGuard<'_, Bookkeeping> {
        self.books.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Shows every later call to `observer` too.
    pub fn observe(&self, observer: Arc<dyn Observer>) {
        self.observers
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push(observer);
    }

    fn each_observer(&self, f: impl Fn(&dyn Observer)) {
        let observers = self
            .observers
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        for o in observers.iter() {
            f(o.as_ref());
        }
    }

    fn any_observer(&self, f: impl Fn(&dyn Observer) -> bool) -> bool {
        self.observers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .any(|o| f(o.as_ref()))
    }

    fn wanted_refusals(&self) -> bool {
        self.any_observer(|o| o.wants_refusals())
    }

    fn wanted_allocations(&self) -> bool {
        self.any_observer(|o| o.wants_allocations())
    }

    fn observed(&self) -> bool {
        !self
            .observers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty()
    }

    /// Allocates HBM on the channel of `req.core` and charges the ledger.
    /// The caller frees it; an [`AllocSet`] does that on drop.
    pub fn alloc(&self, req: AllocReq<'_>) -> Result<Allocation, DeviceError> {
        self.each_observer(|o| o.allocating(&req));
        let mut at_refusal = None;
        let result = self.alloc_unobserved(&req, &mut at_refusal);
        match &result {
            Ok(_) => tape::note(&req),
            // A replay's refusal is not the load's (`tape::quietly`).
            Err(_) if tape::quiet() => return result,
            Err(e) => {
                if let Some(ledger) = &at_refusal {
                    self.each_observer(|o| o.refused(&req, e, ledger));
                }
            }
        }
        self.each_observer(|o| o.allocated(&req, result.as_ref()));
        result
    }

    /// Makes `reqs` in order for `owner`, as [`Device::alloc`] would one
    /// after another, all or nothing: under one lock, entered and charged
    /// as one row, so that a planner replaying ten thousand loads keeps ten
    /// thousand rows, not half a million. The allocator places every
    /// request as it would alone (the same requests in the same order on
    /// the same state). While an observer wants each allocation
    /// ([`Observer::wants_allocations`]) they are made one by one instead,
    /// and shown as always. On a refusal what was made is given back, and
    /// observers are shown the refusal with the ledger as the
    /// request-by-request path would have had it. An empty batch holds
    /// nothing (no row, no handle).
    pub fn alloc_batch(&self, owner: Owner, reqs: &Arc<[BatchReq]>) -> Result<Batch, DeviceError> {
        if reqs.is_empty() || self.wanted_allocations() {
            let mut made = Vec::with_capacity(reqs.len());
            for r in reqs.iter() {
                match self.alloc(r.request(owner)) {
                    Ok(a) => made.push(a),
                    Err(e) => {
                        for a in made.iter().rev() {
                            // Just made, so known: a failure here is a bug
                            // the free reports.
                            let _ = self.free(a.handle);
                        }
                        return Err(e);
                    }
                }
            }
            return Ok(Batch::Each(made));
        }
        let mut books = self.books();
        let first = books.next_handle();
        let mut blocks = Vec::with_capacity(reqs.len());
        let mut refused = None;
        for (i, r) in reqs.iter().enumerate() {
            match self.place(&mut books, &r.request(owner), MemHandle(first.0 + i as u64)) {
                Ok(block) => blocks.push(block),
                Err(e) => {
                    refused = Some((i, e));
                    break;
                }
            }
        }
        let Some((at, e)) = refused else {
            let first = books.enter_batch(owner, reqs, blocks);
            drop(books);
            for r in reqs.iter() {
                tape::note(&r.request(owner));
            }
            return Ok(Batch::Row(first));
        };
        // The driver saw the requests before it come and go.
        let placed: Vec<(PCore, MemUsage, u64)> = reqs
            .iter()
            .zip(&blocks)
            .map(|(r, b)| (r.core, r.usage, b.charged))
            .collect();
        books.ledger.pass_through(&placed);
        // The ledger a refusal is shown with holds the requests before it,
        // as it would have had they been made one by one.
        let shown = self.shows_refusal(&e).then(|| {
            let mut ledger = books.ledger.clone();
            for (r, b) in reqs.iter().zip(&blocks) {
                ledger.charge(r.core, owner, b.channel, r.usage, b.charged, r.size);
            }
            ledger
        });
        for (i, b) in blocks.iter().enumerate().rev() {
            // Just placed, so the backend knows it.
            let _ = self.storage.release(MemHandle(first.0 + i as u64), b);
        }
        drop(books);
        if let Some(ledger) = shown {
            let req = reqs[at].request(owner);
            self.each_observer(|o| o.refused(&req, &e, &ledger));
        }
        Err(e)
    }

    /// Allocates; when the backend has no room and someone observes the
    /// device, `at_refusal` gets the ledger as the refusal found it.
    fn alloc_unobserved(
        &self,
        req: &AllocReq<'_>,
        at_refusal: &mut Option<Ledger>,
    ) -> Result<Allocation, DeviceError> {
        let mut books = self.books();
        let handle = books.next_handle();
        match self.place(&mut books, req, handle) {
            Ok(block) => Ok(books.enter(req, block)),
            Err(e) => {
                if self.shows_refusal(&e) {
                    *at_refusal = Some(books.ledger.clone());
                }
                Err(e)
            }
        }
    }

    /// Places `req` for the allocation `handle` will be, under the books'
    /// lock: the fault plan, the request's checks, the backend. Nothing is
    /// entered or charged.
    fn place(
        &self,
        books: &mut Bookkeeping,
        req: &AllocReq<'_>,
        handle: MemHandle,
    ) -> Result<alloc::Block, DeviceError> {
        books.faults.on_alloc(req.core)?;
        let channel = self.geometry.hbm_of(req.core)?;
        if req.usage.category(MemLocation::Device).is_none() {
            return Err(DeviceError::Invalid {
                reason: format!("Invalid mem_usage_type {} for device", req.usage.index()),
            });
        }
        self.storage
            .allocate(handle, channel, req.size, req.align, req.place)
            .map_err(|failure| match failure {
                AllocFailure::Invalid(reason) => DeviceError::Invalid { reason },
                AllocFailure::NoMem => DeviceError::NoMem {
                    size: req.size,
                    align: req.align,
                    core: req.core,
                    channel,
                    usage: req.usage,
                    free: self.storage.free_bytes(channel),
                },
            })
    }

    /// Whether refusal `e` is shown to observers, and so needs the ledger
    /// as it found it: a want of room, outside a replay, that an observer
    /// asks for.
    fn shows_refusal(&self, e: &DeviceError) -> bool {
        matches!(e, DeviceError::NoMem { .. }) && !tape::quiet() && self.wanted_refusals()
    }

    /// Marks the device as being discarded with everything on it: from
    /// now on a free releases nothing (the books and the allocator go with
    /// the device), so tearing down what a plan loaded costs no allocator
    /// work. Allocations still succeed or fail as before; only use it on a
    /// device nothing will read again.
    pub fn retire(&self) {
        self.retired
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Frees a live allocation (and whatever bytes it stored).
    pub fn free(&self, handle: MemHandle) -> Result<(), DeviceError> {
        if self.retired.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(());
        }
        self.each_observer(|o| o.freeing(handle));
        let mut books = self.books();
        let live = books.remove(handle)?;
        self.storage
            .release(handle, &live.block)
            .map_err(|reason| DeviceError::Invalid { reason })
    }

    /// Frees a batch's row ([`Batch::Row`]) and its blocks.
    pub fn free_batch(&self, first: MemHandle) -> Result<(), DeviceError> {
        if self.retired.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(());
        }
        let mut books = self.books();
        let batch = books.remove_batch(first)?;
        for (i, b) in batch.blocks.iter().enumerate().rev() {
            self.storage
                .release(MemHandle(first.0 + i as u64), b)
                .map_err(|reason| DeviceError::Invalid { reason })?;
        }
        Ok(())
    }

    /// Copies `data` into an allocation at `offset`.
    pub fn write(&self, handle: MemHandle, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        self.write_all(&[Write {
            handle,
            offset,
            data,
            shared: None,
        }])
        .map_err(|(_, e)| e)
    }

    /// Performs `writes` in order, as one [`Device::write`] each would, and
    /// stops at the first that fails, returning its index: the writes
    /// before it happen. A core's build hands over all its copies at once,
    /// checked under one lock, as a driver would queue one DMA submission.
    pub fn write_all(&self, writes: &[Write<'_>]) -> Result<(), (usize, DeviceError)> {
        let timer = self.observed().then(Instant::now);
        for w in writes {
            self.each_observer(|o| o.writing(w));
        }
        let mut copies = Vec::with_capacity(writes.len());
        let failed = {
            let mut books = self.books();
            writes.iter().enumerate().find_map(|(i, w)| {
                let checked = books
                    .faults
                    .on_write()
                    .and_then(|()| books.check(CopyOp::Write, w.handle, w.offset, w.data.len()));
                match checked {
                    Ok(base) => {
                        copies.push(CopyIn {
                            handle: w.handle,
                            base,
                            offset: w.offset,
                            data: w.data,
                            shared: w.shared,
                        });
                        None
                    }
                    Err(e) => Some((i, e)),
                }
            })
        };
        // The storage may fail a copy (host memory), before any the books
        // refused: the copies before it happen either way.
        let stored = self.storage.write(&copies);
        let done = stored.as_ref().err().map_or(copies.len(), |(i, _)| *i);
        if let Some(t) = timer {
            let elapsed = t.elapsed();
            self.each_observer(|o| o.written(&writes[..done], elapsed));
        }
        stored.and(failed.map_or(Ok(()), Err))
    }

    /// Copies bytes out of an allocation; never-written bytes read as 0.
    pub fn read(&self, handle: MemHandle, offset: u64, out: &mut [u8]) -> Result<(), DeviceError> {
        self.books()
            .check(CopyOp::Read, handle, offset, out.len())?;
        self.storage.read(handle, offset, out)
    }

    /// Reads `out.len()` bytes at device address `pa`; the range must lie in
    /// one live allocation. This is how tests check what a relocated
    /// instruction or descriptor points at.
    #[cfg(any(test, feature = "testkit"))]
    pub fn read_pa(&self, pa: Pa, out: &mut [u8]) -> Result<(), DeviceError> {
        let (handle, offset) = self.books().resolve(pa, out.len())?;
        self.storage.read(handle, offset, out)
    }

    /// A copy of the usage ledger.
    #[cfg(any(test, feature = "testkit"))]
    pub fn ledger(&self) -> Ledger {
        self.books().ledger.clone()
    }

    /// Runs `f` on the usage ledger as it stands, without copying it (a
    /// ledger of ten thousand loads is not small); the device is locked
    /// meanwhile, so `f` must not call back into it.
    pub fn with_ledger<R>(&self, f: impl FnOnce(&Ledger) -> R) -> R {
        f(&self.books().ledger)
    }

    /// Bytes the allocator holds on every channel (4 KiB granules): what
    /// the ledger's channels count, without copying it.
    pub fn held(&self) -> u64 {
        self.books().ledger.total()
    }

    /// Bytes the allocator holds on one HBM channel.
    pub fn channel_held(&self, channel: u32) -> u64 {
        self.books().ledger.channel_used(channel)
    }

    /// Number of live allocations (what a plan's own work is counted in).
    pub fn live_count(&self) -> usize {
        self.books().live_count()
    }

    /// Each live allocation of HBM `channel`, in handle order: its first
    /// address, the bytes charged and its core (what the allocator's
    /// layout is, without copying every allocation's name).
    pub fn channel_blocks(&self, channel: u32) -> Vec<(Pa, u64, PCore)> {
        self.books()
            .channel_blocks(channel)
            .into_iter()
            .map(|(pa, charged, core)| (Pa(pa), charged, core))
            .collect()
    }

    /// Every live allocation, in handle (allocation) order.
    pub fn live_allocations(&self) -> Vec<LiveAlloc> {
        self.books().live_allocations()
    }

    /// Each pool of a channel: free bytes and the longest free range.
    pub fn pools(&self, channel: u32) -> Vec<PoolFree> {
        self.storage.pools(channel)
    }

    /// Free bytes left on an HBM channel.
    pub fn free_bytes(&self, channel: u32) -> u64 {
        self.storage.free_bytes(channel)
    }

    /// Whether what is written to the device can be told afterwards
    /// ([`Storage::keeps_writes`]).
    pub fn keeps_writes(&self) -> bool {
        self.storage.keeps_writes()
    }

    /// Bytes an HBM channel can hand out in all: its size less the firmware
    /// carve-out and what the runtime holds back.
    pub fn capacity(&self, channel: u32) -> u64 {
        self.storage.capacity(channel)
    }

    /// Arms a fault plan; counting restarts now. `FaultPlan::default()`
    /// disarms.
    #[cfg(any(test, feature = "testkit"))]
    pub fn set_fault_plan(&self, plan: FaultPlan) {
        self.books().faults.arm(plan);
    }

    /// The plan currently armed.
    #[cfg(any(test, feature = "testkit"))]
    pub fn fault_plan(&self) -> FaultPlan {
        self.books().faults.plan()
    }

    /// The state-buffer AXI base of a core (where `SB` variables point).
    pub fn sb_base(&self, core: PCore) -> Result<Pa, DeviceError> {
        self.geometry.sb_base(core)
    }

    /// The address of a core's event register `id`.
    #[cfg(any(test, feature = "testkit"))]
    pub fn event_addr(&self, core: PCore, id: u32) -> Result<Pa, DeviceError> {
        self.geometry.event_addr(core, id)
    }

    /// What `nrt_get_vnc_memory_stats` reports for a logical core.
    pub fn vnc_memory_stats(&self, lcore: LCore, lnc: u32) -> Result<VncMemoryStats, DeviceError> {
        self.books()
            .ledger
            .vnc_memory_stats(&self.geometry, lcore, lnc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_oom_message() {
        let e = DeviceError::NoMem {
            size: 4096,
            align: 32768,
            core: PCore(3),
            channel: 1,
            usage: MemUsage::Weight,
            free: 0,
        };
        assert_eq!(e.status(), NrtStatus::Resource);
        assert_eq!(e.status().code(), 4);
        let msg = e.to_string();
        assert!(
            msg.starts_with(
                "Failed to allocate 4096 bytes (alignment: 32768, usage: WEIGHT) on NC 3: \
                 out of device memory"
            ),
            "{msg}"
        );
        assert!(msg.contains("aligned allocations may fail"), "{msg}");
        let invalid = DeviceError::Invalid { reason: "x".into() };
        assert_eq!(invalid.status(), NrtStatus::Invalid);
        let unknown = DeviceError::UnknownHandle {
            handle: MemHandle(7),
        };
        assert_eq!(unknown.status(), NrtStatus::Failure);
        let alloc_fault = DeviceError::InjectedFault {
            op: FaultOp::Alloc,
            nth: 1,
        };
        assert_eq!(alloc_fault.status(), NrtStatus::Resource);
        let write_fault = DeviceError::InjectedFault {
            op: FaultOp::Write,
            nth: 1,
        };
        assert_eq!(write_fault.status(), NrtStatus::Failure);
        let oob = DeviceError::OutOfBounds {
            op: CopyOp::Write,
            handle: MemHandle(1),
            offset: 10,
            len: 4096,
            size: 4096,
        };
        assert_eq!(oob.status(), NrtStatus::Failure);
        assert!(oob
            .to_string()
            .contains("Copy from buffer to memory failed"));
    }

    fn batch_of(sizes: &[(u64, u64, MemUsage)]) -> Arc<[BatchReq]> {
        sizes
            .iter()
            .enumerate()
            .map(|(i, &(size, align, usage))| BatchReq {
                size,
                align,
                core: PCore(i as u32 % 2),
                usage,
                place: Place::Kernel,
                hint: format!("v{i}").into(),
            })
            .collect()
    }

    /// A mix that leaves aligned gaps behind, so later requests land in
    /// the gaps of earlier ones.
    fn mix() -> Arc<[BatchReq]> {
        batch_of(&[
            (4096, 32768, MemUsage::Weight),
            (8192, 0, MemUsage::InstrPe),
            (100, 32768, MemUsage::DmaRing),
            (65536, 4096, MemUsage::Weight),
            (3 << 30, 0, MemUsage::Weight),
            (4096, 0, MemUsage::Io),
        ])
    }

    fn view(dev: &NullDevice) -> (Vec<LiveAlloc>, Ledger, Vec<PoolFree>) {
        (dev.live_allocations(), dev.ledger(), dev.pools(0))
    }

    #[test]
    fn a_batch_lands_and_is_charged_as_its_requests_one_by_one() {
        let geometry = Geometry::for_arch(crate::Arch::Cayman);
        let (one, batched) = (NullDevice::new(geometry.clone()), NullDevice::new(geometry));
        let reqs = mix();
        let owner = Owner::Model(crate::ids::HModel(3));
        let mut sets = Vec::new();
        for _ in 0..5 {
            for r in reqs.iter() {
                one.alloc(r.request(owner)).unwrap();
            }
            sets.push(batched.alloc_batch(owner, &reqs).unwrap());
        }
        assert!(sets.iter().all(|b| matches!(b, Batch::Row(_))));
        assert_eq!(view(&one), view(&batched));
        // The driver's counters see a batch's allocations one by one: the
        // same last change and peak as allocations made alone.
        let counters = |d: &NullDevice| -> Vec<CoreCounters> {
            let l = d.ledger();
            (0..2).map(|c| l.counters(PCore(c))).collect()
        };
        assert_eq!(counters(&one), counters(&batched));
        assert_eq!(batched.live_count(), 5 * reqs.len());
        // A member is read and written as any allocation; it is freed only
        // with its batch.
        let Batch::Row(first) = sets[1] else { unreachable!() };
        let member = MemHandle(first.0 + 3);
        batched.write(member, 65536 - 4, &[1, 2, 3, 4]).unwrap();
        assert!(matches!(
            batched.write(member, 65536 - 3, &[1, 2, 3, 4]),
            Err(DeviceError::OutOfBounds { .. })
        ));
        assert!(matches!(batched.free(member), Err(DeviceError::Invalid { .. })));
        assert!(matches!(batched.free_batch(member), Err(DeviceError::UnknownHandle { .. })));
        batched.free_batch(first).unwrap();
        for r in (0..reqs.len()).rev() {
            one.free(MemHandle(first.0 + r as u64)).unwrap();
        }
        assert_eq!(view(&one), view(&batched));
        assert_eq!(counters(&one), counters(&batched), "given back alike");
        assert!(matches!(batched.free_batch(first), Err(DeviceError::UnknownHandle { .. })));
        let next = batched.books().next_handle();
        let empty = batched.alloc_batch(owner, &batch_of(&[])).unwrap();
        assert!(matches!(empty, Batch::Each(made) if made.is_empty()));
        assert_eq!(batched.books().next_handle(), next, "no handle taken");
    }

    #[derive(Default)]
    struct Seen {
        each: bool,
        refused: Mutex<Vec<(String, u64)>>,
        allocated: Mutex<usize>,
    }

    impl Observer for Seen {
        fn wants_allocations(&self) -> bool {
            self.each
        }
        fn refused(&self, req: &AllocReq<'_>, _e: &DeviceError, ledger: &Ledger) {
            self.refused.lock().unwrap().push((req.hint.to_string(), ledger.total()));
        }
        fn allocated(&self, _req: &AllocReq<'_>, result: Result<&Allocation, &DeviceError>) {
            *self.allocated.lock().unwrap() += usize::from(result.is_ok());
        }
    }

    #[test]
    fn a_refused_batch_leaves_nothing_and_shows_the_refusal_as_one_by_one() {
        for each in [false, true] {
            let dev = NullDevice::new(Geometry::for_arch(crate::Arch::Cayman));
            let seen = Arc::new(Seen {
                each,
                ..Seen::default()
            });
            dev.observe(seen.clone());
            let big = dev.capacity(0);
            let reqs = batch_of(&[
                (4096, 0, MemUsage::Weight),
                (8192, 0, MemUsage::Io),
                (big, 0, MemUsage::Weight),
            ]);
            let before = view(&dev);
            let e = dev.alloc_batch(Owner::Client, &reqs).unwrap_err();
            assert!(matches!(e, DeviceError::NoMem { .. }), "{e}");
            assert_eq!(view(&dev), before, "each={each}");
            // The ledger the refusal shows holds the two made before it.
            assert_eq!(*seen.refused.lock().unwrap(), [("v2".to_string(), 12288)]);
            assert_eq!(*seen.allocated.lock().unwrap(), if each { 2 } else { 0 });
            // The driver saw the two come and go: its counters hold them
            // in their peaks, whichever way the batch was made.
            let ledger = dev.ledger();
            let (c0, c1) = (ledger.counters(PCore(0)), ledger.counters(PCore(1)));
            let constants = c0.get(DeviceMem::Constants);
            assert_eq!((constants.total, constants.peak), (0, 4096), "each={each}");
            let code = c1.get(DeviceMem::ModelCode);
            assert_eq!((code.total, code.peak, code.present), (0, 8192, 8192));
            assert_eq!((c0.device_mem.peak, c1.device_mem.peak), (4096, 8192));
            let fits = batch_of(&[(4096, 0, MemUsage::Weight)]);
            let made = dev.alloc_batch(Owner::Client, &fits).unwrap();
            assert_eq!(matches!(made, Batch::Each(_)), each);
        }
    }

    #[test]
    fn a_batch_on_a_device_that_keeps_bytes_keeps_each_members_bytes() {
        let dev = SimDevice::new(Geometry::for_arch(crate::Arch::Cayman));
        let reqs = mix();
        let Batch::Row(first) = dev.alloc_batch(Owner::Client, &reqs).unwrap() else {
            panic!("no observer wants each allocation");
        };
        for i in 0..reqs.len() as u64 {
            dev.write(MemHandle(first.0 + i), 0, &[i as u8 + 1; 8]).unwrap();
        }
        for i in 0..reqs.len() as u64 {
            let mut back = [0u8; 8];
            dev.read(MemHandle(first.0 + i), 0, &mut back).unwrap();
            assert_eq!(back, [i as u8 + 1; 8]);
        }
        dev.free_batch(first).unwrap();
        assert_eq!(dev.live_count(), 0);
        assert!(matches!(
            dev.read(first, 0, &mut [0u8; 1]),
            Err(DeviceError::UnknownHandle { .. })
        ));
    }
}
