//! Bookkeeping shared by every backend: the allocator, the ledger, the fault
//! plan and the table of live allocations. Backends add only what they do
//! with the bytes, so accounting cannot drift between them; what a backend
//! keeps per allocation (`T`) lives in the same table, so a copy costs one
//! lookup.

use std::collections::BTreeMap;

use super::alloc::{AllocFailure, Block, HbmAllocator, StartTaken};
use super::fault::{FaultPlan, FaultState};
use super::geometry::Geometry;
use super::ledger::{Ledger, MemLocation, MemUsage};
use super::{AllocReq, Allocation, CopyOp, DeviceError, LiveAlloc, MemHandle};
use crate::ids::{PCore, Pa};

/// One live allocation.
#[derive(Clone, Debug)]
struct Live<T> {
    core: PCore,
    usage: MemUsage,
    block: Block,
    size: u64,
    hint: String,
    data: T,
}

/// Where a checked copy lands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span<'a, T> {
    /// Device address of the first byte of the allocation.
    pub alloc_pa: u64,
    /// What the backend keeps for the allocation.
    pub data: &'a T,
}

#[derive(Debug)]
pub(crate) struct Books<T = ()> {
    geometry: Geometry,
    heap: HbmAllocator,
    ledger: Ledger,
    faults: FaultState,
    live: BTreeMap<MemHandle, Live<T>>,
    /// Live allocations by first address, to resolve a PA to its allocation.
    by_pa: BTreeMap<u64, MemHandle>,
    next_handle: u64,
}

impl<T> Books<T> {
    /// Books of a device as a started runtime leaves it
    /// ([`HbmAllocator::started`]).
    pub(crate) fn new(geometry: &Geometry, start: StartTaken) -> Books<T> {
        Books {
            geometry: geometry.clone(),
            heap: HbmAllocator::started(geometry, start),
            ledger: Ledger::new(geometry),
            faults: FaultState::default(),
            live: BTreeMap::new(),
            by_pa: BTreeMap::new(),
            next_handle: 1,
        }
    }

    /// Allocates, and keeps `make()` with the allocation (called only on success).
    pub(crate) fn alloc(
        &mut self,
        req: &AllocReq<'_>,
        make: impl FnOnce() -> T,
    ) -> Result<Allocation, DeviceError> {
        self.faults.on_alloc(req.core)?;
        let channel = self.geometry.hbm_of(req.core)?;
        if req.usage.category(MemLocation::Device).is_none() {
            return Err(DeviceError::Invalid {
                reason: format!("Invalid mem_usage_type {} for device", req.usage.index()),
            });
        }
        let block = match self.heap.alloc(channel, req.size, req.align) {
            Ok(block) => block,
            Err(AllocFailure::Invalid(reason)) => return Err(DeviceError::Invalid { reason }),
            Err(AllocFailure::NoMem) => {
                return Err(DeviceError::NoMem {
                    size: req.size,
                    align: req.align,
                    core: req.core,
                    channel,
                    usage: req.usage,
                    free: self.heap.free_bytes(channel),
                })
            }
        };
        let handle = MemHandle(self.next_handle);
        self.next_handle += 1;
        self.ledger
            .charge(req.core, channel, req.usage, block.charged, req.size);
        self.by_pa.insert(block.pa, handle);
        self.live.insert(
            handle,
            Live {
                core: req.core,
                usage: req.usage,
                block,
                size: req.size,
                hint: req.hint.to_owned(),
                data: make(),
            },
        );
        tracing::trace!(
            "MEM_USAGE: {} bytes, channel: {}, total usage: ({}/{}), hint:{}",
            block.charged,
            channel,
            self.ledger.channel_used(channel),
            self.ledger.channel_limit(channel),
            req.hint
        );
        Ok(Allocation {
            handle,
            pa: Pa(block.pa),
            size: req.size,
            charged: block.charged,
        })
    }

    /// Frees, and hands back what the backend kept.
    pub(crate) fn free(&mut self, handle: MemHandle) -> Result<T, DeviceError> {
        let live = self
            .live
            .remove(&handle)
            .ok_or(DeviceError::UnknownHandle { handle })?;
        self.by_pa.remove(&live.block.pa);
        self.ledger.discharge(
            live.core,
            live.block.channel,
            live.usage,
            live.block.charged,
            live.size,
        );
        self.heap
            .free(&live.block)
            .map_err(|reason| DeviceError::Invalid { reason })?;
        Ok(live.data)
    }

    /// Counts a write against the fault plan, then bounds-checks it.
    pub(crate) fn check_write(
        &mut self,
        handle: MemHandle,
        offset: u64,
        len: usize,
    ) -> Result<Span<'_, T>, DeviceError> {
        self.faults.on_write()?;
        self.check(CopyOp::Write, handle, offset, len)
    }

    pub(crate) fn check_read(
        &self,
        handle: MemHandle,
        offset: u64,
        len: usize,
    ) -> Result<Span<'_, T>, DeviceError> {
        self.check(CopyOp::Read, handle, offset, len)
    }

    fn check(
        &self,
        op: CopyOp,
        handle: MemHandle,
        offset: u64,
        len: usize,
    ) -> Result<Span<'_, T>, DeviceError> {
        let live = self
            .live
            .get(&handle)
            .ok_or(DeviceError::UnknownHandle { handle })?;
        let len = len as u64;
        match offset.checked_add(len) {
            Some(end) if end <= live.size => Ok(Span {
                alloc_pa: live.block.pa,
                data: &live.data,
            }),
            _ => Err(DeviceError::OutOfBounds {
                op,
                handle,
                offset,
                len,
                size: live.size,
            }),
        }
    }

    /// The allocation holding `[pa, pa + len)` (what the backend keeps for
    /// it) and the offset of `pa` in it.
    pub(crate) fn resolve(&self, pa: Pa, len: usize) -> Result<(&T, u64), DeviceError> {
        let not_mapped = || DeviceError::Invalid {
            reason: format!("{len} bytes at {pa} are not inside one live allocation"),
        };
        let (&start, &handle) = self
            .by_pa
            .range(..=pa.0)
            .next_back()
            .ok_or_else(not_mapped)?;
        let live = self.live.get(&handle).ok_or_else(not_mapped)?;
        let offset = pa.0 - start;
        match offset.checked_add(len as u64) {
            Some(end) if end <= live.size => Ok((&live.data, offset)),
            _ => Err(not_mapped()),
        }
    }

    pub(crate) fn ledger(&self) -> Ledger {
        self.ledger.clone()
    }

    /// What the backend keeps, for every live allocation.
    pub(crate) fn data(&self) -> impl Iterator<Item = &T> {
        self.live.values().map(|l| &l.data)
    }

    pub(crate) fn live_count(&self) -> usize {
        self.live.len()
    }

    pub(crate) fn live_allocations(&self) -> Vec<LiveAlloc> {
        self.live
            .iter()
            .map(|(&handle, l)| LiveAlloc {
                handle,
                core: l.core,
                channel: l.block.channel,
                usage: l.usage,
                pa: Pa(l.block.pa),
                size: l.size,
                charged: l.block.charged,
                hint: l.hint.clone(),
            })
            .collect()
    }

    pub(crate) fn set_fault_plan(&mut self, plan: FaultPlan) {
        self.faults.arm(plan);
    }

    pub(crate) fn fault_plan(&self) -> FaultPlan {
        self.faults.plan()
    }

    /// Free bytes of a channel (both pools).
    pub(crate) fn free_bytes(&self, channel: u32) -> u64 {
        self.heap.free_bytes(channel)
    }
}
