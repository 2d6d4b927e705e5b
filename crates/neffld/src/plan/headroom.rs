//! Headroom: what more fits on each logical core a deployment uses, where
//! the plan stopped — found by allocating on the allocator itself and
//! releasing again, never estimated from free bytes (fragmentation, the
//! small pool and alignment decide what fits, as on the device).
//!
//! - The largest further tensor: the largest size `nrt_tensor_allocate`
//!   accepts for the core, by bisection on 4 KiB granules (whether a size
//!   fits falls as the size grows: every pool is tried for every size).
//! - Further copies of each NEFF: one real load on the core (with the
//!   profiler buffers of its first load there, and its input and output
//!   tensors when the deployment allocates them), then the
//!   allocations that load made for itself, made again copy by copy until
//!   one is refused. A further copy makes exactly those requests: the shared
//!   scratchpad pages it uses exist by then, and nothing else of a load
//!   depends on what is already on the core. Counting stops at
//!   [`COPY_LIMIT`].
//!
//! Cores whose HBMs hold the same allocations at the same offsets (the
//! ranks of one NEFF over an instance) have the same headroom: the
//! allocator decides from that layout alone, so it is measured once per
//! layout.
//!
//! What counting costs is the allocations it makes: each copy makes again
//! every allocation of one load (20,000 for a NEFF of 20,000 small
//! variables). Beyond one load of each NEFF on each distinct core, the
//! whole headroom of a plan makes at most `NEFFLD_MAX_HEADROOM` allocations
//! ([`HEADROOM_ALLOCATIONS`] by default), each core and NEFF counting
//! within an equal part of what is left; a count stopped there is "at
//! least" what it found. Its time is so linear in the copies it reports,
//! and bounded whatever the NEFFs and however many distinct cores.

use std::collections::HashMap;
use std::path::PathBuf;

use std::sync::Arc;

use crate::device::tape::Taped;
use crate::device::{AllocSet, BatchReq, Device, Owner, GRANULE};
use crate::ids::PCore;
use crate::NrtStatus;

use super::deployment::Deployment;
use super::run::{allocate, largest_fitting, load_failure, Exec, STEP_ROOM};
use super::StepFailure;
use crate::fallible::HostOom;

/// Copies counted at most (a further copy beyond it is not tried).
pub(crate) const COPY_LIMIT: u32 = 256;

/// The allocations the copies one plan's headroom counts make at most,
/// every NEFF on every distinct core together (`NEFFLD_MAX_HEADROOM` sets
/// another): neffld's own ceiling on its work, seconds of counting
/// (docs/performance.md, "What a plan costs"). A plan of a few NEFFs of
/// real size counts every copy well within it.
pub const HEADROOM_ALLOCATIONS: u64 = 1 << 24;

/// What is left of the headroom's allocations, shared out between the
/// measurements still to make: each takes an equal part of what is left,
/// and what one leaves unused goes to those after it.
struct Work {
    left: u64,
    measurements: u64,
}

impl Work {
    /// The part of the next measurement.
    fn share(&self) -> u64 {
        self.left / self.measurements.max(1)
    }

    fn spend(&mut self, allocations: u64) {
        self.left = self.left.saturating_sub(allocations);
    }

    fn done(&mut self) {
        self.measurements = self.measurements.saturating_sub(1);
    }
}

/// How many more copies of one NEFF fit on a core.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Copies {
    /// Copies that fit.
    pub count: u32,
    /// Counting stopped before a copy was refused, at [`COPY_LIMIT`]
    /// copies or at its part of `NEFFLD_MAX_HEADROOM`: at least `count` fit.
    pub at_least: bool,
    /// The NEFF cannot load on the core however much memory is free (its
    /// logical-core size, its chip, one of neffld's own ceilings): the
    /// first copy's refusal. `count` is then 0.
    pub refused: Option<StepFailure>,
}

/// What more fits on one logical core.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Headroom {
    /// The visible logical core, its device and physical cores.
    pub vnc: u32,
    /// The device (`ND n`) it is on.
    pub device: u32,
    /// Its physical cores.
    pub pcores: Vec<u32>,
    /// The HBM a tensor of the core goes to, and the bytes it has free.
    pub hbm: u32,
    /// Bytes free on that HBM.
    pub hbm_free: u64,
    /// The largest further tensor `nrt_tensor_allocate` accepts here.
    pub largest_tensor: u64,
    /// Per NEFF file of the deployment.
    pub copies: Vec<(PathBuf, Copies)>,
    /// The other logical cores of this list on the same HBM: the free bytes,
    /// the largest tensor and the copies are of that one HBM, shared — not
    /// each core's own (a tensor of `largest_tensor` fits on one of them,
    /// not on each).
    pub shared_with: Vec<u32>,
    /// The HBM's pools where the plan stopped.
    pub pools: Vec<crate::device::PoolFree>,
}

impl Headroom {
    /// Why the largest tensor is under the HBM's free bytes: the free
    /// bytes are split between the pools and between ranges (`None` when
    /// they are not, or the difference is under a granule's worth).
    pub fn explain(&self) -> Option<String> {
        (self.largest_tensor < self.hbm_free && !self.pools.is_empty())
            .then(|| super::gap_sentence(&self.pools, None))
    }
}

/// The headroom of every logical core the deployment's steps name, in
/// core order.
pub(crate) fn measure(exec: &mut Exec<'_>, d: &Deployment) -> Result<Vec<Headroom>, HostOom> {
    let mut vncs: Vec<u32> = exec.steps.iter().filter_map(|s| s.vnc).collect();
    vncs.sort_unstable();
    vncs.dedup();
    let alone = vncs.len() == 1;
    // Every distinct NEFF the deployment loads, once however many paths
    // name it.
    let files: Vec<usize> = (0..exec.session.files.len()).collect();
    let mut measured: HashMap<Layout, (u64, Vec<(PathBuf, Copies)>)> = HashMap::new();
    let mut work = Work {
        left: exec.session.config.loader.max_headroom,
        measurements: (vncs.len() * files.len()) as u64,
    };
    let mut rows: Vec<Headroom> = Vec::new();
    for vnc in vncs {
        let Ok((device, pcores)) = exec.placement(vnc) else {
            continue;
        };
        let Ok((_, dev, first)) = exec.rt.placement_of_vnc(vnc) else {
            continue;
        };
        let dev = dev.clone();
        let Ok(hbm) = dev.geometry().hbm_of(first) else {
            continue;
        };
        let hbm_free = dev.free_bytes(hbm);
        let pools = dev.pools(hbm);
        // A lone core has no twin to share its measurement with.
        let layout = (!alone).then(|| layout(&dev, hbm, first));
        let (largest_tensor, copies) = match layout.as_ref().and_then(|l| measured.get(l)) {
            Some(m) => m.clone(),
            None => {
                let largest = largest_tensor(exec, vnc, dev.capacity(hbm));
                let mut copies: Vec<(PathBuf, Copies)> = Vec::with_capacity(files.len());
                for &i in &files {
                    let c = self::copies(exec, vnc, i, d.io_tensors, &mut work)?;
                    copies.push((exec.session.files[i].path.clone(), c));
                }
                if let Some(layout) = layout {
                    measured.insert(layout, (largest, copies.clone()));
                }
                (largest, copies)
            }
        };
        rows.push(Headroom {
            vnc,
            device,
            pcores,
            hbm,
            hbm_free,
            largest_tensor,
            copies,
            shared_with: Vec::new(),
            pools,
        });
    }
    let hbms: Vec<(u32, u32, u32)> = rows.iter().map(|h| (h.vnc, h.device, h.hbm)).collect();
    for h in &mut rows {
        h.shared_with = hbms
            .iter()
            .filter(|&&(v, nd, hbm)| v != h.vnc && nd == h.device && hbm == h.hbm)
            .map(|&(v, _, _)| v)
            .collect();
    }
    Ok(rows)
}

/// What the allocator decides a core's headroom from: where the core sits
/// among the cores of its HBM, and every allocation on that HBM (offset
/// from the HBM's base, bytes, core relative to the HBM's first).
type Layout = (u32, Vec<(u64, u64, u32)>);

fn layout(dev: &Device, hbm: u32, first: PCore) -> Layout {
    let g = dev.geometry();
    let base = g.channel_base(hbm).map_or(0, |p| p.0);
    let first_of_hbm = hbm * g.cores_per_hbm();
    let mut blocks: Vec<(u64, u64, u32)> = dev
        .channel_blocks(hbm)
        .into_iter()
        .map(|(pa, charged, core)| (pa.0 - base, charged, core.0 - first_of_hbm))
        .collect();
    blocks.sort_unstable();
    (first.0 - first_of_hbm, blocks)
}

/// The largest tensor the core accepts now, at most `capacity` bytes.
fn largest_tensor(exec: &Exec<'_>, vnc: u32, capacity: u64) -> u64 {
    largest_fitting(capacity / GRANULE, |granules| {
        allocate(&exec.rt, "headroom", granules * GRANULE, vnc, None).is_ok()
    })
}

/// Further copies of file `i` that fit on `vnc` now: one load, then its
/// allocations again copy by copy within this measurement's part of
/// `work`.
fn copies(
    exec: &mut Exec<'_>,
    vnc: u32,
    i: usize,
    io_tensors: bool,
    work: &mut Work,
) -> Result<Copies, HostOom> {
    let share = work.share();
    work.done();
    let none = Copies {
        count: 0,
        at_least: false,
        refused: None,
    };
    let Ok((nd, pcores)) = exec.placement(vnc) else {
        return Ok(none);
    };
    let watch = exec.watches[nd as usize].clone();
    let Some(dev) = exec.rt.devices().nth(nd as usize).cloned() else {
        return Ok(none);
    };
    crate::fallible::room(STEP_ROOM, "a further copy the headroom counts")?;
    watch.record();
    let model = match exec.rt.load_fingerprinted(&exec.prints[i], None, Some(vnc)) {
        Ok(model) => model,
        Err(e) => {
            work.spend(watch.recorded().len() as u64);
            let f = load_failure(e);
            return Ok(Copies {
                refused: (f.status != NrtStatus::Resource).then_some(f),
                ..none
            });
        }
    };
    // The first load on the core's physical cores also adds their profiler
    // buffers: the runtime's, so no further copy makes them again.
    let buffers = exec.first_load_buffers(nd, &pcores);
    let mut io = Vec::new();
    let mut first_fits = buffers.is_ok();
    if io_tensors && first_fits {
        for t in exec.rt.tensor_info(&model).unwrap_or_default().iter() {
            match allocate(&exec.rt, &t.name, t.size, vnc, None) {
                Ok(x) => io.push(x),
                Err(_) => {
                    first_fits = false;
                    break;
                }
            }
        }
    }
    // The load's own requests (its tensors' too), in their order, each run
    // of one owner a batch; the shared scratchpad pages it may have added
    // are the runtime's and serve every later copy.
    let mut runs: Vec<(Owner, Vec<BatchReq>)> = Vec::new();
    let recorded = watch.recorded();
    let mut spent = recorded.len() as u64;
    work.spend(spent);
    for Taped { owner, req } in recorded {
        match runs.last_mut() {
            _ if owner == Owner::Runtime => {}
            Some((o, reqs)) if *o == owner => reqs.push(req),
            _ => runs.push((owner, vec![req])),
        }
    }
    let runs: Vec<(Owner, Arc<[BatchReq]>)> =
        runs.into_iter().map(|(o, r)| (o, r.into())).collect();
    let per_copy: u64 = runs.iter().map(|(_, r)| r.len() as u64).sum();
    let mut count = u32::from(first_fits);
    let mut cut = false;
    let mut held = Vec::new();
    'copies: while first_fits && count < COPY_LIMIT {
        if spent + per_copy > share {
            cut = true;
            break;
        }
        spent += per_copy;
        work.spend(per_copy);
        crate::fallible::room(STEP_ROOM, "a further copy the headroom counts")?;
        let mut set = AllocSet::new(&dev);
        for (owner, reqs) in &runs {
            if set.alloc_batch(*owner, reqs).is_err() {
                break 'copies;
            }
        }
        held.push(set);
        count += 1;
    }
    drop(held);
    drop(io);
    drop(buffers);
    let _ = exec.rt.unload(&model);
    Ok(Copies {
        count,
        at_least: cut || count >= COPY_LIMIT,
        refused: None,
    })
}
