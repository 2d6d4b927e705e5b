//! Running a deployment's steps on a runtime over accounting-only devices.
//!
//! A [`Session`] holds what every run of one deployment shares — the files,
//! read once; the parse cache, so each NEFF is parsed once however often it
//! is loaded and however often the deployment is planned again; the
//! configuration. Each [`Session::execute`] starts a fresh runtime on fresh
//! devices and runs the steps until the first one the runtime refuses.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::api::{
    started_device, Collective, DeviceTensor, Fingerprinted, LoadError, Model, Parses, Runtime,
};
use crate::config::{DeviceKind, RuntimeConfig};
use crate::container::{self, Neff};
use crate::device::tape::Taped;
use crate::device::{
    AllocReq, Device, DeviceError, Geometry, Ledger, MemUsage, Observer, Owned, Owner, Place,
};
use crate::ids::{HModel, PCore};
use crate::neff::Source;
use crate::registry::ModelNames;
use crate::report::memory::{LogLine, MemoryReport, Refusal};
use crate::settings::{Asked, Settings};

use super::deployment::{same_file, Deployment, DeploymentError, Solve, Step};
use super::world::{NeffCc, Shape, WorldRun};
use super::{NeffRecord, PlanError, PlanRefusal, StepFailure, StepReport, TensorRecord};

/// A NEFF file's bytes, read once for the whole plan: a regular file,
/// mapped (its pages are the page cache's). Anything else — a FIFO, a
/// device, a socket — is refused before a byte is read and without waiting
/// on it ([`crate::neff::open_regular`]: a FIFO with no writer held the
/// plan in its open forever), as standard input is: a plan reads NEFFs
/// from files.
fn read_file(path: &Path) -> Result<Source, PlanError> {
    crate::neff::open_regular(path)
        .and_then(Source::of_file)
        .map_err(|source| PlanError::Io {
            path: path.to_path_buf(),
            source,
        })
}

/// A regular file as the file system knows it: its device and inode, with
/// its length and modification time (a file rewritten in place between two
/// of its names being read is then not taken for the same bytes).
type Inode = (u64, u64, u64, i64, i64);

/// The identity of the regular file `path` names (links followed); `None`
/// for anything else, which is read to be known.
fn inode_of(path: &Path) -> Option<Inode> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    m.is_file()
        .then(|| (m.dev(), m.ino(), m.len(), m.mtime(), m.mtime_nsec()))
}

/// One distinct NEFF of the deployment.
pub(crate) struct NeffFile {
    pub path: PathBuf,
    bytes: Source,
    /// The fingerprint of its bytes under the session's parse cache.
    print: u128,
    /// The logical-core size its header says it was compiled for.
    pub lnc: Option<u32>,
}

/// What every run of one deployment shares.
pub(crate) struct Session {
    pub config: RuntimeConfig,
    /// Each distinct NEFF (by content) once, named by the first path that
    /// names it.
    pub files: Vec<NeffFile>,
    /// Every path the deployment loads → its NEFF in `files` (paths with
    /// the same bytes, links or copies, share one).
    by_path: HashMap<PathBuf, usize>,
    pub parses: Parses,
    /// Each file's container, opened once (S1) for its first load: after
    /// that the parse cache keeps the parse.
    opened: Mutex<Vec<Option<Neff>>>,
    /// The world the loads are the ranks of.
    pub world: Option<Shape>,
    /// Each file's collectives, read once from its parse for comparing a
    /// world's ranks (`None` inside: the NEFF did not parse).
    collectives: Mutex<HashMap<usize, Option<Arc<NeffCc>>>>,
}

/// The configuration a deployment asks for: its variables over the
/// defaults, then its instance, LNC and runtime line; the devices keep no
/// bytes and every distinct NEFF's parse is retained.
pub(crate) fn configure(d: &Deployment, files: usize) -> Result<RuntimeConfig, PlanError> {
    let (config, _) = super::world::settle(d, tune(settings(d)?.config().clone(), files))?;
    Ok(config)
}

/// The deployment's settings by the one precedence ([`Settings`]): its
/// `--instance`, `--lnc` and `--runtime` over its environment.
fn settings(d: &Deployment) -> Result<Settings, PlanError> {
    let env: BTreeMap<&str, &str> = d
        .env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let asked = Asked {
        instance: d.instance,
        lnc: d.lnc,
        runtime: d.runtime,
        device: Some(DeviceKind::Null),
        ..Asked::default()
    };
    Ok(Settings::resolve(&asked, |k| {
        env.get(k).map(|v| v.to_string())
    })?)
}

/// A planner's own use of a configuration: no images kept, every file's
/// parse retained.
fn tune(mut config: RuntimeConfig, files: usize) -> RuntimeConfig {
    config.loader.retain_images = false;
    // A NEFF staged once on a set of cores is replayed there by every
    // further load (`NEFFLD_REPLAY=0` stages each); cores are built one
    // after another, as the replay's recording is (the devices copy
    // nothing, so threads would buy nothing, and the plan does not depend
    // on their timing).
    config.loader.replay = Some(config.loader.replay.unwrap_or(true));
    config.loader.fanout_min_bytes = u64::MAX;
    config.loader.cache_retain = files.max(1);
    config.loader.cache_retain_bytes = u64::MAX;
    config
}

impl Session {
    /// Reads every NEFF the deployment names (once each) and settles the
    /// configuration; with no instance named, the first NEFF's own
    /// architecture on one chip.
    pub fn open(d: &Deployment) -> Result<Session, PlanError> {
        let mut seen: HashSet<&PathBuf> = HashSet::new();
        let mut paths: Vec<&PathBuf> = Vec::new();
        for step in &d.steps {
            if let Step::Load { file, .. } = step {
                if seen.insert(file) {
                    paths.push(file);
                }
            }
        }
        if let Some(Solve::Ranks { file, .. }) = &d.solve {
            if seen.insert(file) {
                paths.push(file);
            }
        }
        let settings = settings(d)?;
        let count = paths.len();
        let config = tune(settings.config().clone(), count);
        let parses = Parses::new(&config);
        let opts = config.open_options();
        let mut files: Vec<NeffFile> = Vec::new();
        let mut opened = Vec::new();
        let mut by_path = HashMap::new();
        let mut by_print: HashMap<u128, usize> = HashMap::new();
        let mut by_inode: HashMap<Inode, usize> = HashMap::new();
        for path in paths {
            // Another name of a file already read (a link) is that file,
            // known without reading it again.
            let inode = inode_of(path);
            if let Some(&i) = inode.as_ref().and_then(|n| by_inode.get(n)) {
                by_path.insert(path.clone(), i);
                continue;
            }
            // The fingerprint reads every byte; a mapped file is then mapped
            // afresh, so the container's open releases its pages as it
            // reads them, as `neffld load` does, instead of keeping the
            // whole file resident beside the inflated payload.
            let first = read_file(path)?;
            let print = parses.fingerprint_of(first.bytes());
            // Another path to bytes already read (a link, a copy) is the
            // same NEFF: loaded, measured and judged as that one.
            if let Some(&i) = by_print.get(&print) {
                by_path.insert(path.clone(), i);
                by_inode.extend(inode.map(|n| (n, i)));
                continue;
            }
            let bytes = if first.mapped().is_some() {
                drop(first);
                read_file(path)?
            } else {
                first
            };
            let neff = match bytes.mapped() {
                Some(m) => container::open_mapped(m, &opts).ok(),
                None => container::open(bytes.bytes(), &opts).ok(),
            };
            let lnc = neff.as_ref().and_then(|n| n.header().declared_lnc());
            opened.push(neff);
            by_print.insert(print, files.len());
            by_inode.extend(inode.map(|n| (n, files.len())));
            by_path.insert(path.clone(), files.len());
            files.push(NeffFile {
                path: path.clone(),
                bytes,
                print,
                lnc,
            });
        }
        // With no architecture named, the first NEFF's own.
        let first = opened.first().and_then(Option::as_ref);
        let (config, world) = super::world::settle(d, tune(settings.for_neff(first), count))?;
        // The deployment's own mistakes, before any load runs.
        let chip = Geometry::for_arch(config.topology.arch);
        if let Ok(visible) = config.logical_cores(&chip, config.topology.chips.max(1)) {
            let mut on = match config.topology.instance {
                Some(i) if world.is_some_and(|w| w.hosts > 1) => format!(
                    "{} hosts of {} at LNC {}",
                    world.map_or(1, |w| w.hosts),
                    i.name,
                    config.lnc_size()
                ),
                Some(i) => format!("{} at LNC {}", i.name, config.lnc_size()),
                None => format!(
                    "{} chip{} of {} at LNC {}",
                    config.topology.chips.max(1),
                    if config.topology.chips > 1 { "s" } else { "" },
                    config.topology.arch.instance(),
                    config.lnc_size()
                ),
            };
            // The deployment numbers the visible cores only.
            if let Some(list) = &config.topology.visible_cores {
                on.push_str(&format!(" with {}={}", list.var, list.value));
            }
            d.validate(visible.len() as u32, &on)?;
        }
        if let Some(l) = d
            .lnc
            .filter(|l| !config.topology.arch.lnc_sizes().contains(l))
        {
            return Err(DeploymentError {
                place: d.lnc_origin.clone().unwrap_or_else(|| "lnc".into()),
                what: format!(
                    "{} cores take logical-core size {:?}, not {l}",
                    config.topology.arch.instance(),
                    config.topology.arch.lnc_sizes()
                ),
            }
            .into());
        }
        Ok(Session {
            config,
            files,
            by_path,
            parses,
            opened: Mutex::new(opened),
            world,
            collectives: Mutex::default(),
        })
    }

    /// The collectives of file `i`, read from its parse once (the parse
    /// the cache keeps for its loads): `None` when it does not parse (its
    /// load says why).
    pub(super) fn collectives_of(
        &self,
        rt: &Runtime,
        print: &Fingerprinted<'_>,
        i: usize,
    ) -> Option<Arc<NeffCc>> {
        let mut known = self.collectives.lock().unwrap_or_else(|p| p.into_inner());
        known
            .entry(i)
            .or_insert_with(|| {
                rt.parse_fingerprinted(print, self.take_opened(i))
                    .ok()
                    .map(|parsed| Arc::new(NeffCc::of(&parsed.model)))
            })
            .clone()
    }

    /// The container of file `i` opened for its first load, once.
    fn take_opened(&self, i: usize) -> Option<Neff> {
        self.opened
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(i)
            .and_then(Option::take)
    }

    /// Each file fingerprinted once under the session's parse cache.
    pub fn prints(&self) -> Vec<Fingerprinted<'_>> {
        self.files
            .iter()
            .map(|f| self.parses.fingerprinted_as(f.bytes.bytes(), f.print))
            .collect()
    }

    pub fn parse_count(&self) -> u64 {
        self.parses.count()
    }

    /// The NEFF a path of the deployment names.
    pub fn file_index(&self, path: &Path) -> Option<usize> {
        self.by_path.get(path).copied()
    }
}

/// A refusal as the watch of its device saw it.
pub(crate) struct Caught {
    device: u32,
    pools: Vec<crate::device::PoolFree>,
    request: Refusal,
    in_place: bool,
    what: String,
    memory: MemoryReport,
    log: Vec<LogLine>,
}

#[derive(Default)]
struct WatchState {
    armed: bool,
    refused: Option<Caught>,
    /// Each allocation that succeeded, with its owner.
    recording: Option<Vec<Taped>>,
}

/// Watches one device (`ND nd`): the first refusal while armed, reported
/// then as the runtime reports it (the memory as the refusal found it, the
/// NEFFs named from the runtime's book of names while they hold memory,
/// the refused load's included); and, while recording, every allocation
/// that succeeds.
pub(crate) struct Watch {
    nd: u32,
    /// The device watched (weak: the device holds its watch).
    device: std::sync::Weak<Device>,
    geometry: Geometry,
    lnc: u32,
    /// The line whose report of a refusal the log is.
    line: crate::line::RuntimeLine,
    /// The runtime logs its usage report of a refusal (from 2.33,
    /// `NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG=0` silences it).
    oom_log: bool,
    names: Arc<ModelNames>,
    state: Mutex<WatchState>,
}

impl Watch {
    fn state(&self) -> MutexGuard<'_, WatchState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn disarm(&self) {
        let mut s = self.state();
        s.armed = false;
        s.refused = None;
    }

    pub(super) fn take_refusal(&self) -> Option<Caught> {
        self.state().refused.take()
    }

    pub fn record(&self) {
        self.state().recording = Some(Vec::new());
    }

    pub fn recorded(&self) -> Vec<Taped> {
        self.state().recording.take().unwrap_or_default()
    }
}

impl Observer for Watch {
    /// Only a recording reads each allocation.
    fn wants_allocations(&self) -> bool {
        self.state().recording.is_some()
    }

    fn wants_refusals(&self) -> bool {
        let s = self.state();
        s.armed && s.refused.is_none()
    }

    fn refused(&self, req: &AllocReq<'_>, _error: &DeviceError, ledger: &Ledger) {
        let mut s = self.state();
        if !s.armed || s.refused.is_some() {
            return;
        }
        let memory = MemoryReport::from_ledger(self.nd, &self.geometry, ledger);
        let request = Refusal::of(req);
        let log = if self.oom_log {
            memory.refusal_log(&request, self.lnc, self.line, |h| self.names.get(h))
        } else {
            Vec::new()
        };
        let pools = self
            .device
            .upgrade()
            .and_then(|d| Some(d.pools(d.geometry().hbm_of(req.core).ok()?)))
            .unwrap_or_default();
        s.refused = Some(Caught {
            device: self.nd,
            pools,
            request,
            in_place: matches!(req.place, Place::Under(Some(_))),
            what: req.hint.to_string(),
            memory,
            log,
        });
    }

    fn allocated(
        &self,
        req: &AllocReq<'_>,
        result: Result<&crate::device::Allocation, &DeviceError>,
    ) {
        if result.is_ok() {
            if let Some(r) = self.state().recording.as_mut() {
                r.push(Taped::of(req));
            }
        }
    }
}

/// Host memory a plan makes sure it can still have before every
/// [`ROOM_EVERY`] steps and each further copy the headroom counts
/// ([`crate::fallible::room`]): far more than that many steps of a real
/// NEFF hold (a few KB each), so that a host running out stops the plan
/// between two steps with `NRT_FAIL_HOST_MEM_ALLOC`, not inside one. Steps
/// of NEFFs near the variable ceiling (2^16 variables, about 100 MiB a
/// load) can still outrun it.
pub(crate) const STEP_ROOM: usize = 256 << 20;

/// Steps between two checks of [`STEP_ROOM`]: each check is an `mmap` and
/// a `munmap` (about 11 µs), a third of a small step's cost if made for
/// every one.
pub(crate) const ROOM_EVERY: usize = 16;

/// A load the deployment holds.
pub(crate) struct LiveLoad {
    pub model: Model,
    pub record: NeffRecord,
    pub io: Vec<(TensorRecord, DeviceTensor)>,
}

/// One run in progress: the runtime, its devices and what the steps hold.
pub(crate) struct Exec<'s> {
    pub session: &'s Session,
    pub prints: &'s [Fingerprinted<'s>],
    pub config: RuntimeConfig,
    pub watches: Vec<Arc<Watch>>,
    pub steps: Vec<StepReport>,
    pub loads: Vec<LiveLoad>,
    pub tensors: Vec<(TensorRecord, DeviceTensor)>,
    /// The world the loads are the ranks of: each rank's step, and the
    /// refusals the comparison of the ranks found, by step.
    pub world: Option<WorldRun>,
    /// Profiler buffers, once per physical core a load uses.
    profiled: BTreeSet<(u32, u32)>,
    profile_buffers: Vec<Owned>,
    /// Declared last: dropped after everything that holds device memory.
    pub rt: Runtime,
}

impl<'s> Exec<'s> {
    pub(super) fn start(
        session: &'s Session,
        config: &RuntimeConfig,
        prints: &'s [Fingerprinted<'s>],
    ) -> Result<Exec<'s>, PlanError> {
        let devices: Vec<Arc<Device>> = (0..config.topology.chips.max(1))
            .map(|_| started_device(config))
            .collect();
        let rt = Runtime::with_parses(config.clone(), devices, session.parses.clone())
            .map_err(PlanError::Start)?;
        let watches = rt
            .devices()
            .enumerate()
            .map(|(nd, d)| {
                let w = Arc::new(Watch {
                    nd: nd as u32,
                    device: Arc::downgrade(d),
                    geometry: d.geometry().clone(),
                    lnc: config.lnc_size(),
                    line: config.line(),
                    oom_log: config.oom_log_enabled(),
                    names: rt.model_names(),
                    state: Mutex::new(WatchState {
                        armed: true,
                        ..WatchState::default()
                    }),
                });
                d.observe(w.clone());
                w
            })
            .collect();
        Ok(Exec {
            session,
            prints,
            config: config.clone(),
            watches,
            steps: Vec::new(),
            loads: Vec::new(),
            tensors: Vec::new(),
            world: None,
            profiled: BTreeSet::new(),
            profile_buffers: Vec::new(),
            rt,
        })
    }

    /// Bytes the allocators of every device hold.
    pub fn held(&self) -> u64 {
        self.rt.devices().map(|d| d.held()).sum()
    }

    /// Bytes the allocator holds on the fullest HBM of the instance.
    pub fn fullest_hbm(&self) -> u64 {
        self.rt
            .devices()
            .flat_map(|d| (0..d.geometry().hbm_channels()).map(|h| d.channel_held(h)))
            .max()
            .unwrap_or(0)
    }

    /// The physical cores and device of a visible logical core.
    pub fn placement(&self, vnc: u32) -> Result<(u32, Vec<u32>), LoadError> {
        let (nd, device, local) = self.rt.vnc_location(vnc)?;
        let pcores = device
            .geometry()
            .pcores_of(local, self.config.lnc_size())
            .map_err(LoadError::pipeline)?;
        Ok((nd, pcores.collect()))
    }

    pub(super) fn step(&mut self, step: &Step, io_tensors: bool) -> Result<StepReport, PlanError> {
        let (vnc, outcome) = match step {
            Step::Load { file, vnc } => {
                let i = self
                    .session
                    .file_index(file)
                    .ok_or_else(|| missing(step, "the plan did not read this file"))?;
                self.load_step(i, file, *vnc, io_tensors)
            }
            Step::Tensor { name, size, vnc } => (Some(*vnc), self.tensor(name, *size, *vnc, None)),
            Step::Unload { file, vnc } => {
                let file_key = same_file(file);
                let at = self
                    .loads
                    .iter()
                    .rposition(|l| {
                        l.record.vnc == *vnc
                            && (&l.record.file == file || same_file(&l.record.file) == file_key)
                    })
                    .ok_or_else(|| {
                        missing(
                            step,
                            &format!("{} is not loaded on core {vnc}", file.display()),
                        )
                    })?;
                let live = self.loads.remove(at);
                let unloaded = self.rt.unload(&live.model).map_err(failure);
                drop(live.io);
                (Some(*vnc), unloaded)
            }
            Step::Free { name, vnc } => {
                let at = self
                    .tensors
                    .iter()
                    .rposition(|(t, _)| &t.name == name && t.vnc == *vnc)
                    .ok_or_else(|| {
                        missing(step, &format!("no tensor {name} is held on core {vnc}"))
                    })?;
                self.tensors.remove(at);
                (Some(*vnc), Ok(()))
            }
        };
        let (device, pcores) = vnc
            .and_then(|v| self.placement(v).ok())
            .map_or((None, Vec::new()), |(nd, p)| (Some(nd), p));
        let hbm_free_after = device.zip(pcores.first()).and_then(|(nd, &p)| {
            let dev = self.rt.devices().nth(nd as usize)?;
            Some(dev.free_bytes(dev.geometry().hbm_of(PCore(p)).ok()?))
        });
        Ok(StepReport {
            hbm_free_after,
            step: step.clone(),
            vnc,
            device,
            pcores,
            outcome,
            held_after: self.held(),
            fullest_hbm_after: self.fullest_hbm(),
        })
    }

    /// Loads `file` on `vnc` (or the first free core), with the profiler
    /// buffers of the physical cores it is the first load on (the load's
    /// own: refused, it leaves nothing behind), then its input and output
    /// tensors (the framework's, after the load: refused, the load stays).
    pub(super) fn load_step(
        &mut self,
        i: usize,
        path: &Path,
        vnc: Option<u32>,
        io_tensors: bool,
    ) -> (Option<u32>, Result<(), StepFailure>) {
        let opened = self.session.take_opened(i);
        // A rank of a world loads as `nrt_load_collectives` loads it; what
        // the comparison of the ranks found refuses it after that load
        // went through, as the runtime's bootstrap follows its load.
        let step = self.steps.len();
        let rank = self.world.as_ref().and_then(|w| w.rank_of(step));
        let loaded = match rank {
            Some((join, _)) => {
                self.rt
                    .load_fingerprinted_collectives(&self.prints[i], opened, vnc, join)
            }
            None => self.rt.load_fingerprinted(&self.prints[i], opened, vnc),
        };
        let model = match loaded {
            Ok(m) => m,
            Err(e) => return (vnc, Err(load_failure(e))),
        };
        let at = model.vnc;
        if let Some(refused) = rank.and_then(|(_, r)| r) {
            let _ = self.rt.unload(&model);
            return (Some(at), Err(refused));
        }
        let (device, pcores) = self.placement(at).unwrap_or_default();
        match self.first_load_buffers(device, &pcores) {
            Ok(buffers) => {
                self.profiled.extend(pcores.iter().map(|&p| (device, p)));
                self.profile_buffers.extend(buffers);
            }
            Err(e) => {
                let _ = self.rt.unload(&model);
                return (Some(at), Err(failure(e)));
            }
        }
        let h_model = self
            .rt
            .with_model(&model, |lm| lm.h_model)
            .unwrap_or(HModel(0));
        let summary = self.rt.summary(&model).ok();
        let subgraphs = summary
            .as_ref()
            .map(|s| s.pcores.iter().map(|p| p.0).collect())
            .unwrap_or_default();
        let record = NeffRecord {
            id: h_model,
            name: model.name.clone(),
            uuid: model.uuid,
            file: path.to_path_buf(),
            device,
            vnc: at,
            pcores,
            subgraphs,
            rank: model.gid,
            collectives_not_counted: summary
                .as_ref()
                .and_then(|s| Collective::uncounted_note(&s.collectives)),
        };
        self.loads.push(LiveLoad {
            model: model.clone(),
            record,
            io: Vec::new(),
        });
        if io_tensors {
            let live = self.loads.last_mut().expect("just pushed");
            let bound = self.rt.allocate_io(&model, |t, x| {
                live.io
                    .push((tensor_record(&t.name, t.size, at, Some(h_model), &x), x));
            });
            if let Err(e) = bound {
                return (Some(at), Err(failure(e)));
            }
        }
        (Some(at), Ok(()))
    }

    /// The profiler buffers the configuration sizes, on each of `pcores`
    /// that no load has used yet: the runtime's, reported as Profiler
    /// Buffers. All or none: those allocated before a refusal are released.
    pub(super) fn first_load_buffers(
        &self,
        device: u32,
        pcores: &[u32],
    ) -> Result<Vec<Owned>, LoadError> {
        let mut buffers = Vec::new();
        if self.config.libnrt.profile_buffers.is_empty() {
            return Ok(buffers);
        }
        let Some(dev) = self.rt.devices().nth(device as usize) else {
            return Ok(buffers);
        };
        for &p in pcores {
            if self.profiled.contains(&(device, p)) {
                continue;
            }
            for &(kind, bytes) in &self.config.libnrt.profile_buffers {
                let hint = format!("profile buffer {kind}");
                let req = AllocReq {
                    size: bytes,
                    align: 0,
                    core: PCore(p),
                    usage: MemUsage::Notification,
                    owner: Owner::Runtime,
                    place: Place::Kernel,
                    hint: &hint,
                };
                buffers.push(Owned::new(dev, req).map_err(LoadError::pipeline)?);
            }
        }
        Ok(buffers)
    }

    fn tensor(
        &mut self,
        name: &str,
        size: u64,
        vnc: u32,
        io_of: Option<HModel>,
    ) -> Result<(), StepFailure> {
        let t = allocate(&self.rt, name, size, vnc, io_of).map_err(failure)?;
        self.tensors.push(t);
        Ok(())
    }

    /// The first refusal of the run, if a refused step ended it.
    pub(super) fn refusal(&mut self) -> Option<PlanRefusal> {
        let step = self.steps.iter().position(|s| s.outcome.is_err())?;
        let c = self.watches.iter().find_map(|w| w.take_refusal())?;
        Some(PlanRefusal {
            step,
            device: c.device,
            request: c.request,
            in_place: c.in_place,
            what: c.what,
            memory: c.memory,
            log: c.log,
            pools: c.pools,
        })
    }
}

/// A device tensor for visible logical core `vnc`, with its record.
/// The most bytes, in whole granules of at most `max_granules`, that `fits`
/// accepts (0 when not one granule does): a bisection whose invariant is
/// that `lo` granules fit and `hi + 1` do not. `fits` allocates and
/// releases, so it is asked only on the state it leaves as it found.
pub(crate) fn largest_fitting(max_granules: u64, fits: impl Fn(u64) -> bool) -> u64 {
    if max_granules == 0 || !fits(1) {
        return 0;
    }
    let (mut lo, mut hi) = (1u64, max_granules);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo * crate::device::GRANULE
}

pub(crate) fn allocate(
    rt: &Runtime,
    name: &str,
    size: u64,
    vnc: u32,
    io_of: Option<HModel>,
) -> Result<(TensorRecord, DeviceTensor), LoadError> {
    let t = rt.allocate_tensor(vnc, size, name)?;
    Ok((tensor_record(name, size, vnc, io_of, &t), t))
}

/// The plan's record of tensor `t`, allocated as `name` of `size` bytes
/// on visible logical core `vnc` (for the input or output of `io_of`).
fn tensor_record(
    name: &str,
    size: u64,
    vnc: u32,
    io_of: Option<HModel>,
    t: &DeviceTensor,
) -> TensorRecord {
    TensorRecord {
        name: name.to_string(),
        size,
        vnc,
        device: t.device(),
        pcore: t.core().0,
        hbm: t.hbm(),
        io_of,
    }
}

pub(crate) fn failure(e: LoadError) -> StepFailure {
    StepFailure {
        stage: e.stage(),
        status: e.status(),
        message: e.to_string(),
        own_limit: None,
        damaged: e.damaged(),
    }
}

/// A refused load as the plan reports it: neffld's own ceilings as
/// neffld's, with the setting that raises them. (A NEFF of another chip is
/// named against the instance's chip by the load's own error.)
pub(crate) fn load_failure(e: LoadError) -> StepFailure {
    use crate::container::ContainerError as C;
    match &e {
        LoadError::Container(C::InflateLimit { limit }) => StepFailure {
            stage: "neffld",
            status: e.status(),
            message: format!(
                "not the runtime's refusal but neffld's own ceiling: the NEFF's payload inflates past {limit} bytes (by default 64 times the compressed payload, 256 MiB to 32 GiB, against decompression bombs); raise it with `neffld plan --max-inflated BYTES` (NEFFLD_MAX_INFLATED)"
            ),
            own_limit: Some("--max-inflated / NEFFLD_MAX_INFLATED"),
            damaged: false,
        },
        LoadError::Container(C::TooManyMembers { limit, .. }) => StepFailure {
            stage: "neffld",
            status: e.status(),
            message: format!(
                "not the runtime's refusal but neffld's own ceiling: the NEFF's archive has more than {limit} members; raise it with --env NEFFLD_MAX_MEMBERS=N"
            ),
            own_limit: Some("NEFFLD_MAX_MEMBERS"),
            damaged: false,
        },
        _ => failure(e),
    }
}

fn missing(step: &Step, what: &str) -> PlanError {
    PlanError::Deployment(DeploymentError {
        place: format!("step '{step}'"),
        what: what.to_string(),
    })
}
