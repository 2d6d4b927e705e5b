//! The bookkeeping every backend shares: the table of live allocations
//! (who owns each, for which core and usage, where), the usage ledger and
//! the fault plan. The backend only places and stores; these books decide
//! what is charged and to whom, so accounting cannot drift between
//! backends.

use std::collections::BTreeMap;

use super::fault::FaultState;
use super::ledger::{Ledger, MemUsage, Owner};
use super::{AllocReq, Allocation, CopyOp, DeviceError, LiveAlloc, MemHandle};
use crate::device::alloc::Block;
use crate::ids::{PCore, Pa};

/// One live allocation.
#[derive(Clone, Debug)]
pub(super) struct Live {
    pub owner: Owner,
    pub core: PCore,
    pub usage: MemUsage,
    pub block: Block,
    pub size: u64,
    pub hint: String,
}

#[derive(Debug)]
pub(super) struct Bookkeeping {
    pub ledger: Ledger,
    pub faults: FaultState,
    live: BTreeMap<MemHandle, Live>,
    /// Live allocations by first address, to resolve a PA to its allocation.
    #[cfg(any(test, feature = "testkit"))]
    by_pa: BTreeMap<u64, MemHandle>,
    next_handle: u64,
}

impl Bookkeeping {
    /// Bookkeeping whose channels can hold `limits` bytes each.
    pub fn new(limits: Vec<u64>) -> Bookkeeping {
        Bookkeeping {
            ledger: Ledger::with_limits(limits),
            faults: FaultState::default(),
            live: BTreeMap::new(),
            #[cfg(any(test, feature = "testkit"))]
            by_pa: BTreeMap::new(),
            next_handle: 1,
        }
    }

    /// The handle the next allocation will get (handles are never reused).
    pub fn next_handle(&self) -> MemHandle {
        MemHandle(self.next_handle)
    }

    /// Enters a block the backend placed for `req` under
    /// [`Bookkeeping::next_handle`], and charges it.
    pub fn enter(&mut self, req: &AllocReq<'_>, block: Block) -> Allocation {
        let handle = self.next_handle();
        self.next_handle += 1;
        self.ledger.charge(
            req.core,
            req.owner,
            block.channel,
            req.usage,
            block.charged,
            req.size,
        );
        #[cfg(any(test, feature = "testkit"))]
        self.by_pa.insert(block.pa, handle);
        self.live.insert(
            handle,
            Live {
                owner: req.owner,
                core: req.core,
                usage: req.usage,
                block,
                size: req.size,
                hint: req.hint.to_owned(),
            },
        );
        tracing::trace!(
            "MEM_USAGE: {} bytes, channel: {}, total usage: ({}/{}), hint:{}",
            block.charged,
            block.channel,
            self.ledger.channel_used(block.channel),
            self.ledger.channel_limit(block.channel),
            req.hint
        );
        Allocation {
            handle,
            pa: Pa(block.pa),
            size: req.size,
            charged: block.charged,
        }
    }

    /// Takes an allocation out of the books and discharges it; the caller
    /// gives its block back to the backend.
    pub fn remove(&mut self, handle: MemHandle) -> Result<Live, DeviceError> {
        let live = self
            .live
            .remove(&handle)
            .ok_or(DeviceError::UnknownHandle { handle })?;
        #[cfg(any(test, feature = "testkit"))]
        self.by_pa.remove(&live.block.pa);
        self.ledger.discharge(
            live.core,
            live.owner,
            live.block.channel,
            live.usage,
            live.block.charged,
            live.size,
        );
        Ok(live)
    }

    /// Checks that `len` bytes at `offset` lie in a live allocation, and
    /// returns its first address.
    pub fn check(
        &self,
        op: CopyOp,
        handle: MemHandle,
        offset: u64,
        len: usize,
    ) -> Result<u64, DeviceError> {
        let live = self
            .live
            .get(&handle)
            .ok_or(DeviceError::UnknownHandle { handle })?;
        let len = len as u64;
        match offset.checked_add(len) {
            Some(end) if end <= live.size => Ok(live.block.pa),
            _ => Err(DeviceError::OutOfBounds {
                op,
                handle,
                offset,
                len,
                size: live.size,
            }),
        }
    }

    /// The allocation holding `[pa, pa + len)` and the offset of `pa` in it.
    #[cfg(any(test, feature = "testkit"))]
    pub fn resolve(&self, pa: Pa, len: usize) -> Result<(MemHandle, u64), DeviceError> {
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
            Some(end) if end <= live.size => Ok((handle, offset)),
            _ => Err(not_mapped()),
        }
    }

    #[cfg(any(test, feature = "testkit"))]
    pub fn live_count(&self) -> usize {
        self.live.len()
    }

    /// Each live allocation of HBM `channel`: first address, bytes
    /// charged, core.
    pub fn channel_blocks(&self, channel: u32) -> Vec<(u64, u64, PCore)> {
        self.live
            .values()
            .filter(|l| l.block.channel == channel)
            .map(|l| (l.block.pa, l.block.charged, l.core))
            .collect()
    }

    /// In handle (allocation) order.
    pub fn live_allocations(&self) -> Vec<LiveAlloc> {
        self.live
            .iter()
            .map(|(&handle, l)| LiveAlloc {
                handle,
                owner: l.owner,
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
}
