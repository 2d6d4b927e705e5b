//! Multi-core fan-out (stage.md §9) and its inverse.
//!
//! The plan runs on the caller's thread; then one scoped thread per
//! subgraph builds its core. If any build fails, every build that succeeded
//! is removed again and the error of the lowest-index failure is returned:
//! a load is all-or-nothing.
//!
//! Unlike the reference, a load whose builds copy little runs them one after
//! another on the caller's thread: starting a thread costs tens of
//! microseconds, more than a small build (see [`DEFAULT_FANOUT_MIN_BYTES`]).
//! Every variable's address comes from the plan, which runs first either
//! way, and a failure rolls back the same. Only the builds' own allocations
//! (rings, images, tables) differ: threaded builds of cores that share an
//! HBM channel interleave them, so their addresses vary from run to run,
//! while one after another they are the same every time.

use crate::container::Archive;
use crate::device::Device;
use crate::ids::{HModel, PCore};
use crate::kbin::Kbin;
use crate::manifest::def::VarKind;
use crate::Arch;

use super::core::{self, CoreImage};
use super::plan::{self, PlanParams};
use super::{Cores, StageError};

/// Per-load staging parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StageOptions {
    /// Architecture of the device (decides barriers, ucode staging and the
    /// Event-Accel check).
    pub arch: Arch,
    /// Scratchpad page size in bytes.
    pub scratchpad_page: u64,
    /// Build the cores of a multi-subgraph load on one thread each when the
    /// builds copy at least this many bytes ([`bulk_bytes`]), else one after
    /// another on the caller's thread. 0 always fans out; `u64::MAX` never.
    pub fanout_min_bytes: u64,
}

/// The default of [`StageOptions::fanout_min_bytes`]. Measured on a 2-core
/// host where a build thread takes about 60 µs to start: 8 subgraphs of
/// 1 MiB of weights each staged 1.1–1.4× faster on one thread, 8 of 2 MiB
/// 1.1–1.2× faster on eight; matmul_large (4 MB in two subgraphs) was no
/// faster fanned out, and matmul_small (189 KB) 4–7× slower.
pub const DEFAULT_FANOUT_MIN_BYTES: u64 = 16 << 20;

/// Bytes the per-core builds of `kbins` copy in bulk: weights and
/// instruction streams (rings and tables are small beside them).
pub fn bulk_bytes(kbins: &[Kbin]) -> u64 {
    kbins
        .iter()
        .map(|k| {
            let weights: u64 = k
                .vars()
                .iter()
                .filter(|v| v.kind == VarKind::File)
                .filter_map(|v| v.size)
                .sum();
            let streams: u64 = k.engines().iter().map(|e| e.ninstr() * 64).sum();
            weights.saturating_add(streams)
        })
        .fold(0, u64::saturating_add)
}

/// Stages kbin `k` on `pcores[k]` (the physical cores of the claimed logical
/// core), all under `h_model`. The subgraph count was held to the logical
/// core by the parse (one subgraph, or one per physical core); what is
/// checked here is only that the caller passed cores enough for the kbins
/// it passed.
pub fn stage(
    dev: &dyn Device,
    cores: &Cores,
    kbins: &[Kbin],
    archive: &Archive,
    pcores: &[PCore],
    h_model: HModel,
    opts: StageOptions,
) -> Result<Vec<CoreImage>, StageError> {
    let (nkbin, core_size) = (kbins.len(), pcores.len());
    if core_size < nkbin {
        return Err(StageError::InsufficientCores {
            required: nkbin,
            available: core_size,
        });
    }
    let plans = plan::plan(
        dev,
        cores,
        kbins,
        &pcores[..nkbin],
        PlanParams {
            page: opts.scratchpad_page,
        },
    )?;
    if nkbin == 1 {
        let plan = plans.into_iter().next().expect("one plan per kbin");
        return Ok(vec![core::build(
            dev, cores, &kbins[0], archive, plan, h_model, opts.arch,
        )?]);
    }
    let threaded = bulk_bytes(kbins) >= opts.fanout_min_bytes;
    tracing::debug!(
        "building {nkbin} cores {}",
        if threaded {
            "on one thread each"
        } else {
            "on the caller's thread"
        }
    );
    let results: Vec<Result<CoreImage, StageError>> = if !threaded {
        kbins
            .iter()
            .zip(plans)
            .map(|(kbin, plan)| core::build(dev, cores, kbin, archive, plan, h_model, opts.arch))
            .collect()
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = kbins
                .iter()
                .zip(plans)
                .map(|(kbin, plan)| {
                    let name = kbin.name().to_string();
                    (
                        name,
                        s.spawn(move || {
                            core::build(dev, cores, kbin, archive, plan, h_model, opts.arch)
                        }),
                    )
                })
                .collect();
            handles
                .into_iter()
                .map(|(name, h)| h.join().unwrap_or(Err(StageError::Panicked(name))))
                .collect()
        })
    };
    if results.iter().all(Result::is_ok) {
        return Ok(results.into_iter().map(|r| r.expect("checked")).collect());
    }
    let mut first_err = None;
    for r in results {
        match r {
            Ok(img) => unstage(dev, cores, img),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    Err(first_err.expect("one build failed"))
}

/// Removes a staged subgraph from its core (`kbl_model_remove` +
/// `model_free`): the model-table entry, every allocation, the scratchpad
/// references.
pub fn unstage(dev: &dyn Device, cores: &Cores, img: CoreImage) {
    cores.lock(img.pcore()).models.remove(&img.h_model);
    for &h in img.allocs.iter().rev() {
        if let Err(e) = dev.free(h) {
            tracing::warn!("freeing {h} of {}: {e}", img.subgraph);
        }
    }
    plan::release(dev, cores, &img.plan);
}
