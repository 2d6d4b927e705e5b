//! The runtime's own reports of device memory, logged as libnrt logs them
//! (module `TDRV`, [`crate::log`]) and rendered by the library's memory
//! report (`neffld::report::memory`):
//!
//! - on every allocation a device refuses for want of room — a load's, or
//!   `nrt_tensor_allocate`'s — at ERROR: which cores share the HBM (when
//!   several do), the refused request, the HBM's usage table and the NEFF
//!   id → name mapping; the same report is written to
//!   `neuron_mem_table_device_<d>_hbm_<h>.log` in [`table_dir`];
//! - after each load, at INFO, the NEFF's breakdown on each of its cores.
//!
//! NEFF ids are the loads' `H_MODEL`s.

use std::path::PathBuf;
use std::sync::Arc;

use neffld::api::{Model, Runtime};
use neffld::device::{AllocReq, DeviceError, Geometry, Ledger, Observer};
use neffld::registry::ModelNames;
use neffld::report::memory::{LogLine, MemoryReport, Refusal};
use tracing::{error, info, warn, Level};

use crate::log::TDRV;

/// Where the usage report of a refused allocation is written:
/// `NEFFLD_MEM_TABLE_DIR`, else `/tmp` (the reference runtime's place).
pub(crate) fn table_dir() -> PathBuf {
    std::env::var_os("NEFFLD_MEM_TABLE_DIR").map_or_else(|| PathBuf::from("/tmp"), PathBuf::from)
}

/// Watches one device (`ND nd`) for refused allocations. It holds the
/// device's geometry and the runtime's book of NEFF names, never the device
/// or the runtime (which hold it).
struct RefusalReport {
    nd: u32,
    geometry: Geometry,
    lnc: u32,
    names: Arc<ModelNames>,
    dir: PathBuf,
}

impl Observer for RefusalReport {
    fn refused(&self, req: &AllocReq<'_>, _error: &DeviceError, ledger: &Ledger) {
        let report = MemoryReport::from_ledger(self.nd, &self.geometry, ledger);
        let refusal = Refusal {
            size: req.size,
            align: req.align,
            usage: req.usage,
            core: req.core,
        };
        let name = |h| self.names.get(h);
        for (func, text) in report.refusal_log(&refusal, self.lnc, name) {
            error!(target: TDRV, func, "{text}");
        }
        let Some(hbm) = report.hbm_of(req.core) else {
            return;
        };
        let path = self.dir.join(hbm.table_file(self.nd));
        let text = report.usage_report(hbm, name) + "\n";
        if let Err(e) = std::fs::write(&path, text) {
            warn!(
                "could not write the memory usage table to {}: {e}",
                path.display()
            );
        }
    }
}

/// Reports every refusal on `rt`'s devices from now on.
pub(crate) fn watch(rt: &Runtime) {
    let dir = table_dir();
    for (nd, device) in rt.devices().enumerate() {
        device.observe(Arc::new(RefusalReport {
            nd: nd as u32,
            geometry: device.geometry().clone(),
            lnc: rt.config().lnc_size(),
            names: rt.model_names(),
            dir: dir.clone(),
        }));
    }
}

/// Logs a loaded model's breakdown on each of its cores, when `TDRV` logs
/// at INFO.
pub(crate) fn loaded(rt: &Runtime, model: &Model) {
    if !tracing::enabled!(target: TDRV, Level::INFO) {
        return;
    }
    let lines: Vec<LogLine> = rt
        .with_model(model, |m| {
            let Some(device) = rt.devices().nth(m.device as usize) else {
                return Vec::new();
            };
            let report = MemoryReport::of(m.device, device);
            m.cores
                .iter()
                .filter_map(|c| report.neff_breakdown(c.pcore(), m.h_model, &m.name))
                .collect()
        })
        .unwrap_or_default();
    for (func, text) in lines {
        info!(target: TDRV, func, "{text}");
    }
}
