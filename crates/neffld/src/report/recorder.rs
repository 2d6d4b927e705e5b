//! Watching a device's memory as a load or a client uses it: a recorder
//! that remembers every allocation of the load, so that a failed load —
//! whose rollback frees everything — can still show what was placed before
//! it failed, which request did not fit, and the device's memory as the
//! refusal found it; and a watch that tells a caller of every refusal (the
//! C library logs them as the runtime does).

use std::sync::{Arc, Mutex, MutexGuard};

use crate::api::{started_device, LoadError, Runtime};
use crate::config::RuntimeConfig;
use crate::device::{
    AllocReq, Allocation, DeviceError, Geometry, Ledger, LiveAlloc, MemHandle, MemUsage, Observer,
};
use crate::ids::{HModel, PCore};
use crate::registry::ModelNames;
use crate::report::memory::Refusal;
use crate::report::MemoryReport;

/// An allocation request the device refused for want of room.
#[derive(Clone, Debug)]
pub struct Refused {
    /// The physical core it was for.
    pub core: PCore,
    /// What it was for, as the runtime names it (a variable, `scratchpad`, a tensor).
    pub hint: String,
    /// Bytes asked for.
    pub size: u64,
    /// Its usage type.
    pub usage: MemUsage,
    /// The device's memory when it refused.
    pub memory: MemoryReport,
}

/// One allocation a load placed, addressed as the runtime addresses it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placed {
    /// The physical core it is charged to.
    pub core: PCore,
    /// The HBM channel it is on.
    pub hbm: u32,
    /// Whose it is: the runtime's, a model's or the client's.
    pub owner: crate::device::Owner,
    /// Its usage type.
    pub usage: MemUsage,
    /// What it holds, as the runtime names it.
    pub name: String,
    /// The runtime's form of the address ([`Geometry::runtime_address`]).
    pub address: u64,
    /// Bytes asked for.
    pub size: u64,
    /// Bytes the allocator charged (the size rounded to its granule).
    pub charged: u64,
}

#[derive(Default)]
struct Log {
    /// Every allocation in the order it was made; frees remove entries until
    /// the log is frozen — by the first refusal (so a rollback does not erase
    /// what was placed) or by [`Recorder::freeze`].
    placed: Vec<LiveAlloc>,
    refused: Option<Refused>,
    frozen: bool,
}

/// Watches a device and logs its allocations.
pub struct Recorder {
    geometry: Geometry,
    log: Mutex<Log>,
}

impl Recorder {
    /// A recorder for a device of `geometry`.
    fn new(geometry: Geometry) -> Recorder {
        Recorder {
            geometry,
            log: Mutex::new(Log::default()),
        }
    }

    fn log(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stops logging: what is placed now is what the report shows.
    pub fn freeze(&self) {
        self.log().frozen = true;
    }

    /// What was placed (up to the first refusal), and the refusal if any.
    pub fn snapshot(&self) -> (Vec<Placed>, Option<Refused>) {
        let log = self.log();
        let placed = log
            .placed
            .iter()
            .map(|a| Placed {
                core: a.core,
                hbm: a.channel,
                owner: a.owner,
                usage: a.usage,
                name: a.hint.clone(),
                address: self.geometry.runtime_address(a.pa.0),
                size: a.size,
                charged: a.charged,
            })
            .collect();
        (placed, log.refused.clone())
    }

    /// A runtime under `config` on one device, watched from before the
    /// runtime's own start-up allocations.
    pub fn runtime(config: RuntimeConfig) -> Result<(Runtime, Arc<Recorder>), LoadError> {
        let device = started_device(&config);
        let recorder = Arc::new(Recorder::new(device.geometry().clone()));
        device.observe(recorder.clone());
        Ok((Runtime::with_device(config, device)?, recorder))
    }
}

impl Observer for Recorder {
    fn refused(&self, req: &AllocReq<'_>, _error: &DeviceError, ledger: &Ledger) {
        let mut log = self.log();
        if log.refused.is_none() {
            log.refused = Some(Refused {
                core: req.core,
                hint: req.hint.to_string(),
                size: req.size,
                usage: req.usage,
                memory: MemoryReport::from_ledger(0, &self.geometry, ledger),
            });
        }
    }

    fn allocated(&self, req: &AllocReq<'_>, result: Result<&Allocation, &DeviceError>) {
        let mut log = self.log();
        if log.frozen {
            return;
        }
        match result {
            Ok(a) => log.placed.push(LiveAlloc {
                handle: a.handle,
                owner: req.owner,
                core: req.core,
                channel: self.geometry.hbm_of(req.core).unwrap_or(0),
                usage: req.usage,
                pa: a.pa,
                size: a.size,
                charged: a.charged,
                hint: req.hint.to_string(),
            }),
            // A refusal for want of room, or any other: what is placed now
            // is what the report shows.
            Err(_) => log.frozen = true,
        }
    }

    fn freeing(&self, handle: MemHandle) {
        let mut log = self.log();
        if !log.frozen {
            log.placed.retain(|a| a.handle != handle);
        }
    }
}

/// A refusal for want of room, as [`watch_refusals`] tells of it.
pub struct RefusalSeen<'a> {
    /// The device (`ND n`) that refused.
    pub device: u32,
    /// Its memory when it refused.
    pub memory: &'a MemoryReport,
    /// The request it refused.
    pub refusal: &'a Refusal,
    /// The name of each load holding memory, by id.
    pub names: &'a dyn Fn(HModel) -> Option<String>,
}

type OnRefusal = dyn Fn(&RefusalSeen<'_>) + Send + Sync;

/// Tells `on` of one device's refusals. It holds the device's geometry and
/// the runtime's book of names, never the device or the runtime (which
/// hold it).
struct RefusalWatch {
    nd: u32,
    geometry: Geometry,
    names: Arc<ModelNames>,
    on: Arc<OnRefusal>,
}

impl Observer for RefusalWatch {
    fn refused(&self, req: &AllocReq<'_>, _error: &DeviceError, ledger: &Ledger) {
        let memory = MemoryReport::from_ledger(self.nd, &self.geometry, ledger);
        let refusal = Refusal::of(req);
        (self.on)(&RefusalSeen {
            device: self.nd,
            memory: &memory,
            refusal: &refusal,
            names: &|h| self.names.get(h),
        });
    }
}

/// Calls `on` for every allocation any device of `rt` refuses for want of
/// room from now on: a load's, or a client tensor's.
pub fn watch_refusals(rt: &Runtime, on: impl Fn(&RefusalSeen<'_>) + Send + Sync + 'static) {
    let on: Arc<OnRefusal> = Arc::new(on);
    for (nd, device) in rt.devices().enumerate() {
        device.observe(Arc::new(RefusalWatch {
            nd: nd as u32,
            geometry: device.geometry().clone(),
            names: rt.model_names(),
            on: on.clone(),
        }));
    }
}
