//! One run of a deployment and what it found ([`Outcome`]): the steps on a
//! fresh runtime ([`Exec`]), then, when asked, the headroom of the state
//! reached and the answer to a tensor question. Kept apart from the run's
//! machinery (`run.rs`), which the headroom and the solver use in turn.

use std::path::PathBuf;
use std::sync::Arc;

use crate::api::{Collective, Fingerprinted};
use crate::config::RuntimeConfig;
use crate::device::CoreCounters;
use crate::ids::PCore;
use crate::report::memory::MemoryReport;

use super::deployment::{step_ceiling, Deployment, Solve, Step};
use super::headroom::{self, Headroom};
use super::run::{Exec, Session, ROOM_EVERY, STEP_ROOM};
use super::solve::{self, SolveAnswer, Solved};
use super::world::{self, NeffCc, RankLoad, RankLoaded, Shape, WorldRun};
use super::{NeffRecord, PlanError, PlanRefusal, StepReport, TensorRecord};

impl Session {
    /// Runs `d`'s steps under `config` until one is refused; with
    /// `measure`, the headroom of the state reached.
    pub fn execute_with(
        &self,
        d: &Deployment,
        config: &RuntimeConfig,
        prints: &[Fingerprinted<'_>],
        measure: bool,
    ) -> Result<Outcome, PlanError> {
        let Ran {
            mut exec,
            start,
            refusal,
            fits,
        } = self.run(d, config, prints)?;
        // The driver's counters as the steps left them: what is measured
        // next allocates and frees, which a driver would count.
        let counters = exec.counters();
        // A tensor question is answered on any run that fits (advice asks
        // one of a changed deployment), the headroom only when measured.
        let solved = match &d.solve {
            Some(Solve::Tensor { name, cores }) if fits => Some(Solved {
                solve: Solve::Tensor {
                    name: name.clone(),
                    cores: cores.clone(),
                },
                answer: Ok(SolveAnswer::Bytes(solve::largest_everywhere(
                    &exec, name, cores,
                ))),
            }),
            _ => None,
        };
        let headroom = match measure {
            true => Some(
                headroom::measure(&mut exec, d).map_err(|oom| PlanError::HostMemory {
                    oom,
                    done: exec.steps.len(),
                    steps: d.steps.len(),
                })?,
            ),
            false => None,
        };
        let mut outcome = exec.finish(start, refusal, headroom);
        outcome.solved = solved;
        outcome.counters = counters;
        Ok(outcome)
    }

    /// The ranks of `d`'s world and how they agree, before any of them
    /// loads: each rank's NEFF's collectives read from its parse (once per
    /// distinct NEFF, the parse its loads use), then compared.
    fn world_run(&self, exec: &Exec<'_>, d: &Deployment, shape: Shape) -> WorldRun {
        let loads: Vec<(usize, &PathBuf)> = d
            .steps
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match s {
                Step::Load { file, .. } => Some((i, file)),
                _ => None,
            })
            .take(shape.size as usize)
            .collect();
        let facts: Vec<Option<Arc<NeffCc>>> = loads
            .iter()
            .map(|(_, file)| {
                let i = self.file_index(file)?;
                self.collectives_of(&exec.rt, &exec.prints[i], i)
            })
            .collect();
        let ranks: Vec<RankLoad<'_>> = loads
            .iter()
            .zip(&facts)
            .map(|(&(step, file), cc)| RankLoad {
                step,
                file,
                cc: cc.as_deref(),
            })
            .collect();
        let disagreements = world::compare(&ranks, shape.size, exec.config.line());
        let ranks = ranks
            .iter()
            .map(|r| {
                let list = r.cc.map(|cc| &cc.collectives()[..]).unwrap_or(&[]);
                RankLoaded {
                    step: r.step,
                    file: r.file.clone(),
                    collectives: list.len(),
                    groups: Collective::groups_used(list),
                }
            })
            .collect();
        WorldRun::new(shape, ranks, disagreements)
    }

    /// The answer to `d`'s copies question ([`Solve::Ranks`]), on a run of
    /// its own, whose copies go with it. `None` when `d` asks none; an
    /// `Err` answer when the deployment itself does not fit.
    pub fn copies(
        &self,
        d: &Deployment,
        prints: &[Fingerprinted<'_>],
    ) -> Result<Option<Solved>, PlanError> {
        let Some(q @ Solve::Ranks { file, cores }) = &d.solve else {
            return Ok(None);
        };
        let solved = |answer| {
            Some(Solved {
                solve: q.clone(),
                answer,
            })
        };
        let Ran { mut exec, fits, .. } = self.run(d, &self.config, prints)?;
        if !fits {
            return Ok(solved(Err("the deployment itself does not fit".into())));
        }
        let Some(i) = self.file_index(file) else {
            return Ok(solved(Err("the plan did not read this file".into())));
        };
        let cores = match cores {
            Some(c) => c.clone(),
            None => (0..exec.rt.visible_vnc_count()).collect(),
        };
        let answer = solve::copies(
            &mut exec,
            i,
            file,
            &cores,
            d.io_tensors,
            (step_ceiling(&d.env)?, d.steps.len()),
            self.config.loader.max_headroom,
        )
        .map_err(|oom| PlanError::HostMemory {
            oom,
            done: d.steps.len(),
            steps: d.steps.len(),
        })?;
        Ok(solved(Ok(answer)))
    }

    /// Runs `d`'s steps under `config` on a fresh runtime until one is
    /// refused.
    fn run<'s>(
        &'s self,
        d: &Deployment,
        config: &RuntimeConfig,
        prints: &'s [Fingerprinted<'s>],
    ) -> Result<Ran<'s>, PlanError> {
        let mut exec = Exec::start(self, config, prints)?;
        if let Some(shape) = self.world {
            exec.world = Some(self.world_run(&exec, d, shape));
        }
        let start = (exec.held(), exec.fullest_hbm());
        for (done, step) in d.steps.iter().enumerate() {
            if done % ROOM_EVERY == 0 {
                crate::fallible::room(STEP_ROOM, "further steps of the plan").map_err(|oom| {
                    PlanError::HostMemory {
                        oom,
                        done,
                        steps: d.steps.len(),
                    }
                })?;
            }
            let report = exec.step(step, d.io_tensors)?;
            let failed = report.outcome.is_err();
            exec.steps.push(report);
            if failed {
                break;
            }
            // A refusal some code recovered from is not the plan's.
            for w in &exec.watches {
                w.take_refusal();
            }
        }
        let refusal = exec.refusal();
        for w in &exec.watches {
            w.disarm();
        }
        let fits = exec.steps.len() == d.steps.len()
            && refusal.is_none()
            && exec.steps.iter().all(|s| s.outcome.is_ok());
        Ok(Ran {
            exec,
            start,
            refusal,
            fits,
        })
    }

    /// [`Session::execute_with`] under the session's configuration.
    pub fn execute(
        &self,
        d: &Deployment,
        prints: &[Fingerprinted<'_>],
        measure: bool,
    ) -> Result<Outcome, PlanError> {
        self.execute_with(d, &self.config, prints, measure)
    }
}

impl Exec<'_> {
    fn finish(
        self,
        start: (u64, u64),
        refusal: Option<PlanRefusal>,
        headroom: Option<Vec<Headroom>>,
    ) -> Outcome {
        let hbm_of_vnc = (0..self.rt.total_vnc_count())
            .map(|v| {
                let (nd, dev, first) = self.rt.placement_of_vnc(v).ok()?;
                Some((nd, dev.geometry().hbm_of(first).ok()?))
            })
            .collect();
        let devices = self
            .rt
            .devices()
            .enumerate()
            .map(|(nd, d)| MemoryReport::of(nd as u32, d))
            .collect();
        // Everything the run holds is dropped with it: the devices go too,
        // so their allocators need not take each block back.
        for d in self.rt.devices() {
            d.retire();
        }
        let mut neffs = Vec::with_capacity(self.loads.len());
        let mut tensors: Vec<TensorRecord> = Vec::new();
        for l in self.loads {
            neffs.push(l.record);
            tensors.extend(l.io.into_iter().map(|(t, _)| t));
        }
        tensors.extend(self.tensors.into_iter().map(|(t, _)| t));
        Outcome {
            neffs,
            tensors,
            world: self.world,
            steps: self.steps,
            refusal,
            devices,
            headroom,
            solved: None,
            hbm_of_vnc,
            start,
            counters: Vec::new(),
        }
    }

    /// The driver's counters of every physical core, device by device.
    fn counters(&self) -> Vec<Vec<CoreCounters>> {
        self.rt
            .devices()
            .map(|d| {
                let cores = d.geometry().cores();
                d.with_ledger(|l| (0..cores).map(|c| l.counters(PCore(c))).collect())
            })
            .collect()
    }
}

/// A run whose steps are done.
struct Ran<'s> {
    exec: Exec<'s>,
    /// Bytes held on the instance, and on its fullest HBM, before any step.
    start: (u64, u64),
    refusal: Option<PlanRefusal>,
    /// Every step went through.
    fits: bool,
}

/// What one run found.
pub(crate) struct Outcome {
    pub steps: Vec<StepReport>,
    pub refusal: Option<PlanRefusal>,
    pub devices: Vec<MemoryReport>,
    pub neffs: Vec<NeffRecord>,
    pub tensors: Vec<TensorRecord>,
    pub headroom: Option<Vec<Headroom>>,
    /// A tensor question's answer, when measured.
    pub solved: Option<Solved>,
    /// Every visible logical core's device and HBM (of its first physical
    /// core).
    pub hbm_of_vnc: Vec<Option<(u32, u32)>>,
    /// Bytes held on the instance, and on its fullest HBM, before any step.
    pub start: (u64, u64),
    /// The driver's counters of each device's physical cores after the
    /// steps.
    pub counters: Vec<Vec<CoreCounters>>,
    /// The world the loads were the ranks of.
    pub world: Option<WorldRun>,
}

impl Outcome {
    /// Steps that went through.
    pub fn completed(&self) -> usize {
        self.steps.iter().take_while(|s| s.outcome.is_ok()).count()
    }

    /// Bytes held on the instance after the first `n` steps.
    pub fn held_after(&self, n: usize) -> u64 {
        n.checked_sub(1)
            .and_then(|i| self.steps.get(i))
            .map_or(self.start.0, |s| s.held_after)
    }

    /// Bytes held on the fullest HBM after the first `n` steps.
    pub fn fullest_after(&self, n: usize) -> u64 {
        n.checked_sub(1)
            .and_then(|i| self.steps.get(i))
            .map_or(self.start.1, |s| s.fullest_hbm_after)
    }
}
