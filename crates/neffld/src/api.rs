//! S0: the public load API — what `nrt_init`, `nrt_load`, `nrt_unload`,
//! `nrt_get_model_tensor_info` and `nrt_close` do, as a Rust [`Runtime`].
//!
//! Every entry point checks the runtime state first; `load` then applies the
//! guard of stage.md §2 in the reference order (state, header preflight, LNC
//! gate, logical-core claim) before the pipeline runs. The C signature's
//! deprecated `vnc_count` and its `-1` for "any core" are the C library's
//! (`neffld-nrt`): here the core is an `Option`.
//!
//! A load is a transaction: the logical-core claim is a `Claim` guard and
//! everything staged on the device the [`CoreImage`]s that own it, both released
//! on drop unless the load registers its model. A load that fails — or
//! panics — anywhere leaves the claims, the device and the registry exactly
//! as they were; a panic becomes [`LoadError::Panicked`] (`NRT_FAILURE`).
//!
//! Close and load are ordered: a load holds the runtime's state for reading
//! from its state check to its registration, and `close` takes it for
//! writing, so a load either completes before the close (which then unloads
//! it) or fails with `NRT_CLOSED`. Every runtime has its own generation and
//! every [`Model`] carries it: a handle of another runtime (one closed
//! before a re-init) is `NRT_INVALID_HANDLE`, never a model of this one.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard};
use std::time::{Duration, Instant};

use thiserror::Error;

use crate::cache::{Known, ParseCache};
use crate::comm::{self, CollectivesError, Communicators, Join};
use crate::config::{ConfigError, DeviceKind, RuntimeConfig};
use crate::container::{self, ContainerError, Neff, NeffHeader};
use crate::device::{
    AllocReq, AllocSet, Device, DeviceError, Geometry, MemUsage, NullDevice, Owned, Owner, Place,
    SimDevice,
};
use crate::ids::{HModel, HNn, LCore, PCore, RuntimeGen};
#[cfg(feature = "testkit")]
pub use crate::loaded::LoadedModel;
#[cfg(not(feature = "testkit"))]
pub(crate) use crate::loaded::LoadedModel;
pub(crate) use crate::loaded::Parsed;
pub use crate::loaded::Timings;
use crate::manifest::ParseOptions;
use crate::parse::{self, ParseError};
use crate::registry::{ModelNames, Registry, RegistryError};
use crate::stage::validate::{self, Finding};
use crate::stage::{self, CoreImage, Cores, StageError, StageOptions};
use crate::NrtStatus;

/// Why a call failed: the layer's own error, or a guard of this layer.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The runtime was closed (`NRT_CLOSED`): a load racing a close, or a
    /// call after it.
    #[error("NRT already closed")]
    Closed,
    /// The core asked for is not one this process may use
    /// (`NEURON_RT_VISIBLE_CORES`); a front end names its own flag.
    #[error("Invalid vnc {vnc}, visible vncs: {visible}")]
    BadVnc {
        /// The visible index asked for.
        vnc: u32,
        /// How many logical cores are visible (valid: `0..visible`).
        visible: u32,
    },
    /// Every visible core holds a model and none was named
    /// (`NRT_LOAD_NOT_ENOUGH_NC`); the NEFF's name.
    #[error("No free logical NeuronCore to load {0}")]
    NoFreeVnc(String),
    /// A model handle of another runtime (one closed before a re-init):
    /// `NRT_INVALID_HANDLE`, never a model of this one.
    #[error("Failed to find model: {h_nn} belongs to runtime {model}, not to this runtime ({runtime})", h_nn = .h_nn.0)]
    ForeignModel {
        /// The handle given.
        h_nn: HNn,
        /// The runtime that gave it out.
        model: RuntimeGen,
        /// This runtime.
        runtime: RuntimeGen,
    },
    /// A bug: the load panicked, and its guards released everything it had
    /// staged, so the runtime stays usable (`NRT_FAILURE`).
    #[error("the load panicked ({0}); everything it had staged was released")]
    Panicked(String),
    /// `nrt_load_collectives` refused the load: its root communicator,
    /// the instance's topology, the core's collectives world, or the
    /// caller's rank in the NEFF's replica groups.
    #[error("nrt_load_collectives: {0}")]
    Collectives(#[from] CollectivesError),
    /// The container's gates (S1) refused the bytes.
    #[error(transparent)]
    Container(#[from] ContainerError),
    /// A runtime variable or setting that cannot be honoured.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The manifests, staging, the device or the model table refused.
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
    /// The staged model broke an invariant the validator checks
    /// (`NEFFLD_CHECK`): a bug of neffld's, never of the NEFF.
    #[error("the staged model failed validation: {}", .0.iter().map(|f| format!("{}: {}", f.subgraph, f.what)).collect::<Vec<_>>().join("; "))]
    Validation(Vec<Finding>),
}

impl LoadError {
    /// The `NRT_STATUS` a C caller sees.
    pub fn status(&self) -> NrtStatus {
        match self {
            LoadError::Closed => NrtStatus::Closed,
            LoadError::BadVnc { .. } => NrtStatus::Invalid,
            LoadError::Collectives(e) => e.status(),
            LoadError::NoFreeVnc(_) => NrtStatus::LoadNotEnoughNc,
            LoadError::ForeignModel { .. } => NrtStatus::InvalidHandle,
            LoadError::Panicked(_) => NrtStatus::Failure,
            LoadError::Container(e) => e.status(),
            LoadError::Config(e) => e.status(),
            LoadError::Pipeline(e) => e.status(),
            LoadError::Validation(_) => NrtStatus::Failure,
        }
    }

    /// The NEFF's own bytes are damaged ([`ContainerError::damaged`]).
    pub fn damaged(&self) -> bool {
        matches!(self, LoadError::Container(e) if e.damaged())
    }

    /// The pipeline stage that refused the load, as tools name it.
    pub fn stage(&self) -> &'static str {
        match self {
            LoadError::Container(_) => "container",
            LoadError::Pipeline(e) => e.stage(),
            LoadError::Validation(_) => "validate",
            LoadError::Config(_) => "config",
            LoadError::Collectives(_) => "collectives",
            _ => "guard",
        }
    }
}

/// A refusal from inside the pipeline: the manifests and kernel records
/// (S2–S3), staging and relocation (S4–S5), the simulated device, or the
/// model table. The message names what and where and [`status`] is what
/// `nrt_load` returns; the case behind it is the pipeline's own (its cases
/// follow the reference runtime's lines and change with them), so it is
/// not matched on — [`stage`] says which part of the pipeline refused.
///
/// [`status`]: PipelineError::status
/// [`stage`]: PipelineError::stage
#[derive(Debug, Error)]
#[error(transparent)]
pub struct PipelineError(Cause);

#[cfg(feature = "testkit")]
pub use cause::Cause;
#[cfg(not(feature = "testkit"))]
use cause::Cause;

mod cause {
    use super::{DeviceError, Error, ParseError, RegistryError, StageError};

    /// What is behind a [`PipelineError`](super::PipelineError): the layer's
    /// own error. Nameable by the project's tests only (the `testkit` feature).
    #[derive(Debug, Error)]
    pub enum Cause {
        /// S2–S3.
        #[error(transparent)]
        Parse(ParseError),
        /// S4–S5.
        #[error(transparent)]
        Stage(StageError),
        /// The device refused an allocation or a copy.
        #[error(transparent)]
        Device(DeviceError),
        /// The model table refused a registration or an unload.
        #[error(transparent)]
        Registry(RegistryError),
    }
}

impl PipelineError {
    /// The `NRT_STATUS` a C caller sees.
    pub fn status(&self) -> NrtStatus {
        match &self.0 {
            Cause::Parse(e) => e.status(),
            Cause::Stage(e) => e.status(),
            Cause::Device(e) => e.status(),
            Cause::Registry(e) => e.status(),
        }
    }

    /// The part of the pipeline that refused, as tools name it ("parse",
    /// "stage", "device", "registry"), for a report's `stage` field.
    pub fn stage(&self) -> &'static str {
        match &self.0 {
            Cause::Parse(_) => "parse",
            Cause::Stage(_) => "stage",
            Cause::Device(_) => "device",
            Cause::Registry(_) => "registry",
        }
    }

    /// The layer's own error, for tests that check which case refused.
    #[cfg(feature = "testkit")]
    pub fn cause(&self) -> &Cause {
        &self.0
    }
}

/// The layer errors a [`PipelineError`] wraps. Not `From` impls on the
/// public types: an impl would make the layer's error reachable from
/// outside (`unnameable_types`), so the pipeline converts with
/// [`LoadError::pipeline`] (`map_err`) instead of `?`.
macro_rules! cause_from {
    ($($err:ident => $case:ident),* $(,)?) => {$(
        impl From<$err> for Cause {
            fn from(e: $err) -> Cause {
                Cause::$case(e)
            }
        }
    )*};
}

cause_from!(
    ParseError => Parse,
    StageError => Stage,
    DeviceError => Device,
    RegistryError => Registry,
);

impl PipelineError {
    pub(crate) fn new(cause: impl Into<Cause>) -> PipelineError {
        PipelineError(cause.into())
    }
}

impl LoadError {
    /// A layer's error as the load's.
    pub(crate) fn pipeline(cause: impl Into<Cause>) -> LoadError {
        LoadError::Pipeline(PipelineError::new(cause))
    }
}

/// One tensor a client binds against (`nrt_tensor_info_t`): the manifest
/// layer's record, re-exported as part of this API.
pub use crate::manifest::{NrtDtype, TensorInfo, TensorUsage};

/// One collective of a loaded NEFF ([`crate::report::Collective`]).
pub use crate::kbin::collective::CollectiveInfo as Collective;

/// The caller's handle of a loaded model (`nrt_model_t`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Model {
    /// The runtime that loaded it; every other runtime refuses the handle.
    pub runtime: RuntimeGen,
    /// Its registry handle, what the runtime's logs name.
    pub h_nn: HNn,
    /// The logical core it claims as the runtime numbers it for this
    /// process: its index among the visible cores (what `nrt_load`'s `vnc`
    /// and `nrt_get_model_info` say). `NEURON_RT_VISIBLE_CORES=2` makes the
    /// instance's logical core 2 this process's core 0.
    pub vnc: u32,
    /// The same core as the instance numbers it (what the device's own
    /// tools name, and which physical cores it is): `vnc` unless only some
    /// cores are visible.
    pub lcore: LCore,
    /// The NEFF's name, from its header.
    pub name: String,
    /// The NEFF's UUID, from its header (what the parse cache keys on).
    pub uuid: [u8; 16],
    /// Global device id of a collectives load (`nrt_load_collectives`'s
    /// rank; its world is [`ModelSummary::join`]'s).
    pub gid: Option<u32>,
}

/// A loaded model as [`Runtime::summary`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelSummary {
    /// The NEFF's name, from its header.
    pub name: String,
    /// The NEFF's UUID, from its header.
    pub uuid: [u8; 16],
    /// The logical core it claims, numbered among the visible ones
    /// ([`Model::vnc`]).
    pub vnc: u32,
    /// The same core as the instance numbers it ([`Model::lcore`]).
    pub lcore: LCore,
    /// The device (`ND n`) its cores are on.
    pub device: u32,
    /// Its id in memory reports (`H_MODEL`).
    pub h_model: HModel,
    /// One physical core per subgraph, in subgraph order.
    pub pcores: Vec<PCore>,
    /// Parse and staging warnings.
    pub warnings: Vec<String>,
    /// Where the load's time went.
    pub timings: Timings,
    /// The NEFF's collectives, subgraph by subgraph in record order.
    pub collectives: Arc<[Collective]>,
    /// The rank and world of a collectives load (`nrt_load_collectives`).
    pub join: Option<Join>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RtState {
    Init,
    Closed,
}

/// Generations handed to runtimes, process-wide (0 is never used).
static GENERATIONS: AtomicU64 = AtomicU64::new(1);

/// One device of the instance (`ND n`): the device, its physical cores'
/// state, and what the runtime allocated on it when it started (held for as
/// long as the runtime lives, freed when it drops).
struct Chip {
    device: Arc<Device>,
    cores: Arc<Cores>,
    _start: AllocSet,
}

/// An initialised runtime: the devices of an instance, their logical cores
/// (numbered across the devices, as the runtime numbers them), the model
/// table. What `nrt_init` starts and every front end loads through, so the
/// command, a C program and a Python script meet the same gates.
///
/// A load, configured as every front end configures one: what the user
/// asked and the environment first ([`Settings::resolve`], here neither),
/// then what the NEFF itself declares ([`Settings::for_neff`]).
///
/// ```
/// use neffld::api::Runtime;
/// use neffld::settings::{Asked, Settings};
///
/// let bytes = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/demo.neff"));
/// let settings = Settings::resolve(&Asked::default(), |_| None)?;
/// let neff = neffld::neff::open(bytes, &settings.open_options())?;
/// let rt = Runtime::new(settings.for_neff(Some(&neff)))?;
/// assert_eq!(rt.config().topology.arch, neffld::Arch::Sunda); // the demo is a trn1 NEFF
///
/// // The container is opened once: `load_opened` does not inflate it again.
/// let model = rt.load_opened(bytes, neff, None)?;
/// let summary = rt.summary(&model)?;
/// assert_eq!((summary.name.as_str(), summary.pcores.len()), ("demo", 1));
/// rt.unload(&model)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// [`Settings::resolve`]: crate::settings::Settings::resolve
/// [`Settings::for_neff`]: crate::settings::Settings::for_neff
pub struct Runtime {
    config: RuntimeConfig,
    chips: Vec<Chip>,
    /// Logical cores of each device.
    lcores_per_chip: u32,
    generation: RuntimeGen,
    /// Read-held by every call for as long as it works on the runtime;
    /// `close` takes it for writing.
    state: RwLock<RtState>,
    /// Per visible logical core: how many models claim it.
    vnc_usage: Mutex<Vec<u32>>,
    /// Index → device logical core, for `NEURON_RT_VISIBLE_CORES`.
    visible: Vec<u32>,
    registry: Registry<LoadedModel>,
    /// The name of every load holding device memory, by `H_MODEL`.
    names: Arc<ModelNames>,
    cache: Arc<ParseCache<Parsed>>,
    /// Parses run (S1–S3), for tests of the cache and for diagnostics.
    parses: Arc<AtomicU64>,
    /// Earlier stagings, replayed by later loads of the same parse on the
    /// same cores ([`RuntimeConfig::replays`]).
    recipes: Option<stage::Recipes>,
    /// Each logical core's global communicator, as collectives loads set
    /// them up.
    comms: Communicators,
}

/// A runtime's parse cache, handed to another runtime over other devices
/// ([`Runtime::with_parses`]): a planner that plans a deployment again
/// under another setting parses each NEFF once.
#[derive(Clone)]
pub(crate) struct Parses {
    cache: Arc<ParseCache<Parsed>>,
    count: Arc<AtomicU64>,
}

/// A NEFF's bytes with their fingerprint under one parse cache, taken once
/// (`Parses::fingerprint_of`): a retained parse is matched to bytes by that
/// fingerprint, which otherwise costs a pass over the file at every load.
/// The borrow keeps the bytes from changing while it lives.
pub(crate) struct Fingerprinted<'a> {
    bytes: &'a [u8],
    known: Known,
    cache: Arc<ParseCache<Parsed>>,
}

impl Parses {
    /// A parse cache of its own, with `config`'s policy.
    pub(crate) fn new(config: &RuntimeConfig) -> Parses {
        Parses {
            cache: Arc::new(ParseCache::new(config.cache_policy())),
            count: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The fingerprint of `bytes` under this cache, taken once for every
    /// later load of the same bytes ([`Parses::fingerprinted_as`]), which
    /// may be read from another buffer by then (a file mapped again so its
    /// pages are released as it is parsed).
    pub(crate) fn fingerprint_of(&self, bytes: &[u8]) -> u128 {
        self.cache.fingerprint_of(bytes)
    }

    /// `bytes` with a fingerprint taken of the same bytes before
    /// ([`Parses::fingerprint_of`]); the caller vouches that they are.
    pub(crate) fn fingerprinted_as<'a>(&self, bytes: &'a [u8], print: u128) -> Fingerprinted<'a> {
        Fingerprinted {
            bytes,
            known: Known {
                print,
                sample: self.cache.sample_of(bytes),
            },
            cache: Arc::clone(&self.cache),
        }
    }

    /// Parses run (S1–S3) by every runtime sharing them.
    pub(crate) fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }
}

/// A client's device tensor (`nrt_tensor_allocate`, device placement),
/// freed when dropped.
#[derive(Debug)]
pub struct DeviceTensor {
    alloc: Owned,
    vnc: u32,
    device: u32,
    core: PCore,
    hbm: u32,
}

impl DeviceTensor {
    /// Whether it lives on one of `rt`'s devices: a tensor of a runtime
    /// closed since (its devices are its own) is not `rt`'s, though both
    /// number their cores alike.
    pub fn is_on(&self, rt: &Runtime) -> bool {
        rt.devices().any(|d| Arc::ptr_eq(d, self.alloc.device()))
    }

    /// The logical core it was allocated on, as the caller numbered it.
    pub fn vnc(&self) -> u32 {
        self.vnc
    }

    /// The device (`ND n`) it is on.
    pub fn device(&self) -> u32 {
        self.device
    }

    /// The physical core it is charged to.
    pub fn core(&self) -> PCore {
        self.core
    }

    /// The HBM of that core.
    pub fn hbm(&self) -> u32 {
        self.hbm
    }

    /// Its physical address on the device.
    pub fn physical_address(&self) -> u64 {
        self.alloc.allocation().pa.0
    }

    /// `nrt_tensor_read`: the tensor's bytes from `offset` into `out`,
    /// refused when they do not lie inside the tensor or the device keeps
    /// no bytes (the accounting-only device).
    pub fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), PipelineError> {
        self.alloc
            .device()
            .read(self.alloc.handle(), offset, out)
            .map_err(PipelineError::new)
    }

    /// `nrt_tensor_write`: `data` into the tensor at `offset`, refused
    /// when it does not lie inside the tensor.
    pub fn write(&self, offset: u64, data: &[u8]) -> Result<(), PipelineError> {
        self.alloc
            .device()
            .write(self.alloc.handle(), offset, data)
            .map_err(PipelineError::new)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A load's claim on a visible logical core: released on drop unless the
/// load registers its model ([`Claim::keep`]); the registered model's unload
/// releases it then.
struct Claim<'a> {
    usage: &'a Mutex<Vec<u32>>,
    idx: usize,
    kept: bool,
}

impl Claim<'_> {
    fn keep(mut self) {
        self.kept = true;
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        if !self.kept {
            unclaim(self.usage, self.idx);
        }
    }
}

fn unclaim(usage: &Mutex<Vec<u32>>, idx: usize) {
    if let Some(u) = lock(usage).get_mut(idx) {
        *u = u.saturating_sub(1);
    }
}

testkit_pub! {
    /// The configured simulated device as the runtime finds it: the part of
    /// the regions its line holds at start that its own start-up allocations
    /// ([`crate::memory::start_plan`], made by [`Runtime::with_devices`]) do not fill
    /// is held back like the firmware carve-out, so that a model's first
    /// allocations land where the captures show them.
    fn started_device(config: &RuntimeConfig) -> Arc<Device> {
        let geometry = Geometry::for_arch(config.topology.arch);
        let held = config.start_plan(&geometry).held;
        match config.loader.device {
            DeviceKind::Sim => Arc::new(SimDevice::as_started(geometry, held)),
            DeviceKind::Null => Arc::new(NullDevice::as_started(geometry, held)),
        }
    }
}

/// What the runtime allocates for itself on every physical core when it
/// starts, before any model ([`crate::memory::start_plan`]): real allocations, so
/// that what the allocator refuses and what every memory report says agree.
/// What the runtime allocates for itself when it starts, on the physical
/// cores of `device` in `pcores`: the cores of its visible logical cores
/// (a process that sees one core of an instance starts that core only).
fn start(
    device: &Arc<Device>,
    config: &RuntimeConfig,
    pcores: &[u32],
) -> Result<AllocSet, DeviceError> {
    let geometry = device.geometry();
    let plan = config.start_plan(geometry);
    let mut held = AllocSet::new(device);
    for &(core, usage, size, place) in &plan.rows {
        if !pcores.contains(&core) {
            continue;
        }
        held.alloc(AllocReq {
            size,
            align: 0,
            core: PCore(core),
            usage,
            owner: Owner::Runtime,
            place,
            hint: usage.name(),
        })?;
    }
    Ok(held)
}

impl Runtime {
    /// `nrt_init`: a runtime on the configured simulated devices (one per
    /// chip of the instance).
    pub fn new(config: RuntimeConfig) -> Result<Runtime, LoadError> {
        let devices = (0..config.topology.chips.max(1))
            .map(|_| started_device(&config))
            .collect();
        Runtime::with_devices(config, devices)
    }

    testkit_pub! {
        /// A runtime on one given device (tests use custom geometries and faults).
        fn with_device(config: RuntimeConfig, device: Arc<Device>) -> Result<Runtime, LoadError> {
            Runtime::with_devices(config, vec![device])
        }
    }

    testkit_pub! {
        /// A runtime on the devices of an instance, `ND 0` first; every device
        /// has the same geometry.
        fn with_devices(
            config: RuntimeConfig,
            devices: Vec<Arc<Device>>,
        ) -> Result<Runtime, LoadError> {
            let parses = Parses::new(&config);
            Runtime::with_parses(config, devices, parses)
        }
    }

    /// As [`Runtime::with_devices`], sharing the parses of another runtime
    /// (its cache policy stays).
    pub(crate) fn with_parses(
        config: RuntimeConfig,
        devices: Vec<Arc<Device>>,
        parses: Parses,
    ) -> Result<Runtime, LoadError> {
        let Some(first) = devices.first() else {
            return Err(LoadError::pipeline(DeviceError::Invalid {
                reason: "an instance needs at least one device".into(),
            }));
        };
        if let Some(other) = devices.iter().find(|d| d.geometry() != first.geometry()) {
            return Err(LoadError::pipeline(DeviceError::Invalid {
                reason: format!(
                    "the devices of one instance have one geometry: {:?} differs from {:?}",
                    other.geometry(),
                    first.geometry()
                ),
            }));
        }
        let cores = first.geometry().cores();
        let visible = config.logical_cores(first.geometry(), devices.len() as u32)?;
        let lcores_per_chip = cores / config.lnc_size();
        let scratchpad = config.scratchpad_mode();
        if config.contiguous_scratchpad_asked() && !scratchpad.contiguous {
            tracing::info!("Contiguous Scratchpad feature is disabled on LNC 1");
        }
        for w in config.start_warnings() {
            tracing::warn!("{w}");
        }
        let lnc = config.lnc_size();
        let chips = devices
            .into_iter()
            .enumerate()
            .map(|(nd, device)| {
                // The physical cores of this chip's visible logical cores.
                let pcores: Vec<u32> = visible
                    .iter()
                    .filter(|&&l| l / lcores_per_chip == nd as u32)
                    .flat_map(|&l| {
                        let local = l % lcores_per_chip;
                        local * lnc..(local + 1) * lnc
                    })
                    .collect();
                Ok(Chip {
                    _start: start(&device, &config, &pcores)?,
                    cores: Arc::new(Cores::new(cores, scratchpad)),
                    device,
                })
            })
            .collect::<Result<Vec<Chip>, DeviceError>>()
            .map_err(LoadError::pipeline)?;
        let replays = config.replays() && chips.iter().all(|c| !c.device.keeps_writes());
        Ok(Runtime {
            recipes: replays.then(stage::Recipes::default),
            vnc_usage: Mutex::new(vec![0; visible.len()]),
            visible,
            cache: parses.cache,
            parses: parses.count,
            config,
            chips,
            lcores_per_chip,
            generation: RuntimeGen(GENERATIONS.fetch_add(1, Ordering::Relaxed)),
            state: RwLock::new(RtState::Init),
            registry: Registry::default(),
            names: Arc::default(),
            comms: Communicators::default(),
        })
    }

    /// The configuration the runtime started with, settings resolved.
    pub fn config(&self) -> &RuntimeConfig {
        &self.config
    }

    /// [`Runtime::load`] (or [`Runtime::load_opened`], with `opened`) of
    /// bytes fingerprinted before: a retained parse of them is reused
    /// without reading the file again. A fingerprint taken under another
    /// runtime's cache is not used.
    pub(crate) fn load_fingerprinted(
        &self,
        neff: &Fingerprinted<'_>,
        opened: Option<Neff>,
        core: Option<u32>,
    ) -> Result<Model, LoadError> {
        let known = Arc::ptr_eq(&neff.cache, &self.cache).then_some(neff.known);
        self.load_with_gid(neff.bytes, core, None, opened.into(), known)
    }

    /// [`Runtime::load_collectives`] of bytes fingerprinted before
    /// ([`Runtime::load_fingerprinted`]): a planner's rank of a world.
    pub(crate) fn load_fingerprinted_collectives(
        &self,
        neff: &Fingerprinted<'_>,
        opened: Option<Neff>,
        core: Option<u32>,
        join: Join,
    ) -> Result<Model, LoadError> {
        self.collectives_guard(join)?;
        let known = Arc::ptr_eq(&neff.cache, &self.cache).then_some(neff.known);
        self.load_with_gid(neff.bytes, core, Some(join), opened.into(), known)
    }

    /// `model`'s input and output tensors allocated on its logical core,
    /// as a framework allocates them to execute it: each of
    /// [`Runtime::tensor_info`]'s with bytes, inputs then outputs, handed to
    /// `keep` as it is allocated. A load holds none of them; a plan charges
    /// them after each load, and `neffld load` counts them with this very
    /// call. The first refusal ends it and is returned; what `keep` took
    /// stays the caller's.
    pub fn allocate_io(
        &self,
        model: &Model,
        mut keep: impl FnMut(&TensorInfo, DeviceTensor),
    ) -> Result<(), LoadError> {
        for t in self.tensor_info(model)?.iter().filter(|t| t.size > 0) {
            keep(t, self.allocate_tensor(model.vnc, t.size, &t.name)?);
        }
        Ok(())
    }

    /// `nrt_tensor_allocate` with device placement: `size` bytes of
    /// tensor memory for visible logical core `vnc`, charged to its first
    /// physical core and to the client, named `name`. A tensor of no bytes
    /// is refused (`NRT_INVALID`), as `nrt_tensor_allocate` refuses size 0.
    pub fn allocate_tensor(
        &self,
        vnc: u32,
        size: u64,
        name: &str,
    ) -> Result<DeviceTensor, LoadError> {
        self.guard()?;
        if size == 0 {
            return Err(LoadError::pipeline(DeviceError::Invalid {
                reason: format!(
                    "tensor \"{name}\" of 0 bytes: a device tensor holds at least one byte"
                ),
            }));
        }
        let (nd, device, core) = self.placement_of_vnc(vnc)?;
        let hbm = device
            .geometry()
            .hbm_of(core)
            .map_err(LoadError::pipeline)?;
        let req = AllocReq {
            size,
            align: 0,
            core,
            usage: MemUsage::Tensor,
            owner: Owner::Client,
            place: Place::Kernel,
            hint: name,
        };
        Ok(DeviceTensor {
            alloc: Owned::new(device, req).map_err(LoadError::pipeline)?,
            vnc,
            device: nd,
            core,
            hbm,
        })
    }

    testkit_pub! {
        /// The devices of the instance, `ND 0` first.
        fn devices(&self) -> impl ExactSizeIterator<Item = &Arc<Device>> {
            self.chips.iter().map(|c| &c.device)
        }
    }

    /// The device (`ND n`) a logical core of the instance is on, and the
    /// logical core's index on it.
    fn chip_of(&self, lcore: LCore) -> Result<(usize, &Chip, LCore), LoadError> {
        let nd = (lcore.0 / self.lcores_per_chip) as usize;
        let chip = self.chips.get(nd).ok_or(LoadError::BadVnc {
            vnc: lcore.0,
            visible: self.visible_vnc_count(),
        })?;
        Ok((nd, chip, LCore(lcore.0 % self.lcores_per_chip)))
    }

    testkit_pub! {
        /// The device a loaded model is on, and its index (`ND n`).
        fn device_of(&self, model: &Model) -> Result<(u32, &Arc<Device>), LoadError> {
            let (nd, chip, _) = self.chip_of(model.lcore)?;
            Ok((nd as u32, &chip.device))
        }
    }

    testkit_pub! {
        /// Where a visible logical core is: its device, the device's index
        /// (`ND n`) and the first physical core (what a tensor allocated for the
        /// logical core is charged to).
        fn placement_of_vnc(&self, vnc: u32) -> Result<(u32, &Arc<Device>, PCore), LoadError> {
            let (nd, device, local) = self.vnc_location(vnc)?;
            let first = device
                .geometry()
                .pcores_of(local, self.config.lnc_size()).map_err(LoadError::pipeline)?
                .start;
            Ok((nd, device, PCore(first)))
        }
    }

    testkit_pub! {
        /// Where a visible logical core is: the device's index (`ND n`), the
        /// device, and the logical core's index on it.
        fn vnc_location(&self, vnc: u32) -> Result<(u32, &Arc<Device>, LCore), LoadError> {
            self.guard()?;
            let lcore = *self.visible.get(vnc as usize).ok_or(LoadError::BadVnc {
                vnc,
                visible: self.visible_vnc_count(),
            })?;
            let (nd, chip, local) = self.chip_of(LCore(lcore))?;
            Ok((nd as u32, &chip.device, local))
        }
    }

    testkit_pub! {
        /// The NEFF name of every load holding device memory, by `H_MODEL`
        /// (what the runtime's out-of-memory report maps NEFF ids to).
        fn model_names(&self) -> Arc<ModelNames> {
            Arc::clone(&self.names)
        }
    }

    /// This runtime's generation (what its [`Model`]s carry).
    pub fn generation(&self) -> RuntimeGen {
        self.generation
    }

    /// Enters an open runtime: `close` waits until the returned guard drops.
    /// A thread must not enter twice (a waiting `close` would block the
    /// second entry).
    pub(crate) fn enter(&self) -> Result<RwLockReadGuard<'_, RtState>, LoadError> {
        let s = self.state.read().unwrap_or_else(PoisonError::into_inner);
        match *s {
            RtState::Init => Ok(s),
            RtState::Closed => Err(LoadError::Closed),
        }
    }

    /// The state check alone, for calls that order it before their own.
    fn guard(&self) -> Result<(), LoadError> {
        self.enter().map(drop)
    }

    /// Enters an open runtime for a call on `model`, which must be one of
    /// this runtime's.
    fn enter_for(&self, model: &Model) -> Result<RwLockReadGuard<'_, RtState>, LoadError> {
        let s = self.enter()?;
        if model.runtime != self.generation {
            return Err(LoadError::ForeignModel {
                h_nn: model.h_nn,
                model: model.runtime,
                runtime: self.generation,
            });
        }
        Ok(s)
    }

    /// Logical cores this process may use.
    pub fn visible_vnc_count(&self) -> u32 {
        self.visible.len() as u32
    }

    /// Logical cores on the instance.
    pub fn total_vnc_count(&self) -> u32 {
        self.lcores_per_chip * self.chips.len() as u32
    }

    /// Claims a logical core: the given visible index (an explicit core
    /// may be shared by several models), else the first unused one.
    fn claim(&self, core: Option<u32>, name: &str) -> Result<Claim<'_>, LoadError> {
        let mut usage = lock(&self.vnc_usage);
        let idx = match core {
            None => usage
                .iter()
                .position(|&u| u == 0)
                .ok_or_else(|| LoadError::NoFreeVnc(name.to_string()))?,
            Some(vnc) => usize::try_from(vnc)
                .ok()
                .filter(|&v| v < usage.len())
                .ok_or(LoadError::BadVnc {
                    vnc,
                    visible: usage.len() as u32,
                })?,
        };
        usage[idx] += 1;
        Ok(Claim {
            usage: &self.vnc_usage,
            idx,
            kept: false,
        })
    }

    /// `nrt_load`: loads a NEFF on the visible logical core `core`, or on
    /// the first one no model claims (`None`). The model stays loaded,
    /// holding its core and device memory, until [`Runtime::unload`] or
    /// [`Runtime::close`].
    ///
    /// [`Runtime`]'s own documentation shows a whole load.
    pub fn load(&self, bytes: &[u8], core: Option<u32>) -> Result<Model, LoadError> {
        self.load_with_gid(bytes, core, None, Ahead::Nothing, None)
    }

    /// As [`Runtime::load`], for a caller that already opened the container
    /// of these same `bytes`: S1 is not run again, but the container is held
    /// to this runtime's options (its header must be the bytes', a digest
    /// the runtime requires is checked if the open did not, the ceilings
    /// apply). Tools use it to read the NEFF's target before choosing a
    /// device, without inflating the payload twice.
    pub fn load_opened(
        &self,
        bytes: &[u8],
        neff: Neff,
        core: Option<u32>,
    ) -> Result<Model, LoadError> {
        self.load_with_gid(bytes, core, None, Ahead::Opened(neff), None)
    }

    /// As [`Runtime::load`], with what the caller made of `bytes` already:
    /// their container, held to this runtime's options as
    /// [`Runtime::load_opened`] holds it, or their parse, used as it is
    /// when made under this runtime's options (`verify` reports on it and
    /// loads it, one parse for both) and made again otherwise.
    pub(crate) fn load_ahead(
        &self,
        bytes: &[u8],
        ahead: Ahead,
        core: Option<u32>,
    ) -> Result<Model, LoadError> {
        self.load_with_gid(bytes, core, None, ahead, None)
    }

    /// `nrt_load_collectives`: as `load`, as rank `device_id` of a world of
    /// `device_count` ranks, with the runtime's checks in its order
    /// ([`crate::comm`]): the root communicator (`NEURON_RT_ROOT_COMM_ID`,
    /// `host:port`), the instance family's topology, the rank inside the
    /// world and the core's communicator (fixed once set), then the load,
    /// which refuses a NEFF whose replica groups leave the rank out or
    /// name a rank beyond the world. The model records its rank (the
    /// global id its rank-id and global-id loads read) and world. The
    /// communicator itself, and the bootstrap that compares the ranks'
    /// collectives, are not simulated: a planner holding every rank
    /// compares them (`neffld plan --world`).
    pub fn load_collectives(
        &self,
        bytes: &[u8],
        core: Option<u32>,
        device_id: u32,
        device_count: u32,
    ) -> Result<Model, LoadError> {
        let join = Join {
            rank: device_id,
            world: device_count,
        };
        self.collectives_guard(join)?;
        self.load_with_gid(bytes, core, Some(join), Ahead::Nothing, None)
    }

    /// What `nrt_load_collectives` checks before it claims a core: the
    /// runtime is open, the root communicator, the topology, the rank.
    fn collectives_guard(&self, join: Join) -> Result<(), LoadError> {
        self.guard()?;
        comm::root_comm(&self.config)?;
        comm::topology(&self.config, join.world)?;
        join.check()?;
        Ok(())
    }

    /// S1–S3 of `bytes` (whose header is `header`) through the parse
    /// cache: the parse another load of the same bytes made or is making,
    /// or a new one (counted), timed into `timings`. The entry holds the
    /// cache slot while it lives.
    fn parse_cached(
        &self,
        bytes: &[u8],
        header: &NeffHeader,
        ahead: Ahead,
        known: Option<Known>,
        timings: &mut Timings,
    ) -> crate::cache::Entry<'_, Parsed, LoadError> {
        let opts = self.config.open_options();
        let popts = self.config.parse_options();
        self.cache.get_or_parse_known(
            header.uuid,
            bytes,
            known,
            || -> Result<Parsed, LoadError> {
                self.parses.fetch_add(1, Ordering::Relaxed);
                let t = Instant::now();
                let (neff, model) = match ahead {
                    Ahead::Nothing => (container::open(bytes, &opts)?, None),
                    Ahead::Opened(neff) => (neff.held_to(bytes, &opts)?, None),
                    Ahead::Parsed(p, o) => (
                        p.neff.held_to(bytes, &opts)?,
                        (o == popts).then_some(p.model),
                    ),
                };
                timings.container = t.elapsed();
                let t = Instant::now();
                let model = match model {
                    Some(model) => model,
                    None => parse::parse(&neff, &popts).map_err(LoadError::pipeline)?,
                };
                timings.parse = t.elapsed();
                Ok(Parsed { neff, model })
            },
        )
    }

    /// The parse a load of bytes fingerprinted before would use, without
    /// staging anything (a planner reads every rank's collectives before
    /// it loads any): made once, and kept by the cache for the loads when
    /// its policy retains parses.
    pub(crate) fn parse_fingerprinted(
        &self,
        neff: &Fingerprinted<'_>,
        opened: Option<Neff>,
    ) -> Result<Arc<Parsed>, LoadError> {
        let _open = self.enter()?;
        let header = NeffHeader::parse(neff.bytes)?;
        let known = Arc::ptr_eq(&neff.cache, &self.cache).then_some(neff.known);
        self.parse_cached(
            neff.bytes,
            &header,
            opened.into(),
            known,
            &mut Timings::default(),
        )
        .result
    }

    /// The load boundary: a panic anywhere in the load has already been
    /// unwound through its guards when it arrives here, so it becomes an
    /// error and the runtime stays usable.
    fn load_with_gid(
        &self,
        bytes: &[u8],
        core: Option<u32>,
        join: Option<Join>,
        ahead: Ahead,
        known: Option<Known>,
    ) -> Result<Model, LoadError> {
        let load = || {
            let t0 = Instant::now();
            let _open = self.enter()?;
            let header = NeffHeader::parse(bytes)?;
            header.check_lnc(self.config.lnc_size(), self.config.chip())?;
            let name = header.name_str();
            let claim = self.claim(core, &name)?;
            if let Some(j) = join {
                self.comms.join(self.visible[claim.idx], j)?;
            }
            let guard_time = t0.elapsed();
            let parse = ParseInput {
                bytes,
                ahead,
                known,
            };
            self.load_claimed(parse, &header, name, claim, join, guard_time)
        };
        catch_unwind(AssertUnwindSafe(load)).unwrap_or_else(|p| {
            let e = LoadError::Panicked(stage::panic_message(&*p));
            tracing::error!("{e}");
            Err(e)
        })
    }

    /// S1–S5 and registration for a claimed logical core. The error unwind
    /// of stage.md §12 is structural here: the parse products belong to the
    /// cache entry (released on return, success or not), everything on the
    /// device belongs to the staged [`CoreImage`]s and the claim to its
    /// [`Claim`] guard until registration, the last step, which cannot fail.
    /// The reference runtime allocates the caller's `nrt_model_t` *after*
    /// registering and, when that allocation fails, leaves the registered
    /// model behind (reachable only by `nrt_close`); here the caller's
    /// [`Model`] is a plain value built after registration with nothing left
    /// that can fail, and the C layer boxes it before publishing it, so that
    /// leak has no counterpart.
    fn load_claimed(
        &self,
        input: ParseInput<'_>,
        header: &NeffHeader,
        name: String,
        claim: Claim<'_>,
        join: Option<Join>,
        guard_time: Duration,
    ) -> Result<Model, LoadError> {
        let ParseInput {
            bytes,
            ahead,
            known,
        } = input;
        let t0 = Instant::now();
        let mut timings = Timings {
            guard: guard_time,
            ..Timings::default()
        };
        let entry = self.parse_cached(bytes, header, ahead, known, &mut timings);
        let parsed = entry.result?;
        if let Some(j) = join {
            comm::check_groups(&parsed.model.kbins, j, self.config.line())?;
        }
        timings.cache_wait = t0
            .elapsed()
            .saturating_sub(timings.container + timings.parse);
        let lcore = LCore(self.visible[claim.idx]);
        let lnc = self.config.lnc_size();
        let (nd, chip, local) = self.chip_of(lcore)?;
        let pcores: Vec<PCore> = chip
            .device
            .geometry()
            .pcores_of(local, lnc)
            .map_err(LoadError::pipeline)?
            .map(PCore)
            .collect();
        let h_model = self.registry.new_h_model();
        let named = self.names.enter(h_model, name.clone());
        let sopts = StageOptions {
            arch: self.config.topology.arch,
            line: self.config.captured_line(),
            fanout_min_bytes: self.config.loader.fanout_min_bytes,
            global_id: join.map_or(0, |j| j.rank),
        };
        let kbins = &parsed.model.kbins;
        let t = Instant::now();
        let mut staged = match &self.recipes {
            Some(recipes) => recipes
                .stage(
                    &parsed,
                    kbins,
                    parsed.neff.archive(),
                    stage::replay::Target {
                        dev: &chip.device,
                        cores: &chip.cores,
                        pcores: &pcores,
                        h_model,
                    },
                    sopts,
                )
                .map_err(LoadError::pipeline)?,
            None => stage::stage(
                &chip.device,
                &chip.cores,
                kbins,
                parsed.neff.archive(),
                &pcores,
                h_model,
                sopts,
            )
            .map_err(LoadError::pipeline)?,
        };
        timings.stage = t.elapsed();
        timings.relocate = staged.iter().map(|i| i.reloc_time).sum();
        if self.config.loader.check {
            let findings = validate::validate(&chip.device, kbins, &staged);
            if !findings.is_empty() {
                return Err(LoadError::Validation(findings));
            }
        }
        if !self.config.loader.retain_images {
            staged.iter_mut().for_each(CoreImage::release_images);
        }
        let mut warnings = parsed.model.warnings().to_vec();
        warnings.extend(parsed.neff.archive().warnings().iter().cloned());
        warnings.extend(staged.iter().flat_map(|i| i.plan.warnings.iter().cloned()));
        if parsed.neff.archive().get("hlo_stats.json").is_none() {
            tracing::debug!("Unable to find hlo_stats.json in the NEFF");
        }
        let loaded = LoadedModel {
            name: name.clone(),
            uuid: header.uuid,
            vnc: lcore,
            device: nd as u32,
            tensors: parsed.model.tensor_info(),
            collectives: parsed.model.collectives(),
            join,
            h_model,
            #[cfg(any(test, feature = "testkit"))]
            mac_count: mac_count(&parsed.neff),
            cores: Vec::new(),
            warnings,
            cache_role: entry.role,
            timings,
            _name: named,
        };
        // The commit point: the model takes over the staged cores and the claim.
        let mut loaded = loaded;
        loaded.cores = staged;
        let h_nn = self.registry.register(loaded);
        let claim_idx = claim.idx as u32;
        claim.keep();
        tracing::info!("Loaded NN \"{name}\" ID: {}", h_nn.0);
        Ok(Model {
            runtime: self.generation,
            h_nn,
            vnc: claim_idx,
            lcore,
            name,
            uuid: header.uuid,
            gid: join.map(|j| j.rank),
        })
    }

    testkit_pub! {
        /// Runs `f` on a loaded model's record (for tooling: where it landed).
        fn with_model<R>(
            &self,
            model: &Model,
            f: impl FnOnce(&LoadedModel) -> R,
        ) -> Result<R, LoadError> {
            // The reference (which `close` waits for) outlives the state guard,
            // so `f` may call into the runtime again.
            let m = {
                let _open = self.enter_for(model)?;
                self.registry.acquire(model.h_nn).map_err(LoadError::pipeline)?
            };
            Ok(f(&m.model))
        }
    }

    /// `nrt_unload`.
    pub fn unload(&self, model: &Model) -> Result<(), LoadError> {
        let _open = self.enter_for(model)?;
        self.unload_handle(model.h_nn)
    }

    /// Erases the model (the commit point), then unstages every core (its
    /// images release what they hold when dropped) and releases the
    /// logical-core claim.
    fn unload_handle(&self, h: HNn) -> Result<(), LoadError> {
        tracing::info!("Unloading {}", h.0);
        let model = self.registry.remove(h).map_err(LoadError::pipeline)?.model;
        drop(model.cores);
        if let Some(i) = self.visible.iter().position(|&v| v == model.vnc.0) {
            unclaim(&self.vnc_usage, i);
        }
        Ok(())
    }

    /// What a loaded model is, for a report: everything but its staged
    /// records (those are [`crate::report::StagedView`]'s).
    pub fn summary(&self, model: &Model) -> Result<ModelSummary, LoadError> {
        self.with_model(model, |m| ModelSummary {
            name: m.name.clone(),
            uuid: m.uuid,
            vnc: model.vnc,
            lcore: m.vnc,
            device: m.device,
            h_model: m.h_model,
            pcores: m.cores.iter().map(|c| c.pcore()).collect(),
            warnings: m.warnings.clone(),
            timings: m.timings,
            collectives: m.collectives.clone(),
            join: m.join,
        })
    }

    /// `nrt_get_model_tensor_info`: all inputs in name order, then all outputs.
    pub fn tensor_info(&self, model: &Model) -> Result<Arc<[TensorInfo]>, LoadError> {
        let _open = self.enter_for(model)?;
        Ok(self
            .registry
            .acquire(model.h_nn)
            .map_err(LoadError::pipeline)?
            .model
            .tensors
            .clone())
    }

    /// How many parses (S1–S3) this runtime has run; loads that reused a
    /// cached parse do not count.
    pub fn parse_count(&self) -> u64 {
        self.parses.load(Ordering::Relaxed)
    }

    /// How many models claim each visible logical core.
    pub fn vnc_claims(&self) -> Vec<u32> {
        lock(&self.vnc_usage).clone()
    }

    /// Registered models.
    pub fn loaded_models(&self) -> usize {
        self.registry.len()
    }

    /// `nrt_close`: refuses further calls, then unloads every model. It
    /// waits for the calls in progress: a load that entered before the close
    /// has registered its model (or failed) by the time the state turns to
    /// closed, so the drain below unloads it; every later call sees
    /// `NRT_CLOSED`.
    pub fn close(&self) {
        {
            let mut s = self.state.write().unwrap_or_else(PoisonError::into_inner);
            if *s == RtState::Closed {
                return;
            }
            *s = RtState::Closed;
        }
        for h in self.registry.handles() {
            if let Err(e) = self.unload_handle(h) {
                tracing::warn!("unloading {} at close: {e}", h.0);
            }
        }
    }
}

/// What a load parses from: the bytes, what the caller made of them
/// already, and the bytes' fingerprint if already taken.
struct ParseInput<'a> {
    bytes: &'a [u8],
    ahead: Ahead,
    known: Option<Known>,
}

/// What a caller made of a load's bytes before the load. Made and moved
/// once a load, as large as the `Option<Neff>` it replaces: the lint's
/// concern (copies of a large value) does not arise.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Ahead {
    /// Nothing: the load opens and parses them.
    Nothing,
    /// Their container, opened.
    Opened(Neff),
    /// Their container, parsed under these options.
    Parsed(Box<Parsed>, ParseOptions),
}

impl From<Option<Neff>> for Ahead {
    fn from(opened: Option<Neff>) -> Ahead {
        opened.map_or(Ahead::Nothing, Ahead::Opened)
    }
}

/// `HloMacCount` of `hlo_stats.json`, 0 when absent: the metric it feeds
/// is not reported, so only the tests read it.
#[cfg(any(test, feature = "testkit"))]
fn mac_count(neff: &Neff) -> u64 {
    neff.archive()
        .get("hlo_stats.json")
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(b).ok())
        .and_then(|v| v.get("HloMacCount").and_then(serde_json::Value::as_u64))
        .unwrap_or(0)
}
