//! The device the loader stages onto (spec/stage.md §3.3, §6.1, §13).
//!
//! No Trainium host is reachable, so the loader talks to a [`Device`] trait:
//! allocate HBM for a core, copy bytes in (and out, for tests), free, and
//! answer where the state buffer and event registers are. Two backends share
//! one allocator and ledger (the private `books` module):
//!
//! - [`SimDevice`] keeps what is written, sparsely, so tests can read back
//!   weights, instruction images and rings at the addresses the loader chose;
//! - [`NullDevice`] keeps no bytes, for NEFFs too large to mirror.
//!
//! Both can be told to fail the k-th allocation or write ([`FaultPlan`]), so
//! every rollback path is testable. A driver backend (the kernel allocation
//! ioctl of §13.2) would implement the same trait.

pub mod address;
pub mod alloc;
mod books;
pub mod fault;
pub mod geometry;
pub mod ledger;
pub mod null;
pub mod sim;

use std::fmt;

use crate::ids::{LCore, PCore, Pa};
use crate::shared::SharedBytes;
use crate::status::NrtStatus;

pub use alloc::{Pool, StartTaken, SMALL_POOL_BYTES, SMALL_REQUEST_MAX};
pub use fault::{FaultOp, FaultPlan};
pub use geometry::{Geometry, CARVEOUT, GRANULE};
pub use ledger::{Ledger, MemCategory, MemLocation, MemUsage, VncMemoryStats};
pub use null::NullDevice;
pub use sim::SimDevice;

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
    /// What the memory is for (a variable name, "scratchpad", ...), kept for
    /// leak reports and OOM messages.
    pub hint: &'a str,
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
    pub owner: Option<&'a SharedBytes>,
}

/// A device the loader can stage onto. Object-safe and shareable: methods take
/// `&self` and implementations lock internally, so per-core builds may run on
/// several threads against one device.
pub trait Device: Send + Sync {
    fn geometry(&self) -> &Geometry;

    /// Allocates HBM on the channel of `req.core` and charges the ledger.
    fn alloc(&self, req: AllocReq<'_>) -> Result<Allocation, DeviceError>;

    /// Frees a live allocation (and whatever bytes it stored).
    fn free(&self, handle: MemHandle) -> Result<(), DeviceError>;

    /// Copies `data` into an allocation at `offset`.
    fn write(&self, handle: MemHandle, offset: u64, data: &[u8]) -> Result<(), DeviceError>;

    /// Performs `writes` in order, as one [`Device::write`] each would, and
    /// stops at the first that fails, returning its index. A core's build
    /// hands over all its copies at once, so a backend can check the whole
    /// batch under one lock, as a driver would queue one DMA submission.
    fn write_all(&self, writes: &[Write<'_>]) -> Result<(), (usize, DeviceError)> {
        for (i, w) in writes.iter().enumerate() {
            self.write(w.handle, w.offset, w.data).map_err(|e| (i, e))?;
        }
        Ok(())
    }

    /// Copies bytes out of an allocation; never-written bytes read as 0.
    fn read(&self, handle: MemHandle, offset: u64, out: &mut [u8]) -> Result<(), DeviceError>;

    /// A copy of the usage ledger.
    fn ledger(&self) -> Ledger;

    /// Number of live allocations.
    fn live_count(&self) -> usize;

    /// Every live allocation, in handle (allocation) order.
    fn live_allocations(&self) -> Vec<LiveAlloc>;

    /// Arms a fault plan; counting restarts now. `FaultPlan::default()`
    /// disarms.
    fn set_fault_plan(&self, plan: FaultPlan);

    /// The plan currently armed.
    fn fault_plan(&self) -> FaultPlan;

    /// The state-buffer AXI base of a core (where `SB` variables point).
    fn sb_base(&self, core: PCore) -> Result<Pa, DeviceError> {
        self.geometry().sb_base(core)
    }

    /// The address of a core's event register `id`.
    fn event_addr(&self, core: PCore, id: u32) -> Result<Pa, DeviceError> {
        self.geometry().event_addr(core, id)
    }

    /// Whether `align` is honoured by the allocator itself. When false the
    /// loader must over-allocate and offset (§6.8). Both backends here align.
    fn supports_aligned_alloc(&self) -> bool {
        true
    }

    /// What `nrt_get_vnc_memory_stats` reports for a logical core.
    fn vnc_memory_stats(&self, lcore: LCore, lnc: u32) -> Result<VncMemoryStats, DeviceError> {
        self.ledger().vnc_memory_stats(self.geometry(), lcore, lnc)
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
}
