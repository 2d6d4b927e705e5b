//! The bookkeeping every backend shares: the table of live allocations
//! (who owns each, for which core and usage, where), the usage ledger and
//! the fault plan. The backend only places and stores; these books decide
//! what is charged and to whom, so accounting cannot drift between
//! backends.

#[cfg(any(test, feature = "testkit"))]
use std::collections::BTreeMap;
use std::sync::Arc;

use super::fault::FaultState;
use super::ledger::{Ledger, MemUsage, Owner};
use super::live_table::LiveTable;
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
    pub hint: Arc<str>,
}

/// Hints seen lately, shared: a load names the variables the load before
/// it named, so a planner's ten thousand loads keep each name once instead
/// of once per allocation (a copy per allocation was a fifth of a planned
/// load's time, with its frees). Direct-mapped on the text: a slot holds
/// the last hint that hashed to it, and only equal text is shared.
#[derive(Debug)]
struct Hints {
    slots: Box<[Option<Arc<str>>; HINT_SLOTS]>,
}

const HINT_SLOTS: usize = 256;

impl Default for Hints {
    fn default() -> Self {
        Hints {
            slots: Box::new(std::array::from_fn(|_| None)),
        }
    }
}

impl Hints {
    fn share(&mut self, text: &str) -> Arc<str> {
        // FNV-1a: hints are short, and only the slot depends on it.
        let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        let slot = &mut self.slots[(hash as usize) % HINT_SLOTS];
        match slot {
            Some(kept) if **kept == *text => Arc::clone(kept),
            _ => Arc::clone(slot.insert(Arc::from(text))),
        }
    }
}

#[derive(Debug)]
pub(super) struct Bookkeeping {
    pub ledger: Ledger,
    pub faults: FaultState,
    live: LiveTable<Live>,
    hints: Hints,
    /// Live allocations by first address, to resolve a PA to its allocation.
    #[cfg(any(test, feature = "testkit"))]
    by_pa: BTreeMap<u64, MemHandle>,
}

impl Bookkeeping {
    /// Bookkeeping whose channels can hold `limits` bytes each.
    pub fn new(limits: Vec<u64>) -> Bookkeeping {
        Bookkeeping {
            ledger: Ledger::with_limits(limits),
            faults: FaultState::default(),
            live: LiveTable::default(),
            hints: Hints::default(),
            #[cfg(any(test, feature = "testkit"))]
            by_pa: BTreeMap::new(),
        }
    }

    /// The handle the next allocation will get (handles are never reused).
    pub fn next_handle(&self) -> MemHandle {
        self.live.next_handle()
    }

    /// Enters a block the backend placed for `req` under
    /// [`Bookkeeping::next_handle`], and charges it.
    pub fn enter(&mut self, req: &AllocReq<'_>, block: Block) -> Allocation {
        self.ledger.charge(
            req.core,
            req.owner,
            block.channel,
            req.usage,
            block.charged,
            req.size,
        );
        let handle = self.live.push(Live {
            owner: req.owner,
            core: req.core,
            usage: req.usage,
            block,
            size: req.size,
            hint: self.hints.share(req.hint),
        });
        #[cfg(any(test, feature = "testkit"))]
        self.by_pa.insert(block.pa, handle);
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
            .remove(handle)
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
            .get(handle)
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
        let live = self.live.get(handle).ok_or_else(not_mapped)?;
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
            .iter()
            .map(|(_, l)| l)
            .filter(|l| l.block.channel == channel)
            .map(|l| (l.block.pa, l.block.charged, l.core))
            .collect()
    }

    /// In handle (allocation) order.
    pub fn live_allocations(&self) -> Vec<LiveAlloc> {
        self.live
            .iter()
            .map(|(handle, l)| LiveAlloc {
                handle,
                owner: l.owner,
                core: l.core,
                channel: l.block.channel,
                usage: l.usage,
                pa: Pa(l.block.pa),
                size: l.size,
                charged: l.block.charged,
                hint: l.hint.to_string(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hint_is_shared_only_with_equal_text() {
        let mut hints = Hints::default();
        let a = hints.share("weights");
        assert!(Arc::ptr_eq(&a, &hints.share("weights")));
        // More names than slots: every one still reads back as given.
        let names: Vec<String> = (0..4 * HINT_SLOTS).map(|i| format!("var{i}")).collect();
        for n in &names {
            assert_eq!(&*hints.share(n), n.as_str());
        }
        assert_eq!(&*hints.share("weights"), "weights");
    }
}
