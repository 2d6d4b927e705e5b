//! Staging a NEFF again on cores it was already staged on, for a runtime
//! whose devices keep no bytes (a planner of many ranks): the same device
//! requests, made again, without planning, lowering or relocating anew.
//!
//! What a staging asks of the device depends on the NEFF, the runtime's
//! settings and the physical cores — and on the device only through the
//! shared scratchpad: the pages a load's arena needs exist already or are
//! made, and how many the load holds decides which virtual variables get a
//! private allocation. Everything else (each variable's kind and size, the
//! images' lengths, the rings and tables) is the NEFF's and the line's.
//! So the first staging of a NEFF on a set of cores is recorded (its own
//! requests in order, [`crate::device::tape`], and the arena it claimed on
//! each core), and a later load on the same cores claims the same arena
//! through the same page table, then makes the recorded requests in the
//! recorded order, charged to its own `H_MODEL`: the allocator, given the
//! same requests in the same order on the same state, places them where a
//! staging would, and the ledger charges them alike.
//!
//! A replay that finds a request refused, or its arena held in fewer pages
//! than the recording's (a capped contiguous region that could not grow),
//! puts back what it made and the load is staged for real, which makes the
//! same requests, meets the same refusal and reports it as every load does
//! (the replay's refusal is shown to no observer, `tape::quietly`).
//!
//! A replayed load keeps its allocations, scratchpad pages and model-table
//! entries, not where each variable, ring and image landed ([`CorePlan::hollow`]):
//! a runtime replays only where nobody reads those
//! ([`crate::config::RuntimeConfig::replays`]).

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use crate::container::Archive;
use crate::device::tape::{self, Taped};
use crate::device::{BatchReq, Device, MemUsage, Owner};
use crate::ids::{HModel, PCore};
use crate::kbin::Kbin;

use super::core::CoreImage;
use super::fanout::{stage, StageOptions};
use super::plan::CorePlan;
use super::scratchpad::ScratchClaim;
use super::{Cores, StageError};

/// What one staging of a NEFF on a set of physical cores asked of its
/// device, in order.
#[derive(Debug)]
pub struct Recipe {
    /// Per subgraph, the scratchpad arena claimed on its core (bytes) and
    /// the pages that claim held; `None` without an arena.
    claims: Vec<Option<(u64, u32)>>,
    /// Every request of the load, in the recorded order, its owner left
    /// to the load that makes it again (as one batch: the cores of a
    /// logical core may share an HBM, so the order across them stays).
    reqs: Arc<[BatchReq]>,
    /// Per subgraph, its plan's warnings.
    warnings: Vec<Vec<String>>,
}

impl Recipe {
    /// The recipe of `images`, just staged under `h_model` on `pcores`
    /// while `taped` recorded; `None` when the recording holds a request
    /// a replay could not make again (anything of another owner than the
    /// load and the scratchpad's pages).
    fn of(images: &[CoreImage], taped: Vec<Taped>, pcores: &[PCore], h_model: HModel) -> Option<Recipe> {
        let cores = &pcores[..images.len()];
        let mut reqs = Vec::new();
        for Taped { owner, req } in taped {
            match owner {
                Owner::Model(h) if h == h_model && cores.contains(&req.core) => reqs.push(req),
                Owner::Runtime if req.usage == MemUsage::Scratchpad => {}
                _ => return None,
            }
        }
        let held: usize = images.iter().map(|i| i.allocs.len() + i.plan.allocs.len()).sum();
        (held == reqs.len()).then_some(())?;
        Some(Recipe {
            claims: images
                .iter()
                .map(|i| i.plan.scratch.as_ref().map(|c| (c.bytes(), c.pages())))
                .collect(),
            reqs: reqs.into(),
            warnings: images.iter().map(|i| i.plan.warnings.clone()).collect(),
        })
    }

    /// The recipe made again for load `h_model` of `kbins` on `pcores`:
    /// `None` (with nothing left on the device) when a request is refused
    /// or an arena is held in other pages than the recording's.
    fn replay(
        &self,
        dev: &Arc<Device>,
        cores: &Arc<Cores>,
        kbins: &[Kbin],
        pcores: &[PCore],
        h_model: HModel,
    ) -> Option<Vec<CoreImage>> {
        tape::quietly(|| {
            let mut images: Vec<CoreImage> = kbins
                .iter()
                .zip(pcores)
                .map(|(kbin, &pcore)| {
                    CoreImage::new(kbin.name(), CorePlan::hollow(dev, pcore, h_model))
                })
                .collect();
            if images.len() != self.claims.len() {
                return None;
            }
            for (image, claim) in images.iter_mut().zip(&self.claims) {
                if let Some((bytes, pages)) = *claim {
                    let taken = ScratchClaim::take(cores, dev, image.pcore(), bytes).ok()?;
                    if taken.pages() != pages {
                        return None;
                    }
                    image.plan.scratch = Some(taken);
                }
            }
            // The load's allocations, on all its cores, are held by its
            // first core's image (freed with it, before the others).
            images
                .first_mut()?
                .allocs
                .alloc_batch(Owner::Model(h_model), &self.reqs)
                .ok()?;
            for (image, warnings) in images.iter_mut().zip(&self.warnings) {
                image.plan.warnings.clone_from(warnings);
                image.enter_model_table(cores).ok()?;
            }
            Some(images)
        })
    }
}

/// Where a load is staged: the device, its cores' states, the load's
/// physical cores and its `H_MODEL`.
#[derive(Clone, Copy)]
pub struct Target<'a> {
    /// The device of the load's logical core.
    pub dev: &'a Arc<Device>,
    /// That device's per-core states (scratchpad page tables, model tables).
    pub cores: &'a Arc<Cores>,
    /// The physical cores of the logical core, one per subgraph.
    pub pcores: &'a [PCore],
    /// What the load's allocations are charged to.
    pub h_model: HModel,
}

/// A recorded staging and the parse it was made from, whose address keys
/// it: held weakly, the parse may go, but its address cannot be reused by
/// another while this lives.
struct Kept {
    _parse: Weak<dyn Any + Send + Sync>,
    recipe: Arc<Recipe>,
}

/// The recipes of one runtime (whose settings they assume), by parse and
/// physical cores.
#[derive(Default)]
pub struct Recipes {
    kept: Mutex<HashMap<(usize, Vec<PCore>), Kept>>,
}

impl std::fmt::Debug for Recipes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recipes")
            .field("kept", &self.lock().len())
            .finish()
    }
}

impl Recipes {
    fn lock(&self) -> MutexGuard<'_, HashMap<(usize, Vec<PCore>), Kept>> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// [`stage`] of `kbins` (of `parse`) for load `to.h_model` on
    /// `to.pcores`, or the replay of an earlier staging of the same parse
    /// on the same cores. A staging made here builds its cores on the
    /// calling thread (so that the recording sees every request, in an
    /// order that does not depend on threads).
    pub fn stage<P: Any + Send + Sync>(
        &self,
        parse: &Arc<P>,
        kbins: &[Kbin],
        archive: &Archive,
        to: Target<'_>,
        opts: StageOptions,
    ) -> Result<Vec<CoreImage>, StageError> {
        let Target {
            dev,
            cores,
            pcores,
            h_model,
        } = to;
        let key = (Arc::as_ptr(parse) as *const () as usize, pcores.to_vec());
        let known = self.lock().get(&key).map(|k| Arc::clone(&k.recipe));
        if let Some(recipe) = &known {
            if let Some(images) = recipe.replay(dev, cores, kbins, pcores, h_model) {
                #[cfg(any(test, feature = "testkit"))]
                REPLAYED.with(|n| n.set(n.get() + 1));
                return Ok(images);
            }
        }
        let opts = StageOptions {
            fanout_min_bytes: u64::MAX,
            ..opts
        };
        let (staged, taped) =
            tape::recording(|| stage(dev, cores, kbins, archive, pcores, h_model, opts));
        let images = staged?;
        if known.is_none() {
            if let Some(recipe) = Recipe::of(&images, taped, pcores, h_model) {
                let weak: Weak<dyn Any + Send + Sync> = Arc::downgrade(parse) as Weak<_>;
                self.lock().insert(
                    key,
                    Kept {
                        _parse: weak,
                        recipe: Arc::new(recipe),
                    },
                );
            }
        }
        Ok(images)
    }
}

#[cfg(any(test, feature = "testkit"))]
thread_local! {
    static REPLAYED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Loads this thread has replayed (for tests: that a plan compared with
/// its staged twin replayed at all).
#[cfg(any(test, feature = "testkit"))]
pub fn replayed_here() -> u64 {
    REPLAYED.with(std::cell::Cell::get)
}
