//! The per-core scratchpad (stage.md §6.5, docs/reference/memory.md): one
//! page table per physical core, shared by every model on that core.
//!
//! A NEFF needs `max(backing_variable_off + size)` bytes of arena; the table
//! holds that many pages of the largest need among the core's loaded
//! models, allocated on demand from the core's HBM. Pages never move once a
//! model references them, and are reference-counted, so the table shrinks
//! (from the top) only when the last model using a page unloads. Two
//! layouts, fixed when the runtime starts ([`ScratchpadMode`]):
//!
//! - paged (every line up to 2.32, and LNC 1 on trn2 and trn3): pages of
//!   `NEURON_SCRATCHPAD_PAGE_SIZE` anywhere in the HBM; a variable that
//!   would straddle two of them gets a private allocation instead;
//! - contiguous (the default from 2.33): 64 MiB pages that form one region
//!   growing downward from the top of the main pool, so a variable may span
//!   pages. A region that cannot grow fails the load as out of memory,
//!   however much is free elsewhere (docs/decisions.md, "The contiguous
//!   scratchpad"); the experimental mode of the older lines instead caps
//!   the region and gives the variables beyond it private allocations.

use std::sync::Arc;

use crate::device::{AllocReq, Device, DeviceError, MemUsage, Owned, Owner, Place};
use crate::ids::PCore;

use super::Cores;

/// Most pages one core's table may hold.
pub const MAX_PAGES: u64 = 1024;
/// Alignment requested for every page.
pub const PAGE_ALIGN: u64 = 4 << 20;

/// How every core of a runtime lays out its scratchpad; the runtime decides
/// it once, when it starts (`RuntimeConfig::scratchpad_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScratchpadMode {
    /// Bytes of one page.
    pub page: u64,
    /// One region of [`ScratchpadMode::CONTIGUOUS_PAGE`] pages that grows in
    /// place, rather than pages anywhere.
    pub contiguous: bool,
    /// A contiguous region that cannot grow stops where it is (the older
    /// lines' experimental mode) instead of refusing the load.
    pub capped: bool,
}

impl ScratchpadMode {
    /// The documented default page: 512 MiB.
    pub const DEFAULT_PAGE: u64 = 512 << 20;
    /// The page of the contiguous mode, whatever `NEURON_SCRATCHPAD_PAGE_SIZE`
    /// says.
    pub const CONTIGUOUS_PAGE: u64 = 64 << 20;

    /// Separate pages of `page` bytes.
    pub fn paged(page: u64) -> ScratchpadMode {
        ScratchpadMode {
            page,
            contiguous: false,
            capped: false,
        }
    }

    /// One contiguous region of 64 MiB pages that must grow as far as a
    /// load needs (2.33 on).
    pub fn contiguous() -> ScratchpadMode {
        ScratchpadMode {
            page: ScratchpadMode::CONTIGUOUS_PAGE,
            contiguous: true,
            capped: false,
        }
    }

    /// The contiguous region of the lines before 2.33, asked for with
    /// `NEURON_RT_DBG_EXPERIMENTAL_CONTIGUOUS_SCRATCHPAD`: where it cannot
    /// grow it stops (docs/reference/stage.md §6.5).
    pub fn capped_contiguous() -> ScratchpadMode {
        ScratchpadMode {
            capped: true,
            ..ScratchpadMode::contiguous()
        }
    }
}

impl Default for ScratchpadMode {
    fn default() -> ScratchpadMode {
        ScratchpadMode::paged(ScratchpadMode::DEFAULT_PAGE)
    }
}

/// A page of the table: the runtime's allocation (every model on the core
/// uses it) and how many loaded models reference it.
#[derive(Debug)]
struct Page {
    alloc: Owned,
    refs: u32,
}

impl Page {
    fn pa(&self) -> u64 {
        self.alloc.allocation().pa.0
    }
}

/// One core's page table.
#[derive(Debug, Default)]
pub struct Scratchpad {
    mode: ScratchpadMode,
    pages: Vec<Page>,
}

impl Scratchpad {
    /// An empty table laid out as `mode` says.
    pub fn new(mode: ScratchpadMode) -> Scratchpad {
        Scratchpad {
            mode,
            pages: Vec::new(),
        }
    }

    pub fn mode(&self) -> ScratchpadMode {
        self.mode
    }

    /// Pages in the table.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.pages.len()
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    /// References of page `i` (tests and diagnostics).
    #[cfg(test)]
    pub fn refs(&self, i: usize) -> Option<u32> {
        self.pages.get(i).map(|p| p.refs)
    }

    /// Device address of page `i` (tests and diagnostics).
    #[cfg(test)]
    pub fn page_pa(&self, i: usize) -> Option<u64> {
        self.pages.get(i).map(Page::pa)
    }

    /// Makes the first `ceil(bytes / page)` pages exist and references them
    /// once. Returns how many pages were referenced (to release later):
    /// all of them, except when a capped contiguous region has no room to
    /// grow, which only ends its growth (the older runtimes' ceiling). On failure, or a
    /// panic, the pages allocated by this call are freed (they join the
    /// table only once all exist) and nothing is referenced. More than
    /// [`MAX_PAGES`] is refused before any is made; the caller, who knows
    /// whose need it is, says so.
    pub fn reserve(
        &mut self,
        dev: &Arc<Device>,
        core: PCore,
        bytes: u64,
    ) -> Result<u32, ReserveError> {
        let need = bytes.div_ceil(self.mode.page);
        if need > MAX_PAGES {
            return Err(ReserveError::Pages { requested: need });
        }
        let mut fresh: Vec<Owned> = Vec::new();
        while ((self.pages.len() + fresh.len()) as u64) < need {
            let place = if self.mode.contiguous {
                let lowest = fresh
                    .last()
                    .map(|a| a.allocation().pa.0)
                    .or_else(|| self.pages.last().map(Page::pa));
                Place::Under(lowest)
            } else {
                Place::Kernel
            };
            let req = AllocReq {
                size: self.mode.page,
                align: PAGE_ALIGN,
                core,
                usage: MemUsage::Scratchpad,
                owner: Owner::Runtime,
                place,
                hint: "scratchpad",
            };
            match Owned::new(dev, req) {
                Ok(page) => fresh.push(page),
                Err(DeviceError::NoMem { .. }) if self.mode.capped => break,
                Err(e) => return Err(ReserveError::Device(e)),
            }
        }
        self.pages
            .extend(fresh.into_iter().map(|alloc| Page { alloc, refs: 0 }));
        let got = self.pages.len().min(need as usize);
        for p in &mut self.pages[..got] {
            p.refs += 1;
        }
        Ok(got as u32)
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

    /// The device address of `size` bytes at arena `offset` for a model
    /// that references the first `pages` pages, or `None` when they do not
    /// lie in those pages: a paged variable that straddles a page, a
    /// contiguous one beyond the region (the variable then needs a private
    /// allocation).
    ///
    /// A contiguous region is addressed from its lowest page, the last the
    /// model references. The reference runtime counts from the last page of
    /// the whole table, which for a model smaller than one loaded before it
    /// is a page it does not reference, freed when that model unloads; we
    /// keep every model inside the pages it holds.
    pub fn address(&self, offset: u64, size: u64, pages: u32) -> Option<u64> {
        let page = self.mode.page;
        let held = u64::from(pages).checked_mul(page)?;
        if self.mode.contiguous {
            if offset.checked_add(size)? > held {
                return None;
            }
            let lowest = self.pages.get((pages as usize).checked_sub(1)?)?;
            return lowest.pa().checked_add(offset);
        }
        let within = offset % page;
        if within.checked_add(size)? > page || offset >= held {
            return None;
        }
        self.pages
            .get(usize::try_from(offset / page).ok()?)
            .map(|p| p.pa() + within)
    }
}

/// Why a [`Scratchpad::reserve`] failed.
#[derive(Debug)]
pub enum ReserveError {
    /// More than [`MAX_PAGES`] pages.
    Pages { requested: u64 },
    /// A page could not be allocated.
    Device(DeviceError),
}

/// A plan's references to the first pages of its core's table: released
/// when dropped (at unload, or when the load fails).
#[derive(Debug)]
pub struct ScratchClaim {
    cores: Arc<Cores>,
    core: PCore,
    /// Bytes of arena asked for.
    bytes: u64,
    pages: u32,
}

impl ScratchClaim {
    /// References (creating where needed) the pages that hold `bytes` of
    /// arena on `core`.
    pub fn take(
        cores: &Arc<Cores>,
        dev: &Arc<Device>,
        core: PCore,
        bytes: u64,
    ) -> Result<ScratchClaim, ReserveError> {
        let pages = cores.lock(core).scratchpad.reserve(dev, core, bytes)?;
        Ok(ScratchClaim {
            cores: Arc::clone(cores),
            core,
            bytes,
            pages,
        })
    }

    /// Pages referenced.
    pub fn pages(&self) -> u32 {
        self.pages
    }

    /// Bytes of arena the claim was taken for.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for ScratchClaim {
    fn drop(&mut self) {
        self.cores.lock(self.core).scratchpad.release(self.pages);
    }
}

/// Places an arena of `size` bytes after `cur` (the core's running total).
/// A paged arena that would otherwise straddle a page starts on a fresh one;
/// a contiguous one never needs to (`update_scratchpad_offset`). Returns the
/// arena offset and the new total.
pub fn place_arena(cur: u64, size: u64, mode: ScratchpadMode) -> Option<(u64, u64)> {
    let page = mode.page;
    let rem = cur % page;
    let base = if !mode.contiguous && rem != 0 && page - rem < size {
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
    use crate::Arch;

    fn device() -> Arc<Device> {
        Arc::new(SimDevice::new(Geometry::for_arch(Arch::Cayman)))
    }

    const PAGE: u64 = 64 << 20;

    #[test]
    fn pages_are_shared_refcounted_and_shrink_from_the_top() {
        let dev = device();
        let mut sp = Scratchpad::new(ScratchpadMode::paged(PAGE));
        assert_eq!(sp.reserve(&dev, PCore(0), 8 << 20).unwrap(), 1);
        assert_eq!(sp.reserve(&dev, PCore(0), PAGE + 1).unwrap(), 2);
        assert_eq!((sp.len(), sp.refs(0), sp.refs(1)), (2, Some(2), Some(1)));
        assert_eq!(dev.live_count(), 2);
        let a = sp.address(100, 10, 1).unwrap();
        assert_eq!(a % 4096, 100);
        assert_eq!(sp.address(PAGE - 5, 10, 2), None, "straddles");
        assert_eq!(sp.address(PAGE + 5, 10, 1), None, "beyond the pages held");
        assert_eq!(
            sp.address(PAGE + 5, 10, 2),
            Some(sp.page_pa(1).unwrap() + 5)
        );
        sp.release(2);
        assert_eq!(sp.len(), 1, "page 1 unreferenced and on top: freed");
        sp.release(1);
        assert!(sp.is_empty());
        assert_eq!(dev.live_count(), 0);
    }

    #[test]
    fn a_failed_reserve_frees_what_it_allocated() {
        let dev = device();
        let mut sp = Scratchpad::new(ScratchpadMode::paged(PAGE));
        dev.set_fault_plan(FaultPlan {
            fail_alloc_at: Some(2),
            ..FaultPlan::default()
        });
        let e = sp.reserve(&dev, PCore(0), 3 * PAGE).unwrap_err();
        assert!(
            matches!(e, ReserveError::Device(ref e) if e.status() == crate::NrtStatus::Resource),
            "{e:?}"
        );
        assert!(sp.is_empty());
        assert_eq!(dev.live_count(), 0);
        let mut tiny = Scratchpad::new(ScratchpadMode::paged(4096));
        let e = tiny.reserve(&dev, PCore(0), 4096 * 2000).unwrap_err();
        assert!(
            matches!(e, ReserveError::Pages { requested: 2000 }),
            "{e:?}"
        );
        assert_eq!(dev.live_count(), 0);
    }

    /// The contiguous region: pages adjacent, growing down, addressed from
    /// the lowest page the model holds; a variable may span pages.
    #[test]
    fn a_contiguous_region_grows_down_in_place() {
        let dev = device();
        let mut sp = Scratchpad::new(ScratchpadMode::contiguous());
        let page = ScratchpadMode::CONTIGUOUS_PAGE;
        assert_eq!(sp.reserve(&dev, PCore(0), 2 * page).unwrap(), 2);
        let top = sp.page_pa(0).unwrap() + page;
        assert_eq!(sp.page_pa(1).unwrap() + page, sp.page_pa(0).unwrap());
        assert_eq!(sp.reserve(&dev, PCore(0), 3 * page).unwrap(), 3);
        assert_eq!(sp.page_pa(2).unwrap() + page, sp.page_pa(1).unwrap());
        assert_eq!(sp.page_pa(0).unwrap() + page, top, "the top never moves");
        // Across a page boundary, inside the region of the pages held.
        let lowest2 = sp.page_pa(1).unwrap();
        assert_eq!(sp.address(page - 8, 16, 2), Some(lowest2 + page - 8));
        assert_eq!(sp.address(page, page + 1, 2), None, "beyond two pages");
        assert_eq!(
            sp.address(0, 3 * page, 3),
            Some(sp.page_pa(2).unwrap()),
            "the whole region"
        );
        sp.release(3);
        assert_eq!(sp.len(), 2, "the lowest page goes first");
        assert_eq!(sp.page_pa(0).unwrap() + page, top);
        sp.release(2);
        assert!(sp.is_empty());
        assert_eq!(dev.live_count(), 0);
    }

    /// When the bytes under the region are taken a capped region stops
    /// growing: the model holds what exists, nothing fails. The region of
    /// 2.33 on refuses instead, leaving the table as it was.
    #[test]
    fn a_contiguous_region_that_cannot_grow_stops_at_its_ceiling() {
        let dev = device();
        let mut sp = Scratchpad::new(ScratchpadMode::capped_contiguous());
        let page = ScratchpadMode::CONTIGUOUS_PAGE;
        assert_eq!(sp.reserve(&dev, PCore(0), page).unwrap(), 1);
        // Something right under the region.
        let _squat = Owned::new(
            &dev,
            AllocReq {
                size: 4096,
                align: 0,
                core: PCore(0),
                usage: MemUsage::Tensor,
                owner: Owner::Client,
                place: Place::Under(sp.page_pa(0)),
                hint: "squat",
            },
        )
        .unwrap();
        assert_eq!(sp.reserve(&dev, PCore(0), 4 * page).unwrap(), 1);
        assert_eq!(sp.refs(0), Some(2));
        sp.release(1);
        sp.release(1);
        assert!(sp.is_empty());

        let mut sp = Scratchpad::new(ScratchpadMode::contiguous());
        let region = sp.reserve(&dev, PCore(2), page).unwrap();
        assert_eq!(region, 1);
        let _squat = Owned::new(
            &dev,
            AllocReq {
                size: 4096,
                align: 0,
                core: PCore(2),
                usage: MemUsage::Tensor,
                owner: Owner::Client,
                place: Place::Under(sp.page_pa(0)),
                hint: "squat",
            },
        )
        .unwrap();
        let live = dev.live_count();
        assert!(matches!(
            sp.reserve(&dev, PCore(2), 4 * page),
            Err(ReserveError::Device(DeviceError::NoMem { .. }))
        ));
        assert_eq!((sp.len(), sp.refs(0)), (1, Some(1)), "as it was");
        assert_eq!(dev.live_count(), live, "no page of the refused growth kept");
    }

    #[test]
    fn arenas_start_on_a_fresh_page_only_when_they_would_straddle() {
        let m = ScratchpadMode::paged(100);
        assert_eq!(place_arena(0, 10, m), Some((0, 10)));
        assert_eq!(place_arena(10, 50, m), Some((10, 60)));
        assert_eq!(place_arena(60, 50, m), Some((100, 150)));
        assert_eq!(place_arena(60, 500, m), Some((100, 600)));
        assert_eq!(place_arena(u64::MAX - 1, 10, m), None);
        let c = ScratchpadMode::contiguous();
        let p = c.page;
        assert_eq!(place_arena(p - 10, 50, c), Some((p - 10, p + 40)));
    }
}
