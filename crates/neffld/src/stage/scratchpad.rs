//! The per-core scratchpad (stage.md §6.5): one page table per physical
//! core, shared by every model on that core. Pages are allocated on demand
//! from the core's HBM, never move once a model references them, and are
//! reference-counted so the table shrinks (from the top) only when the last
//! model using a page unloads.

use std::sync::Arc;

use crate::device::{AllocReq, Device, MemUsage, Owned, Owner, Place};
use crate::ids::PCore;

use super::{Cores, StageError};

/// Most pages one core's table may hold.
pub const MAX_PAGES: u64 = 1024;
/// Alignment requested for every page.
pub const PAGE_ALIGN: u64 = 4 << 20;

/// A page of the table: the runtime's allocation (every model on the core
/// uses it) and how many loaded models reference it.
#[derive(Debug)]
struct Page {
    alloc: Owned,
    refs: u32,
}

/// One core's page table.
#[derive(Debug, Default)]
pub struct Scratchpad {
    pages: Vec<Page>,
}

impl Scratchpad {
    /// Pages in the table.
    pub fn len(&self) -> usize {
        self.pages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    /// References of page `i` (tests and diagnostics).
    pub fn refs(&self, i: usize) -> Option<u32> {
        self.pages.get(i).map(|p| p.refs)
    }

    /// Makes the first `ceil(bytes / page)` pages exist and references them
    /// once. Returns how many pages were referenced (to release later). On
    /// failure, or a panic, the pages allocated by this call are freed (they
    /// join the table only once all exist) and nothing is referenced. More
    /// than [`MAX_PAGES`] is refused before any is made; the caller, who
    /// knows whose need it is, says so.
    pub fn reserve(
        &mut self,
        dev: &Arc<Device>,
        core: PCore,
        page: u64,
        bytes: u64,
    ) -> Result<u32, ReserveError> {
        let need = bytes.div_ceil(page);
        if need > MAX_PAGES {
            return Err(ReserveError::Pages { requested: need });
        }
        let mut fresh = Vec::new();
        while ((self.pages.len() + fresh.len()) as u64) < need {
            let req = AllocReq {
                size: page,
                align: PAGE_ALIGN,
                core,
                usage: MemUsage::Scratchpad,
                owner: Owner::Runtime,
                place: Place::Kernel,
                hint: "scratchpad",
            };
            fresh.push(
                Owned::new(dev, req)
                    .map_err(|e| ReserveError::Device(StageError::Scratchpad(e)))?,
            );
        }
        self.pages
            .extend(fresh.into_iter().map(|alloc| Page { alloc, refs: 0 }));
        for p in &mut self.pages[..need as usize] {
            p.refs += 1;
        }
        Ok(need as u32)
    }

    /// Drops one reference from each of the first `pages` pages and frees
    /// unreferenced pages from the top of the table.
    pub fn release(&mut self, pages: u32) {
        for p in self.pages.iter_mut().take(pages as usize) {
            p.refs = p.refs.saturating_sub(1);
        }
        while self.pages.last().is_some_and(|p| p.refs == 0) {
            self.pages.pop();
        }
    }

    /// The device address of `size` bytes at arena `offset`, or `None` when
    /// they straddle a page (the variable then needs a private allocation).
    pub fn address(&self, page: u64, offset: u64, size: u64) -> Option<u64> {
        let within = offset % page;
        if within.checked_add(size)? > page {
            return None;
        }
        self.pages
            .get(usize::try_from(offset / page).ok()?)
            .map(|p| p.alloc.allocation().pa.0 + within)
    }
}

/// Why a [`Scratchpad::reserve`] failed.
#[derive(Debug)]
pub enum ReserveError {
    /// More than [`MAX_PAGES`] pages.
    Pages { requested: u64 },
    /// A page could not be allocated.
    Device(StageError),
}

/// A plan's references to the first pages of its core's table: released
/// when dropped (at unload, or when the load fails).
#[derive(Debug)]
pub struct ScratchClaim {
    cores: Arc<Cores>,
    core: PCore,
    pages: u32,
}

impl ScratchClaim {
    /// References (creating where needed) the pages that hold `bytes` of
    /// arena on `core`.
    pub fn take(
        cores: &Arc<Cores>,
        dev: &Arc<Device>,
        core: PCore,
        page: u64,
        bytes: u64,
    ) -> Result<ScratchClaim, ReserveError> {
        let pages = cores
            .lock(core)
            .scratchpad
            .reserve(dev, core, page, bytes)?;
        Ok(ScratchClaim {
            cores: Arc::clone(cores),
            core,
            pages,
        })
    }

    /// Pages referenced.
    pub fn pages(&self) -> u32 {
        self.pages
    }
}

impl Drop for ScratchClaim {
    fn drop(&mut self) {
        self.cores.lock(self.core).scratchpad.release(self.pages);
    }
}

/// Places an arena of `size` bytes after `cur` (the core's running total),
/// starting it on a fresh page when it would otherwise straddle one
/// (`update_scratchpad_offset`). Returns the arena offset and the new total.
pub fn place_arena(cur: u64, size: u64, page: u64) -> Option<(u64, u64)> {
    let rem = cur % page;
    let base = if rem != 0 && page - rem < size {
        cur.checked_add(page - rem)?
    } else {
        cur
    };
    Some((base, base.checked_add(size)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{FaultPlan, Geometry, SimDevice};

    fn device() -> Arc<Device> {
        Arc::new(SimDevice::new(Geometry::for_arch(Arch::Cayman)))
    }
    use crate::Arch;

    const PAGE: u64 = 64 << 20;

    #[test]
    fn pages_are_shared_refcounted_and_shrink_from_the_top() {
        let dev = device();
        let mut sp = Scratchpad::default();
        assert_eq!(sp.reserve(&dev, PCore(0), PAGE, 8 << 20).unwrap(), 1);
        assert_eq!(sp.reserve(&dev, PCore(0), PAGE, PAGE + 1).unwrap(), 2);
        assert_eq!((sp.len(), sp.refs(0), sp.refs(1)), (2, Some(2), Some(1)));
        assert_eq!(dev.live_count(), 2);
        let a = sp.address(PAGE, 100, 10).unwrap();
        assert_eq!(a % 4096, 100);
        assert_eq!(sp.address(PAGE, PAGE - 5, 10), None, "straddles");
        sp.release(2);
        assert_eq!(sp.len(), 1, "page 1 unreferenced and on top: freed");
        sp.release(1);
        assert!(sp.is_empty());
        assert_eq!(dev.live_count(), 0);
    }

    #[test]
    fn a_failed_reserve_frees_what_it_allocated() {
        let dev = device();
        let mut sp = Scratchpad::default();
        dev.set_fault_plan(FaultPlan {
            fail_alloc_at: Some(2),
            ..FaultPlan::default()
        });
        let e = sp.reserve(&dev, PCore(0), PAGE, 3 * PAGE).unwrap_err();
        assert!(
            matches!(e, ReserveError::Device(ref e) if e.status() == crate::NrtStatus::Resource),
            "{e:?}"
        );
        assert!(sp.is_empty());
        assert_eq!(dev.live_count(), 0);
        let e = sp.reserve(&dev, PCore(0), 4096, 4096 * 2000).unwrap_err();
        assert!(
            matches!(e, ReserveError::Pages { requested: 2000 }),
            "{e:?}"
        );
        assert_eq!(dev.live_count(), 0);
    }

    #[test]
    fn arenas_start_on_a_fresh_page_only_when_they_would_straddle() {
        assert_eq!(place_arena(0, 10, 100), Some((0, 10)));
        assert_eq!(place_arena(10, 50, 100), Some((10, 60)));
        assert_eq!(place_arena(60, 50, 100), Some((100, 150)));
        assert_eq!(place_arena(60, 500, 100), Some((100, 600)));
        assert_eq!(place_arena(u64::MAX - 1, 10, 100), None);
    }
}
