//! Will it fit? A deployment — NEFFs loaded on logical cores, ranks of
//! one NEFF, tensors beside them, unloads — planned step by step on one
//! simulated instance, as the runtime would run it.
//!
//! The plan runs the real loader on accounting-only devices (one
//! [`NullDevice`](crate::device::NullDevice) per chip: the allocator and the
//! ledger, no bytes), so host memory follows what is planned, not the
//! simulated HBM; every distinct NEFF is read and parsed once (the parse
//! cache retains it, matched by a fingerprint taken once). It stops at the
//! first step the runtime refuses and reports it as the runtime would
//! ([`MemoryReport::refusal_log`]), then measures, on the state it reached:
//!
//! - per logical core, the headroom ([`headroom`]): the largest further
//!   tensor that fits and how many more copies of each NEFF fit, found by
//!   allocating, never estimated;
//! - advice ([`advice`]): settings a runtime engineer would try, each
//!   judged by planning the deployment again with it.

pub mod advice;
pub mod deployment;
mod execute;
pub mod headroom;
pub mod monitor;
mod overrides;
pub mod report;
mod run;
pub mod solve;
mod spread;
pub mod sysfs;
pub mod world;

use std::collections::BTreeMap;
use std::path::PathBuf;

use thiserror::Error;

use crate::api::LoadError;
use crate::config::ConfigError;
use crate::ids::HModel;
use crate::instance::Instance;
use crate::line::RuntimeLine;
use crate::report::memory::{LogLine, MemoryReport, Refusal};
use crate::{Arch, NrtStatus};

/// The driver's memory counters of a physical core.
pub use crate::device::{CoreCounters, DeviceMem, MemCounter};
/// The pools of an HBM as a refusal or the headroom found them.
pub use crate::device::{Pool, PoolFree};
pub use advice::{Advice, AdviceKind};
pub use deployment::Solve;
pub use deployment::{
    parse_cores, parse_env, parse_free, parse_load, parse_size, parse_solve, parse_tensor,
    parse_toml, parse_toml_within, parse_unload, read_deployment, step_ceiling, Deployment,
    DeploymentError, Step, StepBudget,
};
pub use headroom::{Copies, Headroom};
pub use overrides::{deployment_file, Overrides};
pub use report::PlanReport;
pub use solve::{SolveAnswer, Solved};
pub use world::{Disagreement, DisagreementKind, RankPlan, WorldPlan};

/// Why a deployment could not be planned at all — as opposed to a step the
/// runtime refuses, which is the plan's answer ([`Plan::refusal`]).
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum PlanError {
    /// The deployment is not one the planner can run as written.
    #[error(transparent)]
    Deployment(#[from] DeploymentError),
    /// A file of the deployment could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why not.
        source: std::io::Error,
    },
    /// A runtime variable of the deployment or the environment is refused.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The runtime could not start on the instance.
    #[error("the runtime could not start: {0}")]
    Start(LoadError),
    /// The host ran out of memory for the plan itself, between two of its
    /// steps ([`crate::fallible::room`]).
    #[error("{oom} after {done} of {steps} steps: the plan needs more host memory than this host gives it (docs/performance.md says what a step costs)")]
    HostMemory {
        /// What could not be had.
        oom: crate::fallible::HostOom,
        /// Steps run by then (all of them: the headroom's counting).
        done: usize,
        /// Steps of the deployment.
        steps: usize,
    },
}

impl PlanError {
    /// The `NRT_STATUS` a C caller would see for the same mistake.
    pub fn status(&self) -> NrtStatus {
        match self {
            PlanError::Deployment(_) | PlanError::Config(_) => NrtStatus::Invalid,
            PlanError::Io { .. } => NrtStatus::Failure,
            PlanError::Start(e) => e.status(),
            PlanError::HostMemory { oom, .. } => oom.status(),
        }
    }
}

/// A step that did not go through: the layer that refused it and the
/// runtime's message and status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepFailure {
    /// The part of the load that refused (`container`, `parse`, `stage`, …).
    pub stage: &'static str,
    /// The status the runtime would return.
    pub status: NrtStatus,
    /// The runtime's message.
    pub message: String,
    /// Not the runtime's refusal but one of neffld's own ceilings (the
    /// inflated payload, the archive's member count): the setting that
    /// raises it (`--max-inflated` / `NEFFLD_MAX_INFLATED`, ...).
    pub own_limit: Option<&'static str>,
    /// The NEFF's own bytes are damaged (cut short, a digest, gzip stream
    /// or tar that does not check): no change to the deployment loads it.
    pub damaged: bool,
}

/// One step as it ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepReport {
    /// The step, as the deployment wrote it (one core of it).
    pub step: Step,
    /// The visible logical core it ran on (a load on "the next free core"
    /// gets the one the runtime chose; `None` if it found none).
    pub vnc: Option<u32>,
    /// The device (`ND n`) and the physical cores of that logical core.
    pub device: Option<u32>,
    /// The physical cores of that logical core.
    pub pcores: Vec<u32>,
    /// Whether it went through.
    pub outcome: Result<(), StepFailure>,
    /// Bytes the allocators of the whole instance hold after the step.
    pub held_after: u64,
    /// Bytes the allocator holds on the fullest HBM after the step.
    pub fullest_hbm_after: u64,
    /// Bytes free on the HBM of the step's (first) physical core after it.
    pub hbm_free_after: Option<u64>,
}

/// The first refusal for want of device memory, as the runtime reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanRefusal {
    /// Index of the step in [`Plan::steps`].
    pub step: usize,
    /// The device (`ND n`) the refusal was on.
    pub device: u32,
    /// The refused request.
    pub request: Refusal,
    /// It had to end exactly where the contiguous scratchpad region begins
    /// (the region grows only in place), not anywhere it fitted.
    pub in_place: bool,
    /// What was being allocated (a variable, "scratchpad", a tensor name).
    pub what: String,
    /// The device's memory as the refusal found it.
    pub memory: MemoryReport,
    /// The runtime's lines ([`MemoryReport::refusal_log`]).
    pub log: Vec<LogLine>,
    /// The pools of the refused request's HBM as the refusal found them.
    pub pools: Vec<PoolFree>,
}

impl PlanRefusal {
    /// Why a request was refused with at least as many bytes free on its
    /// HBM as it asked (the runtime's line then reads as a contradiction):
    /// the free bytes are split between the pools and between ranges, and
    /// one request takes one range. `None` when fewer bytes were free.
    pub fn explain(&self) -> Option<String> {
        let (reason, pools) = self.why()?;
        Some(match pools {
            Some(p) => format!("{reason}: {p}"),
            None => reason,
        })
    }

    /// [`PlanRefusal::explain`] without the pools' figures: the clause a
    /// report's headline carries, so that the free bytes the runtime's
    /// message names never head a refusal without its reason.
    pub fn reason(&self) -> Option<String> {
        self.why().map(|(reason, _)| reason)
    }

    /// The reason, and the pools' figures behind it when they are not in it.
    fn why(&self) -> Option<(String, Option<String>)> {
        use crate::report::memory::human_size;
        let free: u64 = self.pools.iter().map(|p| p.free).sum();
        let asked = crate::device::alloc::charged_size(self.request.size)?;
        if free < asked {
            return None;
        }
        let longest = self.pools.iter().map(|p| p.longest).max().unwrap_or(0);
        if self.in_place {
            return Some((format!(
                "{} free on the HBM in all, the largest block {}, but a page of the contiguous scratchpad must end where the region begins (it grows only in place, down from its lowest page), and the {} below the region are taken",
                human_size(free),
                human_size(longest),
                human_size(asked)
            ), None));
        }
        if asked <= longest && self.request.align > crate::device::GRANULE {
            // Size is not why: only an aligned start is.
            return Some((format!(
                "{} free on the HBM, and a block of {} is larger than the request of {}, but no free block holds it at an address aligned to {}",
                human_size(free),
                human_size(longest),
                human_size(asked),
                human_size(self.request.align)
            ), None));
        }
        let (reason, pools) = gap(&self.pools, Some(asked));
        Some((reason, Some(pools)))
    }
}

/// The sentence that explains free bytes no single request can take.
pub(crate) fn gap_sentence(pools: &[PoolFree], asked: Option<u64>) -> String {
    let (reason, pools) = gap(pools, asked);
    format!("{reason}: {pools}")
}

/// Free bytes no single request can take: the reason (the free bytes in
/// all, and the largest block one request may take), and each pool's
/// figures.
fn gap(pools: &[PoolFree], asked: Option<u64>) -> (String, String) {
    use crate::report::memory::human_size;
    let free: u64 = pools.iter().map(|p| p.free).sum();
    let longest = pools.iter().map(|p| p.longest).max().unwrap_or(0);
    let parts: Vec<String> = pools
        .iter()
        .map(|p| match p.pool {
            crate::device::Pool::Main => format!(
                "the main pool has {} free, its largest contiguous block {}",
                human_size(p.free),
                human_size(p.longest)
            ),
            crate::device::Pool::Small => format!(
                "the driver's small pool (the top {} of the HBM, kept for requests of at most 512 KiB, which larger ones reach only when the main pool is full) has {} free, its largest block {}",
                human_size(p.capacity),
                human_size(p.free),
                human_size(p.longest)
            ),
        })
        .collect();
    // Two sizes that print alike (they differ by less than the last digit)
    // are given in bytes too, or the sentence reads as a contradiction.
    let (mut asked_text, mut longest_text) = (asked.map(human_size), human_size(longest));
    if let Some(a) = asked.filter(|_| asked_text.as_ref() == Some(&longest_text)) {
        asked_text = Some(format!("{} ({a} bytes)", human_size(a)));
        longest_text = format!("{longest_text} ({longest} bytes)");
    }
    let needs = match asked_text {
        Some(a) => format!("the request of {a} needs"),
        None => "a tensor needs".into(),
    };
    (
        format!(
            "{} free on the HBM in all, but {needs} one contiguous block and the largest is {longest_text}",
            human_size(free)
        ),
        parts.join("; "),
    )
}

/// A NEFF loaded on the instance: its id in the usage tables, its name (as
/// the runtime prints it) and the file it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NeffRecord {
    /// Its id in the usage tables (`H_MODEL`).
    pub id: HModel,
    /// Its name, as the runtime prints it.
    pub name: String,
    /// The NEFF's UUID, from its header.
    pub uuid: [u8; 16],
    /// The file it was loaded from.
    pub file: PathBuf,
    /// The device (`ND n`) it is on.
    pub device: u32,
    /// The visible logical core it claims.
    pub vnc: u32,
    /// The physical cores of that logical core.
    pub pcores: Vec<u32>,
    /// The physical core of each of its subgraphs, in subgraph order.
    pub subgraphs: Vec<u32>,
    /// Its rank, when it is a rank of a world (`nrt_load_collectives`).
    pub rank: Option<u32>,
    /// What its memory rows leave out: the device memory of its
    /// collectives, which no public fact sizes ("collectives memory not
    /// counted: 6 collectives in 2 replica groups"); `None` for a NEFF
    /// without collectives.
    pub collectives_not_counted: Option<String>,
}

/// A device tensor the deployment holds: a named tensor, or one of a load's
/// inputs and outputs (`io_of` the load's id).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorRecord {
    /// The tensor's name (a load's own are named after the load's tensor).
    pub name: String,
    /// Bytes.
    pub size: u64,
    /// The visible logical core it is allocated for.
    pub vnc: u32,
    /// The device (`ND n`) it is on.
    pub device: u32,
    /// The physical core it is charged to.
    pub pcore: u32,
    /// That core's HBM channel.
    pub hbm: u32,
    /// The load whose input or output it is, if it is one.
    pub io_of: Option<HModel>,
}

/// What planning a deployment found.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The instance planned on (`None`: one chip of the first NEFF's own architecture).
    pub instance: Option<&'static Instance>,
    /// The chip.
    pub arch: Arch,
    /// Chips (devices) of the instance.
    pub chips: u32,
    /// The logical-core size.
    pub lnc: u32,
    /// Logical cores of the whole instance at that size.
    pub logical_cores: u32,
    /// The ones the process sees, when a variable restricts them
    /// (`NEURON_RT_VISIBLE_CORES`, `NEURON_RT_NUM_CORES`): the plan numbers
    /// these from 0, and the runtime starts their physical cores only.
    pub visible: Option<crate::config::CoreList>,
    /// The runtime line planned under.
    pub line: RuntimeLine,
    /// Shared scratchpad page size in bytes: the step of the contiguous
    /// region (64 MiB) when `contiguous_scratchpad`.
    pub scratchpad_page: u64,
    /// Each core's shared scratchpad is one contiguous region (2.33 on, by
    /// default), where `NEURON_SCRATCHPAD_PAGE_SIZE` does not apply.
    pub contiguous_scratchpad: bool,
    /// A page size `NEURON_SCRATCHPAD_PAGE_SIZE` asked for that the
    /// contiguous region does not use (`None`: none asked, or pages used).
    pub unused_page_size: Option<u64>,
    /// What the runtime takes when it starts beyond its carried captured
    /// rows, and why (2.35's reservation for DMA profiling), a sentence
    /// each ([`crate::config::RuntimeConfig::start_notes`]).
    pub notes: Vec<String>,
    /// Each load's inputs and outputs were allocated on its core.
    pub io_tensors: bool,
    /// Steps of the deployment (each load, tensor, unload, free on one core).
    pub planned: usize,
    /// Steps run, in order; a refused one is the last.
    pub steps: Vec<StepReport>,
    /// The first allocation refused for want of memory, if that is what
    /// stopped the plan.
    pub refusal: Option<PlanRefusal>,
    /// Each device's memory where the plan stopped (a refused step
    /// rolled back), `ND 0` first.
    pub devices: Vec<MemoryReport>,
    /// The driver's memory counters of each device's physical cores as
    /// the steps left them (what `neuron_core<M>/stats/memory_usage/`
    /// shows: a refused step's allocations count in the peaks), `ND 0`
    /// first, physical core 0 first.
    pub counters: Vec<Vec<CoreCounters>>,
    /// NEFFs loaded where the plan stopped.
    pub neffs: Vec<NeffRecord>,
    /// Tensors held where the plan stopped.
    pub tensors: Vec<TensorRecord>,
    /// Per logical core the deployment uses.
    pub headroom: Vec<Headroom>,
    /// Changes that would make a plan that does not fit fit, each tried.
    pub advice: Vec<Advice>,
    /// For a plan that does not fit when no advice makes it fit: says so,
    /// with what was considered (`None` too when a damaged NEFF stopped
    /// it: [`StepFailure::damaged`] says so, and nothing is advised).
    pub no_fix: Option<String>,
    /// The deployment's question (`--solve`) with its answer.
    pub solve: Option<Solved>,
    /// Parses run (each distinct NEFF once, re-plans included).
    pub parses: u64,
    /// The world the loads were the ranks of (`--world`), its ranks and
    /// whether they agree.
    pub world: Option<WorldPlan>,
}

impl Plan {
    /// Every step ran (a world's disagreements refuse steps).
    pub fn fits(&self) -> bool {
        self.steps.len() == self.planned && self.steps.iter().all(|s| s.outcome.is_ok())
    }

    /// The step that stopped the plan.
    pub fn failed_step(&self) -> Option<(usize, &StepReport, &StepFailure)> {
        self.steps
            .iter()
            .enumerate()
            .find_map(|(i, s)| s.outcome.as_ref().err().map(|f| (i, s, f)))
    }

    /// NEFF id → name, as the usage tables' mapping lists them.
    pub fn names(&self) -> BTreeMap<HModel, String> {
        self.neffs.iter().map(|n| (n.id, n.name.clone())).collect()
    }
}

/// Plans `deployment`: every step in order on a simulated instance, the
/// headroom where it stopped, and advice judged by planning again.
/// What `neffld plan` and Python's `plan` answer: does this mix of NEFFs
/// and tensors fit the instance, and if not, where it stops and why. The
/// process environment's runtime variables apply, as they would to a
/// runtime.
///
/// ```
/// use std::path::Path;
/// use neffld::plan::{deployment::parse_toml, plan};
///
/// let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
/// let toml = r#"
///     instance = "trn1.2xlarge"
///     [[step]]
///     load = "demo.neff"
///     cores = "0-1"
/// "#;
/// let deployment = parse_toml(toml, "deploy.toml", &examples)?;
/// let p = plan(&deployment)?;
/// assert!(p.fits());
/// assert_eq!(p.steps.len(), 2); // one step per core of the range
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn plan(deployment: &Deployment) -> Result<Plan, PlanError> {
    let session = run::Session::open(deployment)?;
    let prints = session.prints();
    let mut outcome = session.execute(deployment, &prints, true)?;
    // A collectives load refused (the world's ranks disagree, or a rank's
    // own collectives world): no memory setting changes that. A damaged
    // NEFF loads nowhere, however the deployment changes: the plan says
    // what is damaged, not what was considered.
    let refused = outcome.steps.iter().find_map(|s| s.outcome.as_ref().err());
    let collectives = refused.is_some_and(|f| f.stage == "collectives");
    let damaged = refused.is_some_and(|f| f.damaged);
    let (advice, considered) = if collectives || damaged {
        (Vec::new(), Vec::new())
    } else {
        advice::advise(&session, deployment, &outcome, &prints)?
    };
    let fits = outcome.completed() == deployment.steps.len();
    let no_fix = (!fits && !damaged && !advice.iter().any(|a| a.fits)).then(|| {
        if collectives {
            return "a collectives load was refused: no memory setting changes what the ranks' NEFFs and their collectives world are (see the refused step)".to_string();
        }
        if considered.is_empty() {
            "no change was found to consider: the plan does not fit as written".to_string()
        } else {
            format!(
                "nothing considered makes the plan fit (considered: {})",
                considered.join("; ")
            )
        }
    });
    let headroom = outcome.headroom.take().unwrap_or_default();
    let world = outcome
        .world
        .take()
        .map(|w| world::WorldPlan::of(w, &outcome.steps, &session.config));
    let solve = match &deployment.solve {
        None => None,
        Some(q @ Solve::Tensor { .. }) => Some(outcome.solved.take().unwrap_or(Solved {
            solve: q.clone(),
            answer: Err("the deployment itself does not fit".into()),
        })),
        Some(Solve::Ranks { .. }) => session.copies(deployment, &prints)?,
    };
    Ok(Plan {
        instance: session.config.topology.instance,
        arch: session.config.topology.arch,
        chips: session.config.topology.chips,
        lnc: session.config.lnc_size(),
        logical_cores: session.config.total_vnc_count(),
        visible: session.config.topology.visible_cores.clone(),
        line: session.config.line(),
        scratchpad_page: session.config.scratchpad_mode().page,
        contiguous_scratchpad: session.config.scratchpad_mode().contiguous,
        unused_page_size: (session.config.scratchpad_mode().contiguous
            && session.config.libnrt.scratchpad_page != crate::stage::ScratchpadMode::DEFAULT_PAGE)
            .then_some(session.config.libnrt.scratchpad_page),
        notes: session
            .config
            .start_notes(session.config.started_vnc_count()),
        io_tensors: deployment.io_tensors,
        planned: deployment.steps.len(),
        steps: outcome.steps,
        refusal: outcome.refusal,
        devices: outcome.devices,
        counters: outcome.counters,
        neffs: outcome.neffs,
        tensors: outcome.tensors,
        headroom,
        advice,
        no_fix,
        solve,
        parses: session.parse_count(),
        world,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{Pool, PoolFree};

    /// A request one granule longer than the largest block prints as the
    /// same size in the runtime's units; the sentence then gives both in
    /// bytes ("the request of 5.833GB needs ... the largest is 5.833GB"
    /// read as a contradiction).
    #[test]
    fn sizes_that_print_alike_are_given_in_bytes() {
        let longest = 6_263_545_856;
        let pools = [PoolFree {
            pool: Pool::Main,
            capacity: 24 << 30,
            free: 7_000_000_000,
            longest,
        }];
        let s = gap_sentence(&pools, Some(longest + 4096));
        assert!(
            s.contains("the request of 5.833GB (6263549952 bytes) needs")
                && s.contains("the largest is 5.833GB (6263545856 bytes)"),
            "{s}"
        );
        let s = gap_sentence(&pools, Some(7 << 30));
        assert!(s.contains("the request of 7.000GB needs"), "{s}");
        assert!(!s.contains("bytes)"), "{s}");
    }

    /// A refusal the size of free blocks does not explain says what does:
    /// the contiguous scratchpad region that grows only in place, or an
    /// alignment no free block meets; a larger request is the gap between
    /// pools and ranges.
    #[test]
    fn a_refusal_smaller_than_the_largest_block_is_told_why() {
        use crate::device::{MemUsage, Pool, PoolFree};
        use crate::ids::PCore;
        use crate::report::memory::{MemoryReport, Refusal};
        let refusal = |size: u64, align: u64, in_place: bool| PlanRefusal {
            step: 0,
            device: 0,
            request: Refusal {
                size,
                align,
                usage: MemUsage::Scratchpad,
                core: PCore(0),
            },
            in_place,
            what: "scratchpad".into(),
            memory: MemoryReport {
                device: 0,
                hbms: Vec::new(),
            },
            log: Vec::new(),
            pools: vec![PoolFree {
                pool: Pool::Main,
                capacity: 24 << 30,
                free: 10 << 30,
                longest: 8 << 30,
            }],
        };
        let why = |r: PlanRefusal| r.explain().unwrap();
        assert!(why(refusal(64 << 20, 4 << 20, true)).contains("grows only in place"));
        let aligned = why(refusal(64 << 20, 1 << 30, false));
        assert!(aligned.contains("aligned to 1.000GB"), "{aligned}");
        let gap = why(refusal(9 << 30, 0, false));
        assert!(gap.contains("needs one contiguous block"), "{gap}");
        assert_eq!(refusal(11 << 30, 0, false).explain(), None);
    }
}
