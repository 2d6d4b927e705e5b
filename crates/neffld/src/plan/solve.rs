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
//! - Copies of a NEFF ([`Solve::Ranks`]): how many loads of FILE fit on
//!   the listed logical cores (each listed once, whatever the list
//!   repeats), or on every visible logical core without `@`, beside the
//!   whole deployment — found by loading copies on the state the deployment
//!   reached, one on each core in turn, a core leaving the turn at its
//!   first refusal, until none takes another. A deployment with no step is
//!   the empty instance: the question is then what fits on it alone.
//!   Counting is neffld's own work, so it is bounded as a plan's is: the
//!   copies by what is left of the step ceiling (`NEFFLD_MAX_STEPS`), the
//!   allocations they make by the headroom's (`NEFFLD_MAX_HEADROOM`); a
//!   count stopped there is "at least" what it found.

use crate::device::GRANULE;

use super::deployment::Solve;
use super::run::{allocate, largest_fitting, Exec, ROOM_EVERY, STEP_ROOM};
use super::StepFailure;

/// The answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SolveAnswer {
    /// The largest tensor, in bytes (0: not one granule fits on every
    /// listed core).
    Bytes(u64),
    /// Copies that fit: each listed core's count, and why the last core
    /// to stop took no more.
    Ranks {
        /// Copies loaded, every core together.
        count: u32,
        /// Each core counted (in the order listed, once each) and the
        /// copies it took.
        per_core: Vec<(u32, u32)>,
        /// Why the last core to leave the turn took no further copy
        /// (`None` when a ceiling stopped the count first).
        stopped: Option<StepFailure>,
        /// The ceiling that stopped the count, as the variable that raises
        /// it with its value (`None`: every core refused a copy): the
        /// answer is then "at least" `count`.
        ceiling: Option<String>,
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

/// Copies of NEFF file `file` (at `path`) loaded on `cores` in turn on the
/// state `exec` reached, until every core has refused one or a ceiling is
/// reached: the step ceiling `max_steps`, of which the deployment used
/// `used`, or `max_allocations` allocations. They stay loaded: the caller
/// drops the run.
pub(crate) fn copies(
    exec: &mut Exec<'_>,
    file: usize,
    path: &std::path::Path,
    cores: &[u32],
    io_tensors: bool,
    (max_steps, used): (usize, usize),
    max_allocations: u64,
) -> Result<SolveAnswer, crate::fallible::HostOom> {
    let mut per_core: Vec<(u32, u32)> = Vec::new();
    for &v in cores {
        if !per_core.iter().any(|&(c, _)| c == v) {
            per_core.push((v, 0));
        }
    }
    let max_copies = max_steps.saturating_sub(used);
    let live = |exec: &Exec<'_>| -> u64 { exec.rt.devices().map(|d| d.live_count() as u64).sum() };
    let first = live(exec);
    let mut turn: Vec<usize> = (0..per_core.len()).collect();
    let (mut count, mut stopped, mut ceiling) = (0u32, None, None);
    while !turn.is_empty() && ceiling.is_none() {
        let mut next = Vec::with_capacity(turn.len());
        for &at in &turn {
            if count as usize >= max_copies {
                ceiling = Some(format!(
                    "NEFFLD_MAX_STEPS={max_steps} (the deployment's {used} steps and {count} copies)"
                ));
            } else if live(exec).saturating_sub(first) >= max_allocations {
                ceiling = Some(format!("NEFFLD_MAX_HEADROOM={max_allocations} allocations"));
            }
            if ceiling.is_some() {
                break;
            }
            if (count as usize).is_multiple_of(ROOM_EVERY) {
                crate::fallible::room(STEP_ROOM, "further copies of a solve")?;
            }
            let loads = exec.loads.len();
            match exec
                .load_step(file, path, Some(per_core[at].0), io_tensors)
                .1
            {
                Ok(()) => {
                    count += 1;
                    per_core[at].1 += 1;
                    next.push(at);
                }
                Err(f) => {
                    // A copy whose input and output tensors were refused
                    // does not count: its load goes too.
                    if exec.loads.len() > loads {
                        if let Some(l) = exec.loads.pop() {
                            let _ = exec.rt.unload(&l.model);
                        }
                    }
                    stopped = Some(f);
                }
            }
        }
        turn = next;
    }
    Ok(SolveAnswer::Ranks {
        count,
        per_core,
        stopped,
        ceiling,
    })
}
