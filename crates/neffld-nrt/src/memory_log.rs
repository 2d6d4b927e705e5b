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
//! NEFF ids are the loads' `H_MODEL`s. From runtime 2.33
//! `NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG=0` silences the refusal report
//! (the log lines and the file; `RuntimeConfig::oom_log_enabled`): the
//! allocation still fails with its own error line.

use std::path::PathBuf;

use neffld::api::{Model, Runtime};
use neffld::report::memory::{LogLine, MemoryReport};
use neffld::report::{watch_refusals, RefusalSeen};
use tracing::{error, info, warn, Level};

use crate::log::TDRV;

/// Where the usage report of a refused allocation is written:
/// `NEFFLD_MEM_TABLE_DIR`, else `/tmp` (the reference runtime's place).
pub(crate) fn table_dir() -> PathBuf {
    std::env::var_os(neffld::config::vars::NEFFLD_MEM_TABLE_DIR.name)
        .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from)
}

/// Reports every refusal on `rt`'s devices from now on.
pub(crate) fn watch(rt: &Runtime) {
    if !rt.config().oom_log_enabled() {
        return;
    }
    let dir = table_dir();
    let (lnc, line) = (rt.config().lnc_size(), rt.config().line());
    watch_refusals(rt, move |seen: &RefusalSeen<'_>| {
        let (memory, name) = (seen.memory, seen.names);
        for (func, text) in memory.refusal_log(seen.refusal, lnc, line, name) {
            error!(target: TDRV, func, "{text}");
        }
        // The table's file goes with the table (the lines before 2.27
        // printed neither).
        if !line.neff_usage_table() {
            return;
        }
        let Some(hbm) = memory.hbm_of(seen.refusal.core) else {
            return;
        };
        let path = dir.join(hbm.table_file(seen.device));
        let text = memory.usage_report(hbm, name) + "\n";
        // Never through a link planted at that name (`/tmp` is anyone's).
        if let Err(e) = neffld::tree::replace_file(&path, text.as_bytes()) {
            warn!(
                "could not write the memory usage table to {}: {e}",
                path.display()
            );
        }
    });
}

/// Logs a loaded model's breakdown on each of its cores, when `TDRV` logs
/// at INFO.
pub(crate) fn loaded(rt: &Runtime, model: &Model) {
    if !tracing::enabled!(target: TDRV, Level::INFO) {
        return;
    }
    let lines: Vec<LogLine> = match (rt.summary(model), MemoryReport::of_model(rt, model)) {
        (Ok(m), Ok(report)) => m
            .pcores
            .iter()
            .filter_map(|&c| report.neff_breakdown(c, m.h_model, &m.name))
            .collect(),
        _ => Vec::new(),
    };
    for (func, text) in lines {
        info!(target: TDRV, func, "{text}");
    }
}
