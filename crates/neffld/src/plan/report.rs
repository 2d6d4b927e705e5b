//! The plan as it is reported: plain values with every figure a front end
//! shows, serialised by serde as `neffld plan --json`'s document
//! (docs/cli.md, docs/cli-schema.json; the common keys `schema_version`,
//! `command`, `status` and `error` are the command's). The command's
//! human text, its HTML map and Python's plan objects read the same
//! values, so no front end reads a JSON tree back or restates a fact of
//! the plan (a core's logical number, the runtime's share of a core).

use serde::{Serialize, Serializer};

use super::{AdviceKind, Plan, Solve, SolveAnswer, Step as PlanStep};
use crate::device::Geometry;
use crate::line::RuntimeLine;
use crate::report::categories::{MonitorCategory, MonitorUsage};
use crate::report::memory::{Column, MemoryReport, Usage};

/// Bytes by usage-table column, as a map from the runtime's column names.
fn columns<S: Serializer>(u: &Usage, s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(Column::ALL.iter().map(|&c| (c.name(), u.get(c))))
}

/// Bytes by neuron-monitor's category, as a map from its keys.
fn categories<S: Serializer>(u: &MonitorUsage, s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(MonitorCategory::ALL.iter().map(|&c| (c.key(), u.get(c))))
}

fn display<S: Serializer>(line: &RuntimeLine, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(line)
}

fn words<S: Serializer>(w: &[std::ffi::OsString], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(w.iter().map(|w| w.to_string_lossy()))
}

/// The whole report of one plan.
#[derive(Clone, Debug, Serialize)]
pub struct PlanReport {
    /// Every step ran.
    pub fits: bool,
    /// What the plan ran on.
    pub instance: InstanceFacts,
    /// The runtime line reproduced.
    #[serde(serialize_with = "display")]
    pub runtime: RuntimeLine,
    /// Shared scratchpad page size (the contiguous region's step when
    /// `contiguous_scratchpad`).
    pub scratchpad_page: u64,
    /// Each core's shared scratchpad is one contiguous region.
    pub contiguous_scratchpad: bool,
    /// A page size `NEURON_SCRATCHPAD_PAGE_SIZE` asked for that the
    /// contiguous region does not use.
    pub unused_page_size: Option<u64>,
    /// What the runtime takes when it starts beyond its line's carried
    /// captured rows, and why, a sentence each.
    pub notes: Vec<String>,
    /// Each load's inputs and outputs were allocated after it.
    pub io_tensors: bool,
    /// Steps of the deployment.
    pub planned_steps: usize,
    /// Parses run (each distinct NEFF once, re-plans included).
    pub parses: u64,
    /// Steps run, in order; a refused one is the last.
    pub steps: Vec<StepEntry>,
    /// The first allocation refused for want of memory.
    pub refusal: Option<RefusalEntry>,
    /// Every device's memory where the plan stopped.
    pub memory: Memory,
    /// NEFFs loaded where the plan stopped.
    pub neffs: Vec<NeffEntry>,
    /// Tensors held where the plan stopped.
    pub tensors: Vec<TensorEntry>,
    /// Per logical core the deployment uses.
    pub headroom: Vec<HeadroomEntry>,
    /// Changes judged by planning again.
    pub advice: Vec<AdviceEntry>,
    /// When nothing considered makes a refused plan fit: what was considered.
    pub no_fix: Option<String>,
    /// The deployment's question with its answer.
    pub solve: Option<SolveEntry>,
    /// The world the loads were the ranks of (`--world`): its ranks, the
    /// host of each, and whether they agree.
    pub world: Option<super::WorldPlan>,
}

/// The instance a plan ran on, with the facts of its chip.
#[derive(Clone, Debug, Serialize)]
pub struct InstanceFacts {
    /// Instance type (`None`: one chip of `arch`).
    pub name: Option<&'static str>,
    /// The chip's product name.
    pub chip: Option<&'static str>,
    /// `trn1`, `trn2` or `trn3`.
    pub arch: &'static str,
    /// Chips (devices) of the instance.
    pub chips: u32,
    /// Physical cores of one chip.
    pub cores_per_chip: u32,
    /// HBMs of one chip.
    pub hbms_per_chip: u32,
    /// Bytes of one HBM.
    pub hbm_size: u64,
    /// Logical-core size.
    pub lnc: u32,
    /// Logical cores of the whole instance at that size.
    pub logical_cores: u32,
    /// The logical cores the process sees, when a variable restricts them:
    /// `{var, value, cores}`.
    pub visible: Option<crate::config::CoreList>,
}

/// One step as it ran.
#[derive(Clone, Debug, Serialize)]
pub struct StepEntry {
    /// Its place among the steps, from 0.
    pub index: usize,
    /// `load`, `tensor`, `unload` or `free`.
    pub kind: &'static str,
    /// The NEFF of a load or unload.
    pub file: Option<String>,
    /// The tensor of a tensor or free step.
    pub name: Option<String>,
    /// The size of a tensor step.
    pub size: Option<u64>,
    /// The logical core it ran on.
    pub core: Option<u32>,
    /// The device (`ND n`) of that core.
    pub device: Option<u32>,
    /// Physical cores of that logical core.
    pub pcores: Vec<u32>,
    /// `ok` or `refused`.
    pub status: &'static str,
    /// Why a refused step was refused.
    pub error: Option<StepError>,
    /// Bytes the allocators of the whole instance hold after the step.
    pub held_after: u64,
}

/// Why a step was refused.
#[derive(Clone, Debug, Serialize)]
pub struct StepError {
    /// The layer that refused it.
    pub stage: &'static str,
    /// The `NRT_STATUS` name.
    pub status: &'static str,
    /// Its number.
    pub status_code: u32,
    /// The runtime's message.
    pub message: String,
    /// neffld's own ceiling rather than the runtime's refusal: the setting
    /// that raises it.
    pub own_limit: Option<&'static str>,
    /// The NEFF's own bytes are damaged: no change to the deployment loads it.
    pub damaged: bool,
}

/// The free bytes of one allocator pool of an HBM.
#[derive(Clone, Debug, Serialize)]
pub struct PoolEntry {
    /// `main` or `small` (the driver's pool of small requests).
    pub pool: &'static str,
    /// Bytes the pool can hand out in all.
    pub capacity: u64,
    /// Bytes free in it.
    pub free: u64,
    /// Its longest free range: the largest request it can take.
    pub longest: u64,
}

/// One line of the runtime's log.
#[derive(Clone, Debug, Serialize)]
pub struct LogEntry {
    /// The runtime function that logs it.
    pub function: &'static str,
    /// The line.
    pub message: String,
}

/// The first refusal for want of device memory.
#[derive(Clone, Debug, Serialize)]
pub struct RefusalEntry {
    /// Index of the refused step.
    pub step: usize,
    /// Its device.
    pub device: u32,
    /// The physical core the request was for.
    pub pcore: u32,
    /// The HBM of that core.
    pub hbm: Option<u32>,
    /// Bytes asked.
    pub size: u64,
    /// Alignment asked (0: none).
    pub alignment: u64,
    /// The usage-table column of the request.
    pub usage: &'static str,
    /// The runtime's usage type of the request.
    pub category: &'static str,
    /// What was being allocated.
    pub what: String,
    /// Why more bytes were free than asked, when they were.
    pub explain: Option<String>,
    /// The pools of the HBM as the refusal found them.
    pub pools: Vec<PoolEntry>,
    /// The runtime's lines.
    pub log: Vec<LogEntry>,
    /// The device's memory as the refusal found it.
    pub memory: Memory,
}

/// Memory, device by device.
#[derive(Clone, Debug, Serialize)]
pub struct Memory {
    /// `ND 0` first.
    pub devices: Vec<DeviceMemory>,
}

/// One device's memory.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceMemory {
    /// Its index (`ND n`).
    pub device: u32,
    /// Its HBMs.
    pub hbms: Vec<HbmEntry>,
}

/// One HBM's memory.
#[derive(Clone, Debug, Serialize)]
pub struct HbmEntry {
    /// Its index on the device.
    pub hbm: u32,
    /// Its size.
    pub size: u64,
    /// What the allocator can hand out on it.
    pub capacity: u64,
    /// What the allocator holds on it.
    pub held: u64,
    /// What is free.
    pub free: u64,
    /// Bytes used as requested.
    pub used: u64,
    /// `used` by usage-table column.
    #[serde(serialize_with = "columns")]
    pub columns: Usage,
    /// The physical cores on it.
    pub cores: Vec<CoreEntry>,
}

/// One physical core's memory.
#[derive(Clone, Debug, Serialize)]
pub struct CoreEntry {
    /// The physical core.
    pub pcore: u32,
    /// Bytes used as requested.
    pub used: u64,
    /// `used` by usage-table column.
    #[serde(serialize_with = "columns")]
    pub columns: Usage,
    /// `used` by neuron-monitor's and neuron-top's category.
    #[serde(serialize_with = "categories")]
    pub categories: MonitorUsage,
    /// What each NEFF on the core holds.
    pub neffs: Vec<CoreNeff>,
    /// Of `categories`, what the runtime itself holds: what it took when
    /// it started and the shared scratchpad pages of the core's models.
    #[serde(skip)]
    pub runtime: MonitorUsage,
}

/// What one NEFF holds on a core.
#[derive(Clone, Debug, Serialize)]
pub struct CoreNeff {
    /// Its id in the usage tables (`H_MODEL`).
    pub id: u32,
    /// Its name, as the runtime prints it.
    pub name: Option<String>,
    /// The file it came from.
    pub file: Option<String>,
    /// What the runtime counts as its total (its per-NEFF columns).
    pub total: u64,
    /// Its bytes by usage-table column.
    #[serde(serialize_with = "columns")]
    pub columns: Usage,
    /// Its bytes by neuron-monitor's and neuron-top's category.
    #[serde(serialize_with = "categories")]
    pub categories: MonitorUsage,
}

/// A NEFF loaded where the plan stopped.
#[derive(Clone, Debug, Serialize)]
pub struct NeffEntry {
    /// Its id in the usage tables.
    pub id: u32,
    /// Its name, as the runtime prints it.
    pub name: String,
    /// The file it came from, as the deployment named it.
    pub file: String,
    /// Its device.
    pub device: u32,
    /// Its logical core.
    pub core: u32,
    /// The physical cores of that logical core.
    pub pcores: Vec<u32>,
    /// Its rank, when it is a rank of a world.
    pub rank: Option<u32>,
    /// The device memory of its collectives, which its rows leave out
    /// (no public fact sizes it), in words ("collectives memory not
    /// counted: 6 collectives in 2 replica groups on rank 0"); `None`
    /// without collectives.
    pub collectives_not_counted: Option<String>,
}

/// A device tensor held where the plan stopped.
#[derive(Clone, Debug, Serialize)]
pub struct TensorEntry {
    /// Its name.
    pub name: String,
    /// Its size.
    pub size: u64,
    /// The logical core it was allocated for.
    pub core: u32,
    /// Its device.
    pub device: u32,
    /// The physical core it is charged to.
    pub pcore: u32,
    /// That core's HBM.
    pub hbm: u32,
    /// The load whose input or output it is (`None`: a named tensor).
    pub io_of: Option<u32>,
}

/// What more fits on one logical core.
#[derive(Clone, Debug, Serialize)]
pub struct HeadroomEntry {
    /// The logical core.
    pub core: u32,
    /// Its device.
    pub device: u32,
    /// Its physical cores.
    pub pcores: Vec<u32>,
    /// The HBM a tensor of the core goes to.
    pub hbm: u32,
    /// Bytes free on it.
    pub hbm_free: u64,
    /// The largest further tensor that fits.
    pub largest_tensor: u64,
    /// Other logical cores of the plan on the same HBM (the figures are
    /// theirs too, counted once).
    pub shared_with: Vec<u32>,
    /// The HBM's pools.
    pub pools: Vec<PoolEntry>,
    /// Why the largest tensor is under the free bytes, when it is.
    pub explain: Option<String>,
    /// More copies of each NEFF of the deployment that fit.
    pub copies: Vec<CopiesEntry>,
}

/// How many more copies of one NEFF fit on a core.
#[derive(Clone, Debug, Serialize)]
pub struct CopiesEntry {
    /// The NEFF.
    pub file: String,
    /// Copies that fit.
    pub count: u32,
    /// Counting stopped at the limit: at least `count` fit.
    pub at_least: bool,
    /// Why the NEFF cannot load on the core at all, memory aside.
    pub refused: Option<StepError>,
}

/// One piece of advice with what planning again with it showed.
#[derive(Clone, Debug, Serialize)]
pub struct AdviceEntry {
    /// `scratchpad_page`, `paged_scratchpad`, `lnc`, `placement`,
    /// `spread`, `tensor_size` or `without_neff`.
    pub kind: &'static str,
    /// The change as a user makes it.
    pub change: String,
    /// The whole `neffld plan` command line with the change applied: the
    /// OS's words (a path need not be UTF-8); JSON writes each as text,
    /// a byte that is not UTF-8 as U+FFFD.
    #[serde(serialize_with = "words")]
    pub argv: Vec<std::ffi::OsString>,
    /// A placement's or a spread's moves (`None` for other kinds).
    pub moves: Option<Vec<Move>>,
    /// A tensor size's bytes: the refused tensor at the largest size that
    /// fits (`None` for other kinds).
    pub size: Option<u64>,
    /// Why, with the figures.
    pub reason: String,
    /// Every step runs with the change.
    pub fits: bool,
    /// Steps that went through without the change.
    pub completed_before: usize,
    /// ... and with it.
    pub completed_after: usize,
    /// Bytes the instance holds after the steps both plans ran, without.
    pub held_before: u64,
    /// ... and with.
    pub held_after: u64,
    /// Bytes the change saves (negative: it costs).
    pub saves: i64,
    /// The fullest HBM's bytes, without the change.
    pub fullest_hbm_before: u64,
    /// ... and with it.
    pub fullest_hbm_after: u64,
    /// When the change lets the refused step through.
    pub unblocked: Option<Unblocked>,
}

/// A logical core a placement or a spread moves.
#[derive(Clone, Debug, Serialize)]
pub struct Move {
    /// The core as written.
    pub from: u32,
    /// The core it moves to.
    pub to: u32,
    /// A spread's first step moved (its steps from this one on, with what
    /// releases them); `None`: a placement moves every step of the core.
    pub from_step: Option<usize>,
}

/// The refused step a change lets through.
#[derive(Clone, Debug, Serialize)]
pub struct Unblocked {
    /// Its index.
    pub step: usize,
    /// Bytes free on its HBM when it was refused.
    pub free_before: u64,
    /// Bytes free there after it, with the change.
    pub free_after: u64,
}

/// A question (`--solve`) and its answer.
#[derive(Clone, Debug, Serialize)]
pub struct SolveEntry {
    /// `tensor` (the largest tensor) or `ranks` (copies of a NEFF).
    pub kind: &'static str,
    /// The question as written.
    pub query: String,
    /// The tensor asked about.
    pub name: Option<String>,
    /// The NEFF asked about.
    pub file: Option<String>,
    /// The cores listed.
    pub cores: Option<Vec<u32>>,
    /// The largest tensor that fits on every listed core at once.
    pub bytes: Option<u64>,
    /// Copies of the NEFF that fit, every core together.
    pub ranks: Option<u32>,
    /// Each core counted, with the copies it took.
    pub per_core: Option<Vec<CoreCopies>>,
    /// Why the last core to stop took no further copy.
    pub stopped: Option<StepError>,
    /// The ceiling that stopped the count (then "at least" `ranks`).
    pub ceiling: Option<String>,
    /// Why there is no answer.
    pub unanswered: Option<String>,
}

/// One core of a copies question.
#[derive(Clone, Debug, Serialize)]
pub struct CoreCopies {
    /// The visible logical core.
    pub core: u32,
    /// Copies it took.
    pub copies: u32,
}

fn pools(pools: &[super::PoolFree]) -> Vec<PoolEntry> {
    pools
        .iter()
        .map(|p| PoolEntry {
            pool: match p.pool {
                super::Pool::Main => "main",
                super::Pool::Small => "small",
            },
            capacity: p.capacity,
            free: p.free,
            longest: p.longest,
        })
        .collect()
}

fn memory(p: &Plan, devices: &[MemoryReport]) -> Memory {
    let by_id: std::collections::HashMap<_, _> = p.neffs.iter().map(|n| (n.id, n)).collect();
    let devices = devices
        .iter()
        .map(|m| DeviceMemory {
            device: m.device,
            hbms: m
                .hbms
                .iter()
                .map(|h| {
                    let u = h.usage();
                    HbmEntry {
                        hbm: h.hbm,
                        size: h.size,
                        capacity: h.capacity,
                        held: h.held,
                        free: h.free(),
                        used: u.total(),
                        columns: u,
                        cores: h
                            .cores
                            .iter()
                            .map(|c| {
                                let cu = c.usage();
                                CoreEntry {
                                    pcore: c.pcore.0,
                                    used: cu.total(),
                                    columns: cu,
                                    categories: c.categories(),
                                    neffs: c
                                        .models
                                        .iter()
                                        .map(|(id, rows)| {
                                            let u = Usage::of(rows);
                                            let rec = by_id.get(id);
                                            CoreNeff {
                                                id: id.0,
                                                name: rec.map(|r| r.name.clone()),
                                                file: rec.map(|r| r.file.display().to_string()),
                                                total: u.neff_total(),
                                                columns: u,
                                                categories: MonitorUsage::of(rows),
                                            }
                                        })
                                        .collect(),
                                    runtime: MonitorUsage::of(&c.runtime),
                                }
                            })
                            .collect(),
                    }
                })
                .collect(),
        })
        .collect();
    Memory { devices }
}

fn step(index: usize, s: &super::StepReport) -> StepEntry {
    let (kind, file, name, size) = match &s.step {
        PlanStep::Load { file, .. } => ("load", Some(file), None, None),
        PlanStep::Tensor { name, size, .. } => ("tensor", None, Some(name), Some(*size)),
        PlanStep::Unload { file, .. } => ("unload", Some(file), None, None),
        PlanStep::Free { name, .. } => ("free", None, Some(name), None),
    };
    StepEntry {
        index,
        kind,
        file: file.map(|f| f.display().to_string()),
        name: name.cloned(),
        size,
        core: s.vnc,
        device: s.device,
        pcores: s.pcores.clone(),
        status: if s.outcome.is_ok() { "ok" } else { "refused" },
        error: s.outcome.as_ref().err().map(step_error),
        held_after: s.held_after,
    }
}

fn step_error(f: &super::StepFailure) -> StepError {
    StepError {
        stage: f.stage,
        status: f.status.as_str(),
        status_code: f.status.code(),
        message: f.message.clone(),
        own_limit: f.own_limit,
        damaged: f.damaged,
    }
}

fn solve(s: &super::Solved) -> SolveEntry {
    let (kind, name, file, cores) = match &s.solve {
        Solve::Tensor { name, cores } => ("tensor", Some(name.clone()), None, Some(cores.clone())),
        Solve::Ranks { file, cores } => (
            "ranks",
            None,
            Some(file.display().to_string()),
            cores.clone(),
        ),
    };
    let mut e = SolveEntry {
        kind,
        query: s.solve.to_string(),
        name,
        file,
        cores,
        bytes: None,
        ranks: None,
        per_core: None,
        stopped: None,
        ceiling: None,
        unanswered: None,
    };
    match &s.answer {
        Ok(SolveAnswer::Bytes(b)) => e.bytes = Some(*b),
        Ok(SolveAnswer::Ranks {
            count,
            per_core,
            stopped,
            ceiling,
        }) => {
            e.ranks = Some(*count);
            e.per_core = Some(
                per_core
                    .iter()
                    .map(|&(core, copies)| CoreCopies { core, copies })
                    .collect(),
            );
            e.stopped = stopped.as_ref().map(step_error);
            e.ceiling = ceiling.clone();
        }
        Err(why) => e.unanswered = Some(why.clone()),
    }
    e
}

fn advice(a: &super::Advice) -> AdviceEntry {
    AdviceEntry {
        kind: match &a.kind {
            AdviceKind::ScratchpadPage { .. } => "scratchpad_page",
            AdviceKind::PagedScratchpad => "paged_scratchpad",
            AdviceKind::Lnc { .. } => "lnc",
            AdviceKind::Placement { .. } => "placement",
            AdviceKind::Spread { .. } => "spread",
            AdviceKind::TensorSize { .. } => "tensor_size",
            AdviceKind::Without { .. } => "without_neff",
        },
        change: a.change.clone(),
        argv: a.argv.clone(),
        moves: match &a.kind {
            AdviceKind::Placement { moves } => Some(
                moves
                    .iter()
                    .map(|&(from, to)| Move {
                        from,
                        to,
                        from_step: None,
                    })
                    .collect(),
            ),
            AdviceKind::Spread { moves } => Some(
                moves
                    .iter()
                    .map(|&(step, from, to)| Move {
                        from,
                        to,
                        from_step: Some(step),
                    })
                    .collect(),
            ),
            _ => None,
        },
        size: match &a.kind {
            AdviceKind::TensorSize { bytes, .. } => Some(*bytes),
            _ => None,
        },
        reason: a.reason.clone(),
        fits: a.fits,
        completed_before: a.completed.0,
        completed_after: a.completed.1,
        held_before: a.held.0,
        held_after: a.held.1,
        saves: i64::try_from(a.saves()).unwrap_or(i64::MAX),
        fullest_hbm_before: a.fullest_hbm.0,
        fullest_hbm_after: a.fullest_hbm.1,
        unblocked: a
            .unblocked
            .map(|(step, free_before, free_after)| Unblocked {
                step,
                free_before,
                free_after,
            }),
    }
}

impl Plan {
    /// The instance planned on: its chips, their cores and HBMs, and the
    /// logical cores at the plan's size.
    pub fn instance_facts(&self) -> InstanceFacts {
        let g = Geometry::for_arch(self.arch);
        InstanceFacts {
            name: self.instance.map(|i| i.name),
            chip: self.instance.map(|i| i.chip),
            arch: self.arch.instance(),
            chips: self.chips,
            cores_per_chip: g.cores(),
            hbms_per_chip: g.hbm_channels(),
            hbm_size: g.hbm_bytes_per_channel(),
            lnc: self.lnc,
            logical_cores: self.logical_cores,
            visible: self.visible.clone(),
        }
    }

    /// The plan as it is reported ([`PlanReport`]).
    pub fn report(&self) -> PlanReport {
        let refusal = self.refusal.as_ref().map(|r| RefusalEntry {
            step: r.step,
            device: r.device,
            pcore: r.request.core.0,
            hbm: r.memory.hbm_of(r.request.core).map(|h| h.hbm),
            size: r.request.size,
            alignment: r.request.align,
            usage: Column::of(r.request.usage).name(),
            category: r.request.usage.name(),
            what: r.what.clone(),
            explain: r.explain(),
            pools: pools(&r.pools),
            log: r
                .log
                .iter()
                .map(|(function, message)| LogEntry {
                    function,
                    message: message.clone(),
                })
                .collect(),
            memory: memory(self, std::slice::from_ref(&r.memory)),
        });
        PlanReport {
            fits: self.fits(),
            instance: self.instance_facts(),
            runtime: self.line,
            scratchpad_page: self.scratchpad_page,
            contiguous_scratchpad: self.contiguous_scratchpad,
            unused_page_size: self.unused_page_size,
            notes: self.notes.clone(),
            io_tensors: self.io_tensors,
            planned_steps: self.planned,
            parses: self.parses,
            steps: self
                .steps
                .iter()
                .enumerate()
                .map(|(i, s)| step(i, s))
                .collect(),
            refusal,
            memory: memory(self, &self.devices),
            neffs: self
                .neffs
                .iter()
                .map(|n| NeffEntry {
                    id: n.id.0,
                    name: n.name.clone(),
                    file: n.file.display().to_string(),
                    device: n.device,
                    core: n.vnc,
                    pcores: n.pcores.clone(),
                    rank: n.rank,
                    collectives_not_counted: n.collectives_not_counted.as_ref().map(|note| match n
                        .rank
                    {
                        Some(r) => format!("{note} on rank {r}"),
                        None => note.clone(),
                    }),
                })
                .collect(),
            tensors: self
                .tensors
                .iter()
                .map(|t| TensorEntry {
                    name: t.name.clone(),
                    size: t.size,
                    core: t.vnc,
                    device: t.device,
                    pcore: t.pcore,
                    hbm: t.hbm,
                    io_of: t.io_of.map(|h| h.0),
                })
                .collect(),
            headroom: self
                .headroom
                .iter()
                .map(|h| HeadroomEntry {
                    core: h.vnc,
                    device: h.device,
                    pcores: h.pcores.clone(),
                    hbm: h.hbm,
                    hbm_free: h.hbm_free,
                    largest_tensor: h.largest_tensor,
                    shared_with: h.shared_with.clone(),
                    pools: pools(&h.pools),
                    explain: h.explain(),
                    copies: h
                        .copies
                        .iter()
                        .map(|(f, c)| CopiesEntry {
                            file: f.display().to_string(),
                            count: c.count,
                            at_least: c.at_least,
                            refused: c.refused.as_ref().map(step_error),
                        })
                        .collect(),
                })
                .collect(),
            advice: self.advice.iter().map(advice).collect(),
            no_fix: self.no_fix.clone(),
            solve: self.solve.as_ref().map(solve),
            world: self.world.clone(),
        }
    }
}

impl PlanReport {
    /// The step that stopped the plan, if one did.
    pub fn failed_step(&self) -> Option<&StepEntry> {
        self.steps.iter().find(|s| s.error.is_some())
    }

    /// The logical core physical core `pcore` of device `device` belongs
    /// to, from the steps that ran on it.
    pub fn logical_core(&self, device: u32, pcore: u32) -> Option<u32> {
        self.steps.iter().find_map(|s| {
            (s.device == Some(device) && s.pcores.contains(&pcore))
                .then_some(s.core)
                .flatten()
        })
    }
}
