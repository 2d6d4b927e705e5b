//! The bookkeeping every backend shares: the table of live allocations
//! (who owns each, for which core and usage, where), the usage ledger and
//! the fault plan. The backend only places and stores; these books decide
//! what is charged and to whom, so accounting cannot drift between
//! backends.

#[cfg(any(test, feature = "testkit"))]
use std::collections::BTreeMap;
use std::sync::Arc;

use super::fault::FaultState;
use super::ledger::{Charge, ChargeRows, Ledger, MemUsage, Owner};
use super::live_table::LiveTable;
use super::{AllocReq, Allocation, BatchReq, CopyOp, DeviceError, LiveAlloc, MemHandle};
use crate::device::alloc::Block;
use crate::ids::{PCore, Pa};

/// One live allocation made alone.
#[derive(Clone, Debug)]
pub(super) struct Live {
    pub owner: Owner,
    pub core: PCore,
    pub usage: MemUsage,
    pub block: Block,
    pub size: u64,
    pub hint: Arc<str>,
}

/// Allocations made together ([`super::Device::alloc_batch`]): one owner,
/// consecutive handles, one row, freed together.
#[derive(Debug)]
pub(super) struct LiveBatch {
    pub owner: Owner,
    pub reqs: Arc<[BatchReq]>,
    /// One per request, in order.
    pub blocks: Box<[Block]>,
}

impl LiveBatch {
    /// Gives `charge` what the batch's requests hold on each of its cores
    /// (with the core's channel), by usage: one ledger entry per core
    /// instead of one per request. Cores in ascending order, each summed
    /// in a pass over the batch (a load spans one to a few cores), so
    /// nothing is allocated.
    /// Each allocation as the driver counts it: its core, usage and
    /// charged bytes, in the order made.
    fn allocations(&self) -> impl DoubleEndedIterator<Item = (PCore, MemUsage, u64)> + '_ {
        self.reqs
            .iter()
            .zip(&self.blocks)
            .map(|(r, b)| (r.core, r.usage, b.charged))
    }

    fn charges(&self, mut charge: impl FnMut(PCore, u32, &ChargeRows)) {
        let mut next = self.reqs.iter().map(|r| r.core).min();
        while let Some(core) = next.take() {
            let mut rows = [Charge::default(); MemUsage::COUNT];
            let mut channel = 0;
            for (r, b) in self.reqs.iter().zip(&self.blocks) {
                if r.core == core {
                    channel = b.channel;
                    let cell = &mut rows[r.usage.index()];
                    cell.charged += b.charged;
                    cell.requested += r.size;
                } else if r.core > core && next.is_none_or(|n| r.core < n) {
                    next = Some(r.core);
                }
            }
            charge(core, channel, &rows);
        }
    }
}

/// A row of the books.
#[derive(Debug)]
enum Row {
    One(Live),
    Batch(LiveBatch),
}

/// One allocation of a row, as every view of the books sees it.
struct Member<'a> {
    owner: Owner,
    core: PCore,
    usage: MemUsage,
    size: u64,
    block: Block,
    hint: &'a str,
}

impl Row {
    fn len(&self) -> usize {
        match self {
            Row::One(_) => 1,
            Row::Batch(b) => b.blocks.len(),
        }
    }

    /// Allocation `i` of the row (`i` below [`Row::len`]).
    fn member(&self, i: usize) -> Member<'_> {
        match self {
            Row::One(l) => Member {
                owner: l.owner,
                core: l.core,
                usage: l.usage,
                size: l.size,
                block: l.block,
                hint: &l.hint,
            },
            Row::Batch(b) => Member {
                owner: b.owner,
                core: b.reqs[i].core,
                usage: b.reqs[i].usage,
                size: b.reqs[i].size,
                block: b.blocks[i],
                hint: &b.reqs[i].hint,
            },
        }
    }

    /// Every allocation of the row with its handle, the row's first
    /// handle being `first`.
    fn members(&self, first: MemHandle) -> impl Iterator<Item = (MemHandle, Member<'_>)> {
        (0..self.len()).map(move |i| (MemHandle(first.0 + i as u64), self.member(i)))
    }
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
    live: LiveTable<Row>,
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
        let live = Live {
            owner: req.owner,
            core: req.core,
            usage: req.usage,
            block,
            size: req.size,
            hint: self.hints.share(req.hint),
        };
        let handle = self.live.push(Row::One(live), 1);
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

    /// Enters the blocks the backend placed for `reqs` (one each, in
    /// order) under as many new consecutive handles, as one row, and
    /// charges them; returns the first handle.
    pub fn enter_batch(
        &mut self,
        owner: Owner,
        reqs: &Arc<[BatchReq]>,
        blocks: Vec<Block>,
    ) -> MemHandle {
        let batch = LiveBatch {
            owner,
            reqs: Arc::clone(reqs),
            blocks: blocks.into_boxed_slice(),
        };
        batch.charges(|core, channel, rows| self.ledger.charge_rows(core, owner, channel, rows));
        for (core, usage, charged) in batch.allocations() {
            self.ledger.count(core, usage, charged, true);
        }
        let span = batch.blocks.len() as u32;
        #[cfg(any(test, feature = "testkit"))]
        let pas: Vec<u64> = batch.blocks.iter().map(|b| b.pa).collect();
        let first = self.live.push(Row::Batch(batch), span);
        #[cfg(any(test, feature = "testkit"))]
        for (i, pa) in pas.into_iter().enumerate() {
            self.by_pa.insert(pa, MemHandle(first.0 + i as u64));
        }
        first
    }

    /// Takes an allocation made alone out of the books and discharges it;
    /// the caller gives its block back to the backend.
    pub fn remove(&mut self, handle: MemHandle) -> Result<Live, DeviceError> {
        let Some(Row::One(live)) = self.live.take(handle, |r| matches!(r, Row::One(_))) else {
            return Err(match self.live.get(handle) {
                Some((first, Row::Batch(_))) => DeviceError::Invalid {
                    reason: format!(
                        "{handle} was allocated in the batch of {first} and is freed with it"
                    ),
                },
                _ => DeviceError::UnknownHandle { handle },
            });
        };
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

    /// Takes the batch whose first handle is `first` out of the books and
    /// discharges it; the caller gives its blocks back to the backend.
    pub fn remove_batch(&mut self, first: MemHandle) -> Result<LiveBatch, DeviceError> {
        let Some(Row::Batch(batch)) = self.live.take(first, |r| matches!(r, Row::Batch(_))) else {
            return Err(DeviceError::UnknownHandle { handle: first });
        };
        #[cfg(any(test, feature = "testkit"))]
        for b in batch.blocks.iter() {
            self.by_pa.remove(&b.pa);
        }
        batch.charges(|core, channel, rows| {
            self.ledger.discharge_rows(core, batch.owner, channel, rows)
        });
        // Given back last first, as an allocation set frees.
        for (core, usage, charged) in batch.allocations().rev() {
            self.ledger.count(core, usage, charged, false);
        }
        Ok(batch)
    }

    /// The live allocation `handle`.
    fn member(&self, handle: MemHandle) -> Option<Member<'_>> {
        let (first, row) = self.live.get(handle)?;
        let i = (handle.0 - first.0) as usize;
        (i < row.len()).then(|| row.member(i))
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
            .member(handle)
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
        let live = self.member(handle).ok_or_else(not_mapped)?;
        let offset = pa.0 - start;
        match offset.checked_add(len as u64) {
            Some(end) if end <= live.size => Ok((handle, offset)),
            _ => Err(not_mapped()),
        }
    }

    pub fn live_count(&self) -> usize {
        self.live.iter().map(|(_, row)| row.len()).sum()
    }

    /// Every live allocation with its handle, in handle order.
    fn members(&self) -> impl Iterator<Item = (MemHandle, Member<'_>)> {
        self.live.iter().flat_map(|(first, row)| row.members(first))
    }

    /// Each live allocation of HBM `channel`: first address, bytes
    /// charged, core.
    pub fn channel_blocks(&self, channel: u32) -> Vec<(u64, u64, PCore)> {
        self.members()
            .map(|(_, l)| l)
            .filter(|l| l.block.channel == channel)
            .map(|l| (l.block.pa, l.block.charged, l.core))
            .collect()
    }

    /// In handle (allocation) order.
    pub fn live_allocations(&self) -> Vec<LiveAlloc> {
        self.members()
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
