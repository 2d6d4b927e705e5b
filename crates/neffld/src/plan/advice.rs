//! Advice a runtime engineer would give about a deployment, each judged by
//! planning the deployment again with the change and comparing, never
//! guessed:
//!
//! - a scratchpad page size (`NEURON_SCRATCHPAD_PAGE_SIZE`) when the plan
//!   holds private scratchpad: every multiple of 512 MiB below 4 GiB is
//!   tried and the one that helps most is given;
//! - the paged scratchpad (`NEURON_RT_CONTIGUOUS_SCRATCHPAD=0`) when a
//!   contiguous scratchpad region could not grow, the documentation's own
//!   advice for that refusal;
//! - LNC=2 when, at LNC=1, two cores of one HBM both hold memory (the
//!   noisy neighbour of trn2 and later): each logical core then has its HBM
//!   to itself;
//! - a NEFF to leave out: for a refused plan, the one of those loaded on
//!   the refused step's HBM whose absence lets the most through (each of
//!   the heaviest few planned without it: its shared scratchpad is in no
//!   NEFF's rows); for a plan that fits, the heaviest, and what the
//!   deployment holds without it.
//!
//! Two plans are compared after the steps both went through (the original
//! stops at a refused step; a change that lets it go further says so).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;

use crate::api::Fingerprinted;
use crate::report::memory::{human_size, Column};

use super::deployment::{Deployment, Solve, Step};
use super::execute::Outcome;
use super::run::{configure, Session};
use super::solve::SolveAnswer;
use super::PlanError;

/// Which change.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AdviceKind {
    /// `NEURON_SCRATCHPAD_PAGE_SIZE` in MiB.
    ScratchpadPage {
        /// The page size to set.
        mib: u64,
    },
    /// `NEURON_RT_CONTIGUOUS_SCRATCHPAD=0`: scratchpad pages anywhere in
    /// the HBM instead of one region that must grow in place.
    PagedScratchpad,
    /// A logical-core size: 2 where cores of LNC 1 crowd a shared HBM, or
    /// the size a refused NEFF was compiled for.
    Lnc {
        /// `NEURON_LOGICAL_NC_CONFIG`.
        size: u32,
    },
    /// The same steps on other logical cores: `moves` maps each moved
    /// core to its new one (cores that shared an HBM spread over HBMs the
    /// deployment leaves unused).
    Placement {
        /// (from, to) visible logical cores.
        moves: Vec<(u32, u32)>,
    },
    /// A crowded core's steps spread onto cores whose HBMs the deployment
    /// leaves empty: each move takes core `from`'s steps from step `step`
    /// on (what they allocate, and what releases it) to core `to`.
    Spread {
        /// (step, from, to): the first step moved and the cores.
        moves: Vec<(usize, u32, u32)>,
    },
    /// A refused tensor at the largest size that fits on its cores beside
    /// the rest of the deployment (what `--solve NAME@CORES` answers).
    TensorSize {
        /// The tensor.
        name: String,
        /// The size that fits.
        bytes: u64,
    },
    /// The deployment without this NEFF.
    Without {
        /// The NEFF to leave out.
        file: PathBuf,
    },
}

/// One piece of advice with what planning again with it showed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Advice {
    /// The change.
    pub kind: AdviceKind,
    /// The change as a user makes it (a flag or a variable).
    pub change: String,
    /// The whole `neffld plan` command line with the change applied,
    /// re-runnable as given: planning it gives `fits` ([`Deployment::argv`]).
    pub argv: Vec<OsString>,
    /// Why, in a sentence with the figures.
    pub reason: String,
    /// Every step runs with the change.
    pub fits: bool,
    /// Steps that went through without and with the change.
    pub completed: (usize, usize),
    /// Bytes the instance holds after the steps both plans went through,
    /// without and with the change.
    pub held: (u64, u64),
    /// The fullest HBM's bytes at the same point, without and with.
    pub fullest_hbm: (u64, u64),
    /// When the change lets the refused step through: its index, and the
    /// bytes free on its HBM when it was refused and after it with the
    /// change.
    pub unblocked: Option<(usize, u64, u64)>,
}

impl Advice {
    /// Bytes the change saves on the whole instance (negative: it costs).
    pub fn saves(&self) -> i128 {
        i128::from(self.held.0) - i128::from(self.held.1)
    }
}

/// A re-plan compared with the original.
struct Judged {
    /// The original's refused step, and the bytes free on its HBM when it
    /// was refused and after it in the re-plan.
    unblocked: Option<(usize, u64, u64)>,
    completed: (usize, usize),
    held: (u64, u64),
    fullest: (u64, u64),
    fits: bool,
}

impl Judged {
    fn new(orig: &Outcome, new: Outcome, planned: usize) -> Option<Judged> {
        let n = orig.completed();
        if new.completed() < n {
            return None;
        }
        let unblocked = orig.refusal.as_ref().and_then(|r| {
            let before = r.memory.hbm_of(r.request.core)?.free();
            let after = new
                .steps
                .get(n)?
                .hbm_free_after
                .filter(|_| new.completed() > n)?;
            Some((n, before, after))
        });
        Some(Judged {
            unblocked,
            completed: (n, new.completed()),
            held: (orig.held_after(n), new.held_after(n)),
            fullest: (orig.fullest_after(n), new.fullest_after(n)),
            fits: new.completed() == planned,
        })
    }

    /// It fits where the original did not, gets further, or holds less.
    fn helps(&self) -> bool {
        self.completed.1 > self.completed.0 || self.held.1 < self.held.0
    }

    /// Ordering key: fits, then steps done, then bytes saved.
    fn rank(&self) -> (bool, usize, i128) {
        (
            self.fits,
            self.completed.1,
            i128::from(self.held.0) - i128::from(self.held.1),
        )
    }

    fn advice(
        self,
        kind: AdviceKind,
        change: String,
        reason: String,
        argv: Vec<OsString>,
    ) -> Advice {
        Advice {
            kind,
            change,
            argv,
            reason,
            fits: self.fits,
            completed: self.completed,
            held: self.held,
            fullest_hbm: self.fullest,
            unblocked: self.unblocked,
        }
    }

    /// The tail of a reason: what the change does to the figures.
    fn effect(&self) -> String {
        let mut s = String::new();
        if self.held.1 < self.held.0 {
            s.push_str(&format!(
                "the instance holds {} less ({} instead of {})",
                human_size(self.held.0 - self.held.1),
                human_size(self.held.1),
                human_size(self.held.0)
            ));
        }
        if self.fullest.1 < self.fullest.0 {
            if !s.is_empty() {
                s.push_str("; ");
            }
            s.push_str(&format!(
                "the fullest HBM holds {} instead of {}",
                human_size(self.fullest.1),
                human_size(self.fullest.0)
            ));
        }
        if let Some((step, before, after)) = self.unblocked {
            if !s.is_empty() {
                s.push_str("; ");
            }
            s.push_str(&format!(
                "step {} then leaves {} free on its HBM, where {} was free when it was refused",
                step + 1,
                human_size(after),
                human_size(before)
            ));
        }
        if self.completed.1 > self.completed.0 {
            if !s.is_empty() {
                s.push_str("; ");
            }
            s.push_str(&if self.fits {
                "every step then fits".to_string()
            } else {
                format!(
                    "{} steps then go through instead of {}",
                    self.completed.1, self.completed.0
                )
            });
        }
        if !self.fits {
            if !s.is_empty() {
                s.push_str("; ");
            }
            s.push_str(&format!(
                "the plan still does not fit: step {} is still refused",
                self.completed.1 + 1
            ));
        }
        s
    }
}

/// Advice, and what was considered (each in a few words, for the plain
/// statement that nothing considered makes a refused plan fit).
pub(crate) fn advise(
    session: &Session,
    d: &Deployment,
    orig: &Outcome,
    prints: &[Fingerprinted<'_>],
) -> Result<(Vec<Advice>, Vec<String>), PlanError> {
    // The deployment's own question is not asked again of each change.
    let d = &Deployment {
        solve: None,
        ..d.clone()
    };
    let mut out = Vec::new();
    let mut considered = Vec::new();
    if let Some(a) = page_size(session, d, orig, prints, &mut considered)? {
        out.push(a);
    }
    if let Some(a) = paged_scratchpad(session, d, orig, prints, &mut considered)? {
        out.push(a);
    }
    if let Some(a) = lnc(session, d, orig, prints, &mut considered)? {
        out.push(a);
    }
    if let Some(a) = placement(session, d, orig, prints, &mut considered)? {
        out.push(a);
    }
    // Room elsewhere, and the size that fits, before leaving anything out.
    if let Some(a) = spread(session, d, orig, prints, &mut considered)? {
        out.push(a);
    }
    if let Some(a) = tensor_size(session, d, orig, prints, &mut considered)? {
        out.push(a);
    }
    if let Some(a) = dominant(session, d, orig, prints, &mut considered)? {
        out.push(a);
    }
    Ok((out, considered))
}

/// Replans that spreading a refused plan may take: each moves one more
/// core's steps onto one more empty HBM.
const SPREAD_TRIED: usize = 16;

/// A refused plan's crowded core spread onto cores whose HBMs nothing of
/// the deployment uses: the refused step and the core's later steps move
/// to the first such core ([`super::spread::moved`]); planned again, a
/// step refused further on moves on to the next, and so on, at most
/// [`SPREAD_TRIED`] times. Considered when every step names its core and
/// the refusal is for want of memory (31 empty cores beside a refused one
/// gave "no change was found to consider").
fn spread(
    session: &Session,
    d: &Deployment,
    orig: &Outcome,
    prints: &[Fingerprinted<'_>],
    considered: &mut Vec<String>,
) -> Result<Option<Advice>, PlanError> {
    let core = |s: &Step| match s {
        Step::Load { vnc, .. } => *vnc,
        Step::Tensor { vnc, .. } | Step::Unload { vnc, .. } | Step::Free { vnc, .. } => Some(*vnc),
    };
    if orig.refusal.is_none() || d.steps.iter().any(|s| core(s).is_none()) {
        return Ok(None);
    }
    let hbm = |v: u32| orig.hbm_of_vnc.get(v as usize).copied().flatten();
    let mut used: Vec<(u32, u32)> = d.steps.iter().filter_map(|s| hbm(core(s)?)).collect();
    let mut spare: Vec<u32> = Vec::new();
    for v in 0..orig.hbm_of_vnc.len() as u32 {
        if let Some(h) = hbm(v).filter(|h| !used.contains(h)) {
            used.push(h);
            spare.push(v);
        }
    }
    if spare.is_empty() {
        return Ok(None);
    }
    considered.push("spreading the refused core's steps onto cores whose HBMs are empty".into());
    let mut changed = d.clone();
    let mut moves: Vec<(usize, u32, u32)> = Vec::new();
    let mut refused = orig.completed();
    let mut last = None;
    for &to in spare.iter().take(SPREAD_TRIED) {
        let Some(from) = changed.steps.get(refused).and_then(core) else {
            break;
        };
        let next = super::spread::moved(&changed, refused, from, to);
        if next.validate(orig.hbm_of_vnc.len() as u32, "").is_err() {
            break;
        }
        let o = replan(session, &next, prints)?;
        // A step that does not fit on an empty HBM either ends it.
        if o.completed() <= refused {
            break;
        }
        changed = next;
        moves.push((refused, from, to));
        refused = o.completed();
        let done = refused == changed.steps.len() || o.refusal.is_none();
        last = Some(o);
        if done {
            break;
        }
    }
    let Some(j) = last.and_then(|o| Judged::new(orig, o, d.steps.len())) else {
        return Ok(None);
    };
    let list: Vec<String> = moves
        .iter()
        .map(|&(step, from, to)| {
            format!("core {from}'s steps from step {} on to core {to}", step + 1)
        })
        .collect();
    let reason = format!(
        "{} of {} logical cores have an HBM nothing of the deployment uses; {}: {}",
        spare.len(),
        orig.hbm_of_vnc.len(),
        list.join(", "),
        j.effect()
    );
    let onto: Vec<String> = moves.iter().map(|m| m.2.to_string()).collect();
    Ok(Some(j.advice(
        AdviceKind::Spread { moves },
        format!(
            "spread onto empty core{} {}",
            if onto.len() == 1 { "" } else { "s" },
            onto.join(", ")
        ),
        reason,
        argv_of(session, &changed),
    )))
}

/// A refused tensor at the largest size that fits: the size `--solve
/// NAME@CORES` finds for the tensor of the refused argument (or deployment
/// step) on its cores beside the rest of the deployment, put in its place
/// and planned again (a refused tensor beside models was offered only
/// leaving a model out).
fn tensor_size(
    session: &Session,
    d: &Deployment,
    orig: &Outcome,
    prints: &[Fingerprinted<'_>],
    considered: &mut Vec<String>,
) -> Result<Option<Advice>, PlanError> {
    let at = orig.completed();
    let (Some(Step::Tensor { name, size, .. }), Some(_)) = (d.steps.get(at), &orig.refusal) else {
        return Ok(None);
    };
    // The tensor's steps of the argument (or deployment step) refused.
    let origin = d.origins.get(at);
    let of_it = |j: usize| {
        d.origins.get(j) == origin
            && matches!(&d.steps[j], Step::Tensor { name: n, size: s, .. } if n == name && s == size)
    };
    let cores: Vec<u32> = (0..d.steps.len())
        .filter(|&j| of_it(j))
        .filter_map(|j| match d.steps[j] {
            Step::Tensor { vnc, .. } => Some(vnc),
            _ => None,
        })
        .collect();
    considered.push(format!("a smaller {name}"));
    let probe = Deployment {
        steps: (0..d.steps.len())
            .filter(|&j| !of_it(j))
            .map(|j| d.steps[j].clone())
            .collect(),
        solve: Some(Solve::Tensor {
            name: name.clone(),
            cores: cores.clone(),
        }),
        ..d.clone()
    };
    // Frees of the tensor have nothing to free without it.
    if probe.validate(orig.hbm_of_vnc.len() as u32, "").is_err() {
        return Ok(None);
    }
    let bytes = match replan(session, &probe, prints)?.solved.map(|s| s.answer) {
        Some(Ok(SolveAnswer::Bytes(b))) if b > 0 => b,
        _ => return Ok(None),
    };
    let changed = Deployment {
        steps: (0..d.steps.len())
            .map(|j| match &d.steps[j] {
                Step::Tensor { name, vnc, .. } if of_it(j) => Step::Tensor {
                    name: name.clone(),
                    size: bytes,
                    vnc: *vnc,
                },
                s => s.clone(),
            })
            .collect(),
        ..d.clone()
    };
    let Some(j) = Judged::new(orig, replan(session, &changed, prints)?, d.steps.len()) else {
        return Ok(None);
    };
    if !j.helps() {
        return Ok(None);
    }
    let list = super::deployment::core_list(&cores);
    let reason = format!(
        "the largest {name} that fits on {} {list} beside the rest of the deployment is {bytes} bytes ({}), found by allocating as --solve {name}@{list} does, where {} ({size} bytes) was asked: {}",
        if cores.len() == 1 { "core" } else { "each of cores" },
        human_size(bytes),
        human_size(*size),
        j.effect()
    );
    Ok(Some(j.advice(
        AdviceKind::TensorSize {
            name: name.clone(),
            bytes,
        },
        format!(
            "{name} of {bytes} bytes ({}) on {} {list}",
            human_size(bytes),
            if cores.len() == 1 { "core" } else { "cores" }
        ),
        reason,
        argv_of(session, &changed),
    )))
}

/// The command line of a changed deployment.
fn argv_of(session: &Session, changed: &Deployment) -> Vec<OsString> {
    changed.argv(Some(session.config.topology.arch))
}

/// Plans `d` again under its own configuration.
fn replan(
    session: &Session,
    d: &Deployment,
    prints: &[Fingerprinted<'_>],
) -> Result<Outcome, PlanError> {
    let config = configure(d, session.files.len())?;
    let config = crate::config::RuntimeConfig {
        topology: crate::config::Topology {
            arch: session.config.topology.arch,
            ..config.topology
        },
        ..config
    };
    session.execute_with(d, &config, prints, false)
}

fn page_size(
    session: &Session,
    d: &Deployment,
    orig: &Outcome,
    prints: &[Fingerprinted<'_>],
    considered: &mut Vec<String>,
) -> Result<Option<Advice>, PlanError> {
    // Where the plan stopped (the refused step rolled back), as the usage
    // table shows it: the refusal's own snapshot holds the same memory
    // and more, and must not be added to it.
    let scratchpad = |o: &Outcome| {
        let sum = |c: Column| -> u64 {
            o.devices
                .iter()
                .flat_map(|m| &m.hbms)
                .map(|h| h.usage().get(c))
                .sum()
        };
        (sum(Column::SharedScratchpad), sum(Column::Scratchpad))
    };
    let (shared, private) = scratchpad(orig);
    if private == 0 {
        return Ok(None);
    }
    let current = session.config.libnrt.scratchpad_page >> 20;
    considered.push("scratchpad page sizes of 512 MiB to 3.5 GiB".into());
    let mut best: Option<(u64, Judged, Deployment, (u64, u64))> = None;
    for mib in (1..8).map(|k| k * 512).filter(|&m| m != current) {
        let mut changed = d.clone();
        changed
            .env
            .push(("NEURON_SCRATCHPAD_PAGE_SIZE".into(), mib.to_string()));
        let outcome = replan(session, &changed, prints)?;
        let then = scratchpad(&outcome);
        let Some(j) = Judged::new(orig, outcome, d.steps.len()) else {
            continue;
        };
        if j.helps() && best.as_ref().is_none_or(|(_, b, _, _)| j.rank() > b.rank()) {
            best = Some((mib, j, changed, then));
        }
    }
    Ok(best.map(|(mib, j, changed, (shared_then, private_then))| {
        // What the page size changes, in the table's two columns: private
        // allocations of variables that straddle a page or outgrow it, and
        // the shared pages, whose size rounds each core's need up.
        let reason = format!(
            "with {current} MiB pages the scratchpad is {} shared and {} private (variables that straddle a page or outgrow it); with {mib} MiB pages {} shared and {} private where that plan stops: {}",
            human_size(shared),
            human_size(private),
            human_size(shared_then),
            human_size(private_then),
            j.effect()
        );
        j.advice(
            AdviceKind::ScratchpadPage { mib },
            format!("--env NEURON_SCRATCHPAD_PAGE_SIZE={mib}"),
            reason,
            argv_of(session, &changed),
        )
    }))
}

/// A refused scratchpad page while the scratchpad is one contiguous region:
/// the region must grow in place, so it is refused when the bytes next to
/// it are taken, however much is free elsewhere. The paged mode places
/// pages anywhere.
fn paged_scratchpad(
    session: &Session,
    d: &Deployment,
    orig: &Outcome,
    prints: &[Fingerprinted<'_>],
    considered: &mut Vec<String>,
) -> Result<Option<Advice>, PlanError> {
    let refused_page = orig
        .refusal
        .as_ref()
        .is_some_and(|r| r.request.usage == crate::device::MemUsage::Scratchpad);
    if !refused_page || !session.config.scratchpad_mode().contiguous {
        return Ok(None);
    }
    considered.push("the paged scratchpad".into());
    const OFF: (&str, &str) = ("NEURON_RT_CONTIGUOUS_SCRATCHPAD", "0");
    let mut changed = d.clone();
    changed.env.push((OFF.0.into(), OFF.1.into()));
    let Some(j) = Judged::new(orig, replan(session, &changed, prints)?, d.steps.len()) else {
        return Ok(None);
    };
    if !j.helps() {
        return Ok(None);
    }
    let reason = format!(
        "the contiguous scratchpad region could not grow in place (the bytes next to it are taken); with the paged scratchpad, pages go anywhere in the HBM: {}",
        j.effect()
    );
    Ok(Some(j.advice(
        AdviceKind::PagedScratchpad,
        format!("--env {}={}", OFF.0, OFF.1),
        reason,
        argv_of(session, &changed),
    )))
}

/// An HBM shared by several cores where the memory of one core's models
/// or tensors crowds another: a refusal on a core while another core of
/// its HBM holds such memory, or two cores of one HBM that both hold it.
fn noisy(o: &Outcome) -> Option<(u32, u32, Vec<u32>)> {
    let busy = |h: &crate::report::HbmMemory| -> Vec<u32> {
        h.cores
            .iter()
            .filter(|c| c.model.iter().any(|&b| b > 0))
            .map(|c| c.pcore.0)
            .collect()
    };
    if let Some(r) = &o.refusal {
        if let Some(h) = r
            .memory
            .hbm_of(r.request.core)
            .filter(|h| h.cores.len() > 1)
        {
            let mut cores = busy(h);
            if cores.iter().any(|&c| c != r.request.core.0) {
                cores.push(r.request.core.0);
                cores.sort_unstable();
                cores.dedup();
                return Some((r.device, h.hbm, cores));
            }
        }
    }
    o.devices.iter().find_map(|m| {
        m.hbms.iter().find_map(|h| {
            let cores = busy(h);
            (cores.len() > 1).then_some((m.device, h.hbm, cores))
        })
    })
}

/// Another logical-core size: the one the refused load's NEFF was
/// compiled for (its header's, when the chip takes it: the runtime's own
/// refusal names it), else 2 for cores of LNC 1 that share an HBM.
fn lnc(
    session: &Session,
    d: &Deployment,
    orig: &Outcome,
    prints: &[Fingerprinted<'_>],
    considered: &mut Vec<String>,
) -> Result<Option<Advice>, PlanError> {
    let config = &session.config;
    let compiled = orig
        .steps
        .iter()
        .find(|s| s.outcome.is_err())
        .and_then(|s| {
            let Step::Load { file, .. } = &s.step else {
                return None;
            };
            let lnc = session.files[session.file_index(file)?].lnc?;
            (lnc != config.lnc_size() && config.topology.arch.lnc_sizes().contains(&lnc)).then(
                || {
                    (
                        lnc,
                        format!("{} was compiled for LNC {lnc}", file.display()),
                    )
                },
            )
        });
    let (size, why) = match compiled {
        Some(c) => c,
        None => {
            if config.lnc_size() != 1 || !config.topology.arch.lnc_sizes().contains(&2) {
                return Ok(None);
            }
            let Some((nd, hbm, cores)) = noisy(orig) else {
                return Ok(None);
            };
            let list: Vec<String> = cores.iter().map(|c| format!("NC {c}")).collect();
            (
                2,
                format!(
                    "at LNC 1, {} share HBM {hbm} of ND {nd} (a noisy neighbour); at LNC 2 each logical core has an HBM to itself",
                    list.join(" and ")
                ),
            )
        }
    };
    let mut resized = config.clone();
    resized.topology.lnc = Some(size);
    let logical_cores = resized.total_vnc_count();
    let named = d.steps.iter().filter_map(|s| match s {
        Step::Load { vnc, .. } => *vnc,
        Step::Tensor { vnc, .. } | Step::Unload { vnc, .. } | Step::Free { vnc, .. } => Some(*vnc),
    });
    if named.clone().any(|v| v >= logical_cores) {
        considered.push(format!(
            "not LNC {size}: the deployment names cores beyond the {logical_cores} logical cores of LNC {size}"
        ));
        return Ok(None);
    }
    considered.push(format!("LNC {size}"));
    let changed = Deployment {
        lnc: Some(size),
        ..d.clone()
    };
    let Ok(outcome) = replan(session, &changed, prints) else {
        return Ok(None);
    };
    let Some(j) = Judged::new(orig, outcome, d.steps.len()) else {
        return Ok(None);
    };
    if !(j.fits || j.completed.1 > j.completed.0 || j.fullest.1 < j.fullest.0) {
        return Ok(None);
    }
    let reason = format!("{why}: {}", j.effect());
    Ok(Some(j.advice(
        AdviceKind::Lnc { size },
        format!("--lnc {size} (NEURON_LOGICAL_NC_CONFIG={size})"),
        reason,
        argv_of(session, &changed),
    )))
}

fn dominant(
    session: &Session,
    d: &Deployment,
    orig: &Outcome,
    prints: &[Fingerprinted<'_>],
    considered: &mut Vec<String>,
) -> Result<Option<Advice>, PlanError> {
    // One NEFF (by content) is nothing to weigh against another.
    if session.files.len() < 2 {
        return Ok(None);
    }
    // Model bytes, loads and IO tensor bytes per NEFF (by content: paths
    // with the same bytes are one) where the plan stopped. A NEFF's IO
    // tensors are its own too: leaving it out frees them.
    let neff_of = |p: &PathBuf| session.file_index(p);
    let file_of: BTreeMap<_, _> = orig
        .neffs
        .iter()
        .filter_map(|n| Some((n.id, neff_of(&n.file)?)))
        .collect();
    let mut by_file: BTreeMap<usize, (u64, usize, u64)> = BTreeMap::new();
    for n in &orig.neffs {
        if let Some(i) = neff_of(&n.file) {
            by_file.entry(i).or_default().1 += 1;
        }
    }
    for t in &orig.tensors {
        if let Some(&f) = t.io_of.and_then(|h| file_of.get(&h)) {
            by_file.entry(f).or_default().2 += t.size;
        }
    }
    for m in &orig.devices {
        for c in m.hbms.iter().flat_map(|h| &h.cores) {
            for (id, rows) in &c.models {
                if let Some(&f) = file_of.get(id) {
                    by_file.entry(f).or_default().0 += rows.iter().sum::<u64>();
                }
            }
        }
    }
    let total: u64 = by_file.values().map(|v| v.0 + v.2).sum();
    let refused = orig.completed() < d.steps.len();
    if by_file.len() < 2 || total == 0 {
        return Ok(None);
    }
    // A refused plan: only a NEFF loaded on the refused step's HBM can make
    // room there. Its rows do not show the shared scratchpad it made the
    // runtime hold, so the heaviest few are each planned without, and the
    // one whose absence lets the most through is given. A plan that fits:
    // the heaviest, and what the instance holds without it.
    let refused_hbm = refused
        .then(|| orig.steps.get(orig.completed()).and_then(|s| s.vnc))
        .flatten()
        .and_then(|v| orig.hbm_of_vnc.get(v as usize).copied().flatten());
    let on_refused_hbm = |f: usize| {
        refused_hbm.is_none_or(|hbm| {
            orig.neffs.iter().any(|n| {
                neff_of(&n.file) == Some(f)
                    && orig.hbm_of_vnc.get(n.vnc as usize).copied().flatten() == Some(hbm)
            })
        })
    };
    let mut candidates: Vec<(usize, Weight)> = by_file
        .iter()
        .filter(|&(&f, _)| on_refused_hbm(f))
        .map(|(&f, &(bytes, loads, io))| {
            let percent = (bytes + io) * 100 / total;
            (
                f,
                Weight {
                    bytes,
                    loads,
                    io,
                    percent,
                },
            )
        })
        .collect();
    candidates.sort_by_key(|(_, w)| std::cmp::Reverse(w.bytes + w.io));
    candidates.truncate(if refused { WITHOUT_TRIED } else { 1 });
    let judged = candidates
        .into_iter()
        .map(|(neff, weight)| without(session, d, orig, prints, considered, neff, weight))
        .collect::<Result<Vec<Advice>, PlanError>>()?;
    // The one that lets most through, then holds least; the heavier on a tie.
    Ok(judged
        .into_iter()
        .rev()
        .max_by_key(|a| (a.fits, a.completed.1, std::cmp::Reverse(a.held.1))))
}

/// NEFFs on a refused HBM each planned without, the heaviest first.
const WITHOUT_TRIED: usize = 4;

/// A NEFF's share of the deployment where the plan stopped.
#[derive(Clone, Copy)]
struct Weight {
    /// Its loads' model bytes.
    bytes: u64,
    loads: usize,
    /// Its loads' IO tensor bytes.
    io: u64,
    /// Of all NEFFs' model and IO bytes.
    percent: u64,
}

/// The deployment without NEFF `neff` (every load and unload of it, by any
/// path), planned again and compared with `orig`.
fn without(
    session: &Session,
    d: &Deployment,
    orig: &Outcome,
    prints: &[Fingerprinted<'_>],
    considered: &mut Vec<String>,
    neff: usize,
    Weight {
        bytes,
        loads,
        io,
        percent,
    }: Weight,
) -> Result<Advice, PlanError> {
    let refused = orig.completed() < d.steps.len();
    let file = &session.files[neff].path;
    let is_it = |f: &PathBuf| session.file_index(f) == Some(neff);
    considered.push(format!("the deployment without {}", file.display()));
    let changed = Deployment {
        steps: d
            .steps
            .iter()
            .filter(|s| !matches!(s, Step::Load { file: f, .. } | Step::Unload { file: f, .. } if is_it(f)))
            .cloned()
            .collect(),
        ..d.clone()
    };
    // Compare after the same steps of the original that remain.
    let outcome = replan(session, &changed, prints)?;
    let kept_done = d
        .steps
        .iter()
        .take(orig.completed())
        .filter(
            |s| !matches!(s, Step::Load { file: f, .. } | Step::Unload { file: f, .. } if is_it(f)),
        )
        .count();
    let held_new = outcome.held_after(kept_done.min(outcome.completed()));
    let n = orig.completed();
    let held_orig = orig.held_after(n);
    let fits = outcome.completed() == changed.steps.len();
    let mut reason = format!(
        "{} holds {percent}% of the NEFFs' memory ({} in {loads} load{}{})",
        file.display(),
        human_size(bytes),
        if loads == 1 { "" } else { "s" },
        if io > 0 {
            format!(" and {} of their IO tensors", human_size(io))
        } else {
            String::new()
        }
    );
    if held_new < held_orig {
        reason.push_str(&format!(
            "; without it the instance holds {} less",
            human_size(held_orig - held_new)
        ));
    }
    if fits && refused {
        reason.push_str(", and every other step fits");
    } else if !fits {
        reason.push_str(&format!(
            "; the plan still does not fit without it: step {} of {} is refused",
            outcome.completed() + 1,
            changed.steps.len()
        ));
    }
    Ok(Advice {
        kind: AdviceKind::Without { file: file.clone() },
        change: format!("without {}", file.display()),
        argv: argv_of(session, &changed),
        reason,
        fits,
        completed: (n, outcome.completed()),
        held: (held_orig, held_new),
        fullest_hbm: (
            orig.fullest_after(n),
            outcome.fullest_after(kept_done.min(outcome.completed())),
        ),
        unblocked: None,
    })
}

/// Cores that share an HBM, spread over HBMs the deployment leaves unused:
/// the first core of each shared HBM stays, each other one moves to the
/// first logical core whose HBM nothing of the deployment uses. Considered
/// for a refused plan whose steps all name their cores.
fn placement(
    session: &Session,
    d: &Deployment,
    orig: &Outcome,
    prints: &[Fingerprinted<'_>],
    considered: &mut Vec<String>,
) -> Result<Option<Advice>, PlanError> {
    if orig.completed() == d.steps.len() {
        return Ok(None);
    }
    let mut used: Vec<u32> = Vec::new();
    for s in &d.steps {
        let v = match s {
            Step::Load { vnc: None, .. } => return Ok(None),
            Step::Load { vnc: Some(v), .. } => *v,
            Step::Tensor { vnc, .. } | Step::Unload { vnc, .. } | Step::Free { vnc, .. } => *vnc,
        };
        if !used.contains(&v) {
            used.push(v);
        }
    }
    let hbm = |v: u32| orig.hbm_of_vnc.get(v as usize).copied().flatten();
    let mut taken: Vec<(u32, u32)> = Vec::new();
    let mut moves: Vec<(u32, u32)> = Vec::new();
    let mut shared = false;
    let mut spare = (0..orig.hbm_of_vnc.len() as u32).filter(|&v| {
        let h = hbm(v);
        h.is_some() && !used.iter().any(|&u| hbm(u) == h)
    });
    let mut spare_taken: Vec<(u32, u32)> = Vec::new();
    for &v in &used {
        let Some(h) = hbm(v) else { return Ok(None) };
        if !taken.contains(&h) {
            taken.push(h);
            continue;
        }
        shared = true;
        // The next spare core on an HBM no other move took.
        let to = spare.by_ref().find(|&s| {
            let sh = hbm(s).unwrap_or_default();
            if spare_taken.contains(&sh) {
                false
            } else {
                spare_taken.push(sh);
                true
            }
        });
        if let Some(to) = to {
            moves.push((v, to));
        }
    }
    if !shared {
        return Ok(None);
    }
    considered.push("placing cores that share an HBM on HBMs of their own".into());
    if moves.is_empty() {
        return Ok(None);
    }
    let to = |v: u32| moves.iter().find(|m| m.0 == v).map_or(v, |m| m.1);
    let changed = Deployment {
        steps: d
            .steps
            .iter()
            .map(|s| match s.clone() {
                Step::Load { file, vnc } => Step::Load {
                    file,
                    vnc: vnc.map(to),
                },
                Step::Tensor { name, size, vnc } => Step::Tensor {
                    name,
                    size,
                    vnc: to(vnc),
                },
                Step::Unload { file, vnc } => Step::Unload { file, vnc: to(vnc) },
                Step::Free { name, vnc } => Step::Free { name, vnc: to(vnc) },
            })
            .collect(),
        ..d.clone()
    };
    let Some(j) = Judged::new(orig, replan(session, &changed, prints)?, d.steps.len()) else {
        return Ok(None);
    };
    if !j.helps() {
        return Ok(None);
    }
    let list = |f: &dyn Fn(&(u32, u32)) -> u32| {
        moves
            .iter()
            .map(|m| f(m).to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (from, onto) = (list(&|m| m.0), list(&|m| m.1));
    let shares: Vec<String> = moves
        .iter()
        .filter_map(|&(v, _)| {
            let (nd, h) = hbm(v)?;
            let with = used.iter().find(|&&u| u != v && hbm(u) == Some((nd, h)))?;
            Some(format!(
                "core {v} shares HBM {h} of ND {nd} with core {with}"
            ))
        })
        .collect();
    let reason = format!(
        "{}; core{} {onto}, on HBMs nothing else of the deployment uses, instead of {from}: {}",
        shares.join(", "),
        if moves.len() == 1 { "" } else { "s" },
        j.effect()
    );
    Ok(Some(j.advice(
        AdviceKind::Placement {
            moves: moves.clone(),
        },
        format!(
            "{} {onto} instead of {from}",
            if moves.len() == 1 { "core" } else { "cores" }
        ),
        reason,
        argv_of(session, &changed),
    )))
}
