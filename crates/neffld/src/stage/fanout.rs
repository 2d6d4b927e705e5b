//! Multi-core fan-out (stage.md §9).
//!
//! The plan runs on the caller's thread; then one scoped thread per
//! subgraph builds its core. If any build fails (or panics), every build
//! that succeeded is removed again by its guard and the error of the
//! lowest-index failure is returned: a load is all-or-nothing.
//!
//! Unlike the reference, a load whose builds copy little runs them one after
//! another on the caller's thread: starting a thread costs tens of
//! microseconds, more than a small build (see [`DEFAULT_FANOUT_MIN_BYTES`]).
//! Every variable's address comes from the plan, and every instruction
//! image's from [`core::place_images`], which run first either way; a
//! failure rolls back the same. Only the builds' own allocations (rings,
//! tables) differ: threaded builds of cores that share an HBM channel
//! interleave them, so their addresses vary from run to run, while one
//! after another they are the same every time.

use std::sync::Arc;

use crate::container::Archive;
use crate::device::Device;
use crate::ids::{HModel, PCore};
use crate::kbin::Kbin;
use crate::line::{Captured, CoreRole};
use crate::manifest::def::VarOf;
use crate::Arch;

use super::core::{self, CoreImage};
use super::plan::{self, CorePlan};
use super::{Cores, StageError};

/// Per-load staging parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StageOptions {
    /// Architecture of the device (decides barriers, ucode staging and the
    /// Event-Accel check).
    pub arch: Arch,
    /// The runtime line whose own code and allocations the load reproduces.
    pub line: Captured,
    /// Build the cores of a multi-subgraph load on one thread each when the
    /// builds copy at least this many bytes ([`bulk_bytes`]), else one after
    /// another on the caller's thread. 0 always fans out; `u64::MAX` never.
    pub fanout_min_bytes: u64,
    /// The global device id a collectives load was given (what a
    /// global-id load writes); 0 for a plain load.
    pub global_id: u32,
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
                .filter_map(|v| match v.of {
                    VarOf::File { size, .. } => Some(size),
                    _ => None,
                })
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
/// it passed. The images own everything staged for them: dropping them (on
/// any later failure, or at unload) unstages the load.
pub fn stage(
    dev: &Arc<Device>,
    cores: &Arc<Cores>,
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
    // Every plan is owned by its image before planning allocates.
    let mut images: Vec<CoreImage> = kbins
        .iter()
        .zip(pcores)
        .map(|(kbin, &pcore)| CoreImage::new(kbin.name(), CorePlan::new(dev, pcore, h_model, kbin)))
        .collect();
    let mut plans: Vec<&mut CorePlan> = images.iter_mut().map(|i| &mut i.plan).collect();
    plan::plan(dev, cores, kbins, &mut plans)?;
    core::place_images(kbins, archive, &mut images, opts.line)?;
    let threaded = nkbin > 1 && bulk_bytes(kbins) >= opts.fanout_min_bytes;
    tracing::debug!(
        "building {nkbin} cores {}",
        if threaded {
            "on one thread each"
        } else {
            "on the caller's thread"
        }
    );
    let build = |k: usize, kbin: &Kbin, mut image: CoreImage| {
        let role = CoreRole::of_subgraph(k);
        core::build(
            kbin,
            archive,
            &mut image,
            opts.arch,
            role,
            opts.line,
            opts.global_id,
        )?;
        image.enter_model_table(cores)?;
        Ok::<_, StageError>(image)
    };
    // Each result holds its image; a failed or panicked build has already
    // dropped its own, and dropping `built` drops the others.
    let built: Vec<Result<CoreImage, StageError>> = if !threaded {
        kbins
            .iter()
            .zip(images)
            .enumerate()
            .map(|(i, (k, img))| build(i, k, img))
            .collect()
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = kbins
                .iter()
                .zip(images)
                .enumerate()
                .map(|(i, (kbin, img))| (kbin.name(), s.spawn(move || build(i, kbin, img))))
                .collect();
            handles
                .into_iter()
                .map(|(name, h)| {
                    h.join().unwrap_or_else(|p| {
                        Err(StageError::Panicked {
                            subgraph: name.to_string(),
                            message: panic_message(&*p),
                        })
                    })
                })
                .collect()
        })
    };
    // The error of the lowest-index failure; every built core is unstaged
    // when `built` goes out of scope.
    built.into_iter().collect()
}

/// The text a panic was raised with (a `&str` or a `String` payload).
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}
