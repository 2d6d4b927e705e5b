//! The memory plan (stage.md §6): where every variable of every subgraph
//! lives on the device.
//!
//! Planning runs on the loader thread before the per-core fan-out, because
//! remote variables need every subgraph's placements. It allocates what the
//! reference runtime stages at this point (weights, tmp buffers, scratchpad
//! pages, pointer slots) — on one thread, so addresses never depend on
//! thread timing — and produces a plain value (var → placement per core)
//! that relocation reads without touching the device. The weights' bytes
//! are copied by each core's own build ([`weight_copies`]), so the fan-out
//! parallelises the bulk of a load's copies; the reference copies them here.
//!
//! Placement by kind (§6.2, §6.3): the state buffer gets the core's SB
//! address (no allocation); `file` vars are allocated with their alignment
//! (and later get exactly `size` payload bytes); `tmp-buf` vars are allocated;
//! `virtual` vars sit in the core's shared scratchpad at their arena offset
//! (aliasing allowed, as real NEFFs do), or get a private allocation when
//! they would straddle a page; inputs and outputs are **not** allocated —
//! they are bound by name at every execution; pointer slots get small device
//! arrays whose IO rows are filled per execution, and a `dge-table` one
//! 8-byte IO word (its list is resolved on the host).

use std::sync::Arc;

use crate::container::Archive;
use crate::device::{AllocReq, AllocSet, Device, MemHandle, MemUsage, Owner, Place};
use crate::ids::{HModel, PCore, VarId};
use crate::kbin::Kbin;
use crate::manifest::def::{Backing, Var, VarKind, VarOf, DGE_TABLE_WORD, POINTER_SLOT};
use crate::relocate::dma::Target;
use crate::relocate::RelocError;

use super::scratchpad::{place_arena, ReserveError, ScratchClaim, MAX_PAGES};
use super::{Cores, ScratchpadNeed, StageError};

/// Where a variable is on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// The core's state-buffer window (32 MiB, not allocated).
    StateBuffer { pa: u64 },
    /// An allocation of its own: weights, tmp buffers, pointer slots and
    /// tables, virtual vars that straddle a scratchpad page.
    Hbm { pa: u64, size: u64 },
    /// Inside the core's shared scratchpad pages.
    Scratchpad { pa: u64, size: u64 },
    /// An input or output: bound per execution, never at load.
    Io,
    /// Host-side only (`list` vars).
    Host,
}

/// One subgraph's plan on its physical core. It owns what it allocated and
/// the scratchpad pages it references: dropping it (at unload, or when the
/// load fails) releases them.
#[derive(Debug)]
pub struct CorePlan {
    pub pcore: PCore,
    /// The load the plan belongs to (what its allocations are charged to).
    pub h_model: HModel,
    /// Indexed by var_id.
    pub vars: Vec<Placement>,
    /// Name and kind of each variable, indexed by var_id (for tools that
    /// show where things landed after the parse products are gone).
    pub var_meta: Vec<(String, VarKind)>,
    /// Allocations this plan owns.
    pub allocs: AllocSet,
    /// The allocation of each variable that has one of its own.
    pub var_allocs: Vec<(VarId, MemHandle)>,
    /// The scratchpad pages this plan references on its core.
    pub scratch: Option<ScratchClaim>,
    /// Arena offset of this subgraph's LOCAL scratchpad.
    pub local_offset: u64,
    /// Non-fatal findings (aliasing lost on a private scratch allocation).
    pub warnings: Vec<String>,
}

impl CorePlan {
    /// `mem_ref_to_addr` for a reference the KBIN build and the manifest
    /// layer already held to the variable's extent ([`Var::extent`], the
    /// extent this plan gives every variable): absolute for a staged
    /// variable, a template for an input or output. Only a variable that
    /// is not on the device (a `list`, or a `remote` var whose target is
    /// not) has no address.
    pub fn address(&self, var: VarId, offset: u64) -> Result<Target, RelocError> {
        let not_staged = || {
            let name = self
                .var_meta
                .get(var.0 as usize)
                .map_or("?", |m| m.0.as_str());
            RelocError::NotStaged(name.to_string())
        };
        match self.vars.get(var.0 as usize) {
            Some(
                Placement::StateBuffer { pa }
                | Placement::Hbm { pa, .. }
                | Placement::Scratchpad { pa, .. },
            ) => Ok(Target::Abs(
                pa.checked_add(offset).ok_or(RelocError::AddressOverflow)?,
            )),
            Some(Placement::Io) => Ok(Target::Io { var, offset }),
            Some(Placement::Host) | None => Err(not_staged()),
        }
    }
}

impl CorePlan {
    /// Scratchpad pages the plan references on its core.
    pub fn scratch_pages(&self) -> u32 {
        self.scratch.as_ref().map_or(0, ScratchClaim::pages)
    }
}

struct Planner<'a> {
    dev: &'a Device,
    cores: &'a Cores,
}

impl Planner<'_> {
    /// Allocates device memory for `var` (a zero size still takes one
    /// 4 KiB granule, so the variable has a unique address).
    fn alloc(
        &self,
        plan: &mut CorePlan,
        kbin: &Kbin,
        var: &Var,
        size: u64,
        align: u64,
        usage: MemUsage,
    ) -> Result<(u64, MemHandle), StageError> {
        let req = AllocReq {
            size,
            align,
            core: plan.pcore,
            usage,
            owner: Owner::Model(plan.h_model),
            place: Place::Kernel,
            hint: &var.name,
        };
        let a = plan
            .allocs
            .alloc(req)
            .map_err(|source| StageError::Device {
                subgraph: kbin.name().to_string(),
                what: format!("allocating {} on {}", var.name, plan.pcore),
                source,
            })?;
        plan.var_allocs.push((var.id, a.handle));
        Ok((a.pa.0, a.handle))
    }

    fn write(
        &self,
        kbin: &Kbin,
        handle: MemHandle,
        data: &[u8],
        what: &str,
    ) -> Result<(), StageError> {
        self.dev
            .write(handle, 0, data)
            .map_err(|source| StageError::Device {
                subgraph: kbin.name().to_string(),
                what: format!("copying {what}"),
                source,
            })
    }

    /// Places one variable; pointers and tables are filled in a later pass.
    fn place(&self, plan: &mut CorePlan, kbin: &Kbin, var: &Var) -> Result<Placement, StageError> {
        let align = var.alignment.unwrap_or(0);
        Ok(match var.of {
            VarOf::StateBuffer => {
                let pa = self
                    .dev
                    .sb_base(plan.pcore)
                    .map_err(|source| StageError::Device {
                        subgraph: kbin.name().to_string(),
                        what: "locating the state buffer".into(),
                        source,
                    })?;
                Placement::StateBuffer { pa: pa.0 }
            }
            VarOf::Input { .. } | VarOf::Output { .. } => Placement::Io,
            VarOf::List { .. } | VarOf::Remote { .. } => Placement::Host,
            VarOf::File { size, .. } => {
                // Allocated here (so addresses do not depend on thread
                // timing); the payload is copied by the core's own build,
                // in parallel with the other cores (`weight_copies`).
                let (pa, _) = self.alloc(plan, kbin, var, size, align, MemUsage::Weight)?;
                Placement::Hbm { pa, size }
            }
            VarOf::TmpBuf { size } => {
                let (pa, _) =
                    self.alloc(plan, kbin, var, size, align, MemUsage::ScratchpadNotShared)?;
                Placement::Hbm { pa, size }
            }
            VarOf::Pointer { .. } => {
                let (pa, _) = self.alloc(plan, kbin, var, POINTER_SLOT, 0, MemUsage::Generic)?;
                Placement::Hbm {
                    pa,
                    size: POINTER_SLOT,
                }
            }
            VarOf::DgeTable { .. } => {
                // The list is resolved on the host at every execution
                // (lowered operands name its variables directly); the
                // device keeps one 8-byte IO word per table — the IO row
                // of 8 bytes every capture shows on the core with a
                // dge-table, 0 on the one without.
                let (pa, _) = self.alloc(plan, kbin, var, DGE_TABLE_WORD, 0, MemUsage::Io)?;
                Placement::Hbm {
                    pa,
                    size: DGE_TABLE_WORD,
                }
            }
            VarOf::Virtual {
                size,
                backing_offset,
                backing,
            } => {
                let offset = self.arena_offset(plan, &var.name, backing, backing_offset)?;
                self.place_virtual(plan, kbin, var, offset, size)?
            }
        })
    }

    /// A virtual variable at `offset` in its arena (the arena's start plus
    /// `backing_variable_off`), inside the core's shared scratchpad unless
    /// it does not fit the pages the plan holds there (it straddles a page,
    /// or lies beyond a contiguous region that could not grow): then a
    /// private allocation, the NEFF's own (the 'scratchpad' column of the
    /// runtime's reports).
    fn place_virtual(
        &self,
        plan: &mut CorePlan,
        kbin: &Kbin,
        var: &Var,
        offset: u64,
        size: u64,
    ) -> Result<Placement, StageError> {
        let (found, mode) = {
            let core = self.cores.lock(plan.pcore);
            let sp = &core.scratchpad;
            (sp.address(offset, size, plan.scratch_pages()), sp.mode())
        };
        if let Some(pa) = found {
            return Ok(Placement::Scratchpad { pa, size });
        }
        let why = if mode.contiguous {
            "lies beyond the contiguous scratchpad".to_string()
        } else {
            format!("straddles a {}-byte scratchpad page", mode.page)
        };
        let aliased = self.overlaps_another(plan, kbin, var, offset, size)?;
        plan.warnings.push(format!(
            "virtual variable {} {why}: it gets a private allocation{}",
            var.name,
            if aliased {
                " and no longer aliases the virtual variables it overlaps"
            } else {
                ""
            }
        ));
        let (pa, _) = self.alloc(plan, kbin, var, size, 0, MemUsage::ScratchpadNotShared)?;
        Ok(Placement::Hbm { pa, size })
    }

    /// Where virtual variable `name` starts in its core's arena.
    fn arena_offset(
        &self,
        plan: &CorePlan,
        name: &str,
        backing: Backing,
        backing_offset: u64,
    ) -> Result<u64, StageError> {
        let arena = match backing {
            Backing::Shared => 0,
            Backing::Local | Backing::Sharded | Backing::Main => plan.local_offset,
        };
        arena
            .checked_add(backing_offset)
            .ok_or_else(|| StageError::ScratchpadLayout(format!("offset of {name} overflows")))
    }

    /// Whether another virtual variable of the subgraph shares bytes of the
    /// arena with `[offset, offset + size)` (the compiler's aliasing, which
    /// a private allocation gives up).
    fn overlaps_another(
        &self,
        plan: &CorePlan,
        kbin: &Kbin,
        var: &Var,
        offset: u64,
        size: u64,
    ) -> Result<bool, StageError> {
        for other in kbin.vars().iter().filter(|o| o.id != var.id) {
            let VarOf::Virtual {
                size: other_size,
                backing_offset,
                backing,
            } = other.of
            else {
                continue;
            };
            let start = self.arena_offset(plan, &other.name, backing, backing_offset)?;
            let end = start.saturating_add(other_size);
            if start < offset.saturating_add(size) && offset < end {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

impl CorePlan {
    /// An empty plan of `kbin` on `pcore` for load `h_model`, allocating
    /// on `dev`, for [`plan`] to fill.
    pub fn new(dev: &Arc<Device>, pcore: PCore, h_model: HModel, kbin: &Kbin) -> CorePlan {
        CorePlan {
            pcore,
            h_model,
            vars: Vec::with_capacity(kbin.vars().len()),
            var_meta: kbin
                .vars()
                .iter()
                .map(|v| (v.name.clone(), v.of.kind()))
                .collect(),
            allocs: AllocSet::new(dev),
            var_allocs: Vec::new(),
            scratch: None,
            local_offset: 0,
            warnings: Vec::new(),
        }
    }
}

impl CorePlan {
    /// A plan on `pcore` for load `h_model` that places no variable: what a
    /// replayed load holds ([`super::replay`]), its allocations and
    /// scratchpad pages without the placements they were made for.
    pub fn hollow(dev: &Arc<Device>, pcore: PCore, h_model: HModel) -> CorePlan {
        CorePlan {
            pcore,
            h_model,
            vars: Vec::new(),
            var_meta: Vec::new(),
            allocs: AllocSet::new(dev),
            var_allocs: Vec::new(),
            scratch: None,
            local_offset: 0,
            warnings: Vec::new(),
        }
    }
}

/// The virtual variable reaching furthest into the scratchpad the `k`-th
/// subgraph's core holds (its local arena, and the shared one on the first
/// core), with its subgraph's name, `backing_variable_off` and size: what
/// made that core's need.
fn widest_virtual(kbins: &[Kbin], k: usize) -> Option<(&str, &str, u64, u64)> {
    fn virtuals(sg: &Kbin, shared: bool) -> impl Iterator<Item = (&str, &str, u64, u64)> {
        sg.vars().iter().filter_map(move |v| match v.of {
            VarOf::Virtual {
                size,
                backing_offset,
                backing,
            } if (backing == Backing::Shared) == shared => {
                Some((sg.name(), v.name.as_str(), backing_offset, size))
            }
            _ => None,
        })
    }
    let local = kbins.get(k).into_iter().flat_map(|sg| virtuals(sg, false));
    let shared = kbins
        .iter()
        .filter(|_| k == 0)
        .flat_map(|sg| virtuals(sg, true));
    local
        .chain(shared)
        .max_by_key(|&(_, _, offset, size)| offset.saturating_add(size))
}

/// Plans every subgraph of a load: `plans[k]` (an empty [`CorePlan::new`]
/// of `kbins[k]`) is filled in place. The plans own what they allocate or
/// reference as they go, so it is released if planning fails or panics
/// part-way.
pub fn plan(
    dev: &Arc<Device>,
    cores: &Arc<Cores>,
    kbins: &[Kbin],
    plans: &mut [&mut CorePlan],
) -> Result<(), StageError> {
    // Scratchpad layout (`tdrv_scratchpad_model_init`): the shared arena is
    // charged to the first core of the load, then each subgraph's LOCAL arena
    // is placed on its own core.
    let shared = kbins
        .iter()
        .map(|k| k.scratchpad().shared)
        .max()
        .unwrap_or(0);
    for (k, (kbin, plan)) in kbins.iter().zip(plans.iter_mut()).enumerate() {
        let running = if k == 0 { shared } else { 0 };
        let local = kbin
            .scratchpad()
            .local
            .max(kbin.scratchpad().sharded)
            .max(kbin.scratchpad().main);
        let mode = cores.lock(plan.pcore).scratchpad.mode();
        let (local_offset, total) = place_arena(running, local, mode).ok_or_else(|| {
            StageError::ScratchpadLayout(format!("arena of {} overflows", kbin.name()))
        })?;
        plan.local_offset = local_offset;
        if total > 0 {
            let need = || ScratchpadNeed {
                subgraph: kbin.name().to_string(),
                core: plan.pcore,
                bytes: total,
                page: mode.page,
                by: widest_virtual(kbins, k).map_or(String::new(), |(sg, var, offset, size)| {
                    format!(
                        ", the most for virtual variable {var} of {sg} (backing_variable_off {offset}, size {size})"
                    )
                }),
            };
            let claim = match ScratchClaim::take(cores, dev, plan.pcore, total) {
                Ok(claim) => claim,
                Err(ReserveError::Device(source)) => {
                    return Err(StageError::Scratchpad {
                        source,
                        need: need(),
                    })
                }
                Err(ReserveError::Pages { requested }) => {
                    return Err(StageError::ScratchpadPages {
                        requested,
                        max: MAX_PAGES,
                        need: need(),
                    });
                }
            };
            let held = u64::from(claim.pages()) * mode.page;
            if held < total {
                plan.warnings.push(format!(
                    "Could not grow contiguous scratchpad beyond {held} bytes ({} needs {total} on NC {})",
                    kbin.name(),
                    plan.pcore.0
                ));
            }
            plan.scratch = Some(claim);
        }
    }
    let planner = Planner { dev, cores };
    for (kbin, plan) in kbins.iter().zip(plans.iter_mut()) {
        for var in kbin.vars().iter() {
            let placement = planner.place(plan, kbin, var)?;
            plan.vars.push(placement);
        }
    }
    bind_remote(kbins, plans);
    for (kbin, plan) in kbins.iter().zip(plans.iter()) {
        fill_pointers(&planner, kbin, plan)?;
    }
    Ok(())
}

/// Every `file` variable's payload (exactly `size` bytes; the parse
/// rejected shorter payloads) with the allocation it fills and its name.
/// The core's build thread copies them, so the fan-out spreads the bulk of a
/// load's copying over the cores.
pub fn weight_copies<'a>(
    kbin: &'a Kbin,
    archive: &'a Archive,
    plan: &'a CorePlan,
) -> impl Iterator<Item = (MemHandle, &'a [u8], &'a str)> + 'a {
    plan.var_allocs.iter().filter_map(move |&(id, handle)| {
        let var = kbin.vars().get(id)?;
        let VarOf::File { size, weight } = &var.of else {
            return None;
        };
        let payload = weight.payload.bytes(archive);
        let n = payload
            .len()
            .min(usize::try_from(*size).unwrap_or(usize::MAX));
        Some((handle, &payload[..n], var.name.as_str()))
    })
}

/// Remote variables alias the placement of their target in another
/// subgraph of the same load (§6.7); no allocation.
fn bind_remote(kbins: &[Kbin], plans: &mut [&mut CorePlan]) {
    for (k, kbin) in kbins.iter().enumerate() {
        for &(local, b) in kbin.vars().remote_bindings() {
            // `kbin::build` bound every remote var against this same set of
            // kbins, to an existing var of another subgraph, and each plan
            // holds one placement per var of its kbin: the indices hold.
            plans[k].vars[local.0 as usize] = plans[b.rel_sg as usize].vars[b.var_id.0 as usize];
        }
    }
}

/// Writes pointer slots: the referenced variable's address when it is
/// staged, 0 for IO rows (filled per execution).
fn fill_pointers(planner: &Planner<'_>, kbin: &Kbin, plan: &CorePlan) -> Result<(), StageError> {
    let addr_of = |id: VarId| -> u64 {
        match plan.address(id, 0) {
            Ok(Target::Abs(pa)) => pa,
            _ => 0,
        }
    };
    for var in kbin.vars().iter() {
        let VarOf::Pointer {
            referenced,
            io_ref: false,
        } = var.of
        else {
            continue;
        };
        let row = addr_of(referenced);
        if row == 0 {
            continue; // freshly allocated device memory already reads as zero
        }
        let Some(&(_, handle)) = plan.var_allocs.iter().find(|(id, _)| *id == var.id) else {
            continue;
        };
        planner.write(kbin, handle, &row.to_le_bytes(), &var.name)?;
    }
    Ok(())
}
