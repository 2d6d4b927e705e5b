//! An observer that remembers every allocation of the load, so that a
//! failed load — whose rollback frees everything — can still show what was
//! placed before it failed, which request did not fit, and the device's
//! memory as the refusal found it.

use std::sync::{Mutex, MutexGuard};

use neffld::device::{
    AllocReq, Allocation, DeviceError, Geometry, Ledger, LiveAlloc, MemHandle, MemUsage, Observer,
};
use neffld::ids::PCore;

/// An allocation request the device refused for want of room.
#[derive(Clone, Debug)]
pub struct Refused {
    pub core: PCore,
    pub hint: String,
    pub size: u64,
    pub usage: MemUsage,
    /// The device's memory when it refused.
    pub ledger: Ledger,
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
    pub fn new(geometry: Geometry) -> Recorder {
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
    pub fn snapshot(&self) -> (Vec<LiveAlloc>, Option<Refused>) {
        let log = self.log();
        (log.placed.clone(), log.refused.clone())
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
                ledger: ledger.clone(),
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
