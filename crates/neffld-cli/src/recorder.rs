//! A device wrapper that remembers every allocation of the load, so that a
//! failed load — whose rollback frees everything — can still show what was
//! placed before it failed, and which request did not fit.

use std::sync::{Arc, Mutex, MutexGuard};

use neffld::device::{
    AllocReq, Allocation, Device, DeviceError, FaultPlan, Geometry, Ledger, LiveAlloc, MemHandle,
    Write,
};
use neffld::ids::{LCore, PCore, Pa};

/// An allocation request the device refused.
#[derive(Clone, Debug)]
pub struct Refused {
    pub core: PCore,
    pub hint: String,
    pub size: u64,
    pub usage: &'static str,
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

/// Delegates everything to the wrapped device and logs allocations.
pub struct Recorder {
    inner: Arc<dyn Device>,
    log: Mutex<Log>,
}

impl Recorder {
    pub fn new(inner: Arc<dyn Device>) -> Recorder {
        Recorder {
            inner,
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
    pub fn snapshot(&self) -> (Vec<LiveAlloc>, Option<Refused>) {
        let log = self.log();
        (log.placed.clone(), log.refused.clone())
    }
}

impl Device for Recorder {
    fn geometry(&self) -> &Geometry {
        self.inner.geometry()
    }

    fn alloc(&self, req: AllocReq<'_>) -> Result<Allocation, DeviceError> {
        let result = self.inner.alloc(req);
        let mut log = self.log();
        match &result {
            Ok(a) if !log.frozen => log.placed.push(LiveAlloc {
                handle: a.handle,
                core: req.core,
                channel: self.inner.geometry().hbm_of(req.core).unwrap_or(0),
                usage: req.usage,
                pa: a.pa,
                size: a.size,
                charged: a.charged,
                hint: req.hint.to_string(),
            }),
            Ok(_) => {}
            Err(_) if log.frozen => {}
            Err(_) => {
                log.frozen = true;
                log.refused = Some(Refused {
                    core: req.core,
                    hint: req.hint.to_string(),
                    size: req.size,
                    usage: req.usage.name(),
                });
            }
        }
        result
    }

    fn free(&self, handle: MemHandle) -> Result<(), DeviceError> {
        let mut log = self.log();
        if !log.frozen {
            log.placed.retain(|a| a.handle != handle);
        }
        drop(log);
        self.inner.free(handle)
    }

    fn write(&self, handle: MemHandle, offset: u64, data: &[u8]) -> Result<(), DeviceError> {
        self.inner.write(handle, offset, data)
    }

    fn write_all(&self, writes: &[Write<'_>]) -> Result<(), (usize, DeviceError)> {
        self.inner.write_all(writes)
    }

    fn read(&self, handle: MemHandle, offset: u64, out: &mut [u8]) -> Result<(), DeviceError> {
        self.inner.read(handle, offset, out)
    }

    fn ledger(&self) -> Ledger {
        self.inner.ledger()
    }

    fn live_count(&self) -> usize {
        self.inner.live_count()
    }

    fn live_allocations(&self) -> Vec<LiveAlloc> {
        self.inner.live_allocations()
    }

    fn set_fault_plan(&self, plan: FaultPlan) {
        self.inner.set_fault_plan(plan)
    }

    fn fault_plan(&self) -> FaultPlan {
        self.inner.fault_plan()
    }

    fn sb_base(&self, core: PCore) -> Result<Pa, DeviceError> {
        self.inner.sb_base(core)
    }

    fn event_addr(&self, core: PCore, id: u32) -> Result<Pa, DeviceError> {
        self.inner.event_addr(core, id)
    }

    fn supports_aligned_alloc(&self) -> bool {
        self.inner.supports_aligned_alloc()
    }

    fn vnc_memory_stats(
        &self,
        lcore: LCore,
        lnc: u32,
    ) -> Result<neffld::device::VncMemoryStats, DeviceError> {
        self.inner.vnc_memory_stats(lcore, lnc)
    }
}
