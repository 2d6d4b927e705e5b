//! Solving for a size or a count instead of checking one: the question a
//! plan that fits leads to next.
//!
//! - A tensor ([`Solve::Tensor`]): the largest size `S` (a multiple of the
//!   allocator's 4 KiB granule) such that a tensor of `S` bytes fits on
//!   every listed logical core at once, beside the whole deployment —
//!   found by allocating on the state the deployment reached and releasing
//!   again (bisection: `S` fits on every core, `S` + 4 KiB does not). The
//!   answer is exactly what planning the deployment again with
//!   `--tensor NAME=S@CORES` appended finds: the allocator's state after
//!   the deployment is the same, and a tensor of `S` is the same request.
//! - Ranks of a NEFF ([`Solve::Ranks`]): how many further loads of FILE go
//!   through after the deployment, one per listed core in order (or each on
//!   the next free logical core), stopping at the first refused, whose
//!   refusal the answer keeps — found by planning the deployment again
//!   with those loads appended.

use crate::device::GRANULE;

use super::deployment::{Deployment, Solve, Step};
use super::run::{allocate, largest_fitting, Exec};
use super::StepFailure;

/// The answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SolveAnswer {
    /// The largest tensor, in bytes (0: not one granule fits on every
    /// listed core).
    Bytes(u64),
    /// Further loads that go through, of `tried` asked (one per listed
    /// core, or one per logical core of the instance for "the next free
    /// core"; counting stops at the first refused).
    Ranks {
        /// Loads that went through.
        count: u32,
        /// Loads asked.
        tried: u32,
        /// Why the next load did not go through (`None`: every load tried
        /// did): out of device memory, or, for "the next free core", no
        /// logical core left without a load.
        stopped: Option<StepFailure>,
    },
}

/// A question with its answer, or why there is none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Solved {
    /// The question.
    pub solve: Solve,
    /// Its answer, or why the planner could not answer it.
    pub answer: Result<SolveAnswer, String>,
}

/// The largest tensor that fits on every core of `cores` at once on the
/// state `exec` reached, released again before returning.
pub(crate) fn largest_everywhere(exec: &Exec<'_>, name: &str, cores: &[u32]) -> u64 {
    let fits = |granules: u64| {
        let mut held = Vec::with_capacity(cores.len());
        for &vnc in cores {
            match allocate(&exec.rt, name, granules * GRANULE, vnc, None) {
                Ok(t) => held.push(t),
                Err(_) => return false,
            }
        }
        true
    };
    // Bounded by the largest HBM a listed core uses.
    let hi_bytes = cores
        .iter()
        .filter_map(|&v| {
            let (_, dev, first) = exec.rt.placement_of_vnc(v).ok()?;
            let hbm = dev.geometry().hbm_of(first).ok()?;
            Some(dev.capacity(hbm))
        })
        .max()
        .unwrap_or(0);
    if cores.is_empty() {
        return 0;
    }
    largest_fitting(hi_bytes / GRANULE, fits)
}

/// The deployment with the loads a ranks question tries appended, and how
/// many there are.
pub(crate) fn with_ranks(
    d: &Deployment,
    file: &std::path::Path,
    cores: Option<&[u32]>,
    logical_cores: u32,
) -> (Deployment, u32) {
    let extra: Vec<Step> = match cores {
        Some(cs) => cs
            .iter()
            .map(|&v| Step::Load {
                file: file.to_path_buf(),
                vnc: Some(v),
            })
            .collect(),
        None => (0..logical_cores)
            .map(|_| Step::Load {
                file: file.to_path_buf(),
                vnc: None,
            })
            .collect(),
    };
    let tried = extra.len() as u32;
    let mut changed = d.clone();
    changed.solve = None;
    changed.steps.extend(extra);
    (changed, tried)
}
