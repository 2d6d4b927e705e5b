//! The runtime's per-core memory report: the rows the profiler shows
//! (`nc_mem_usage`, spec/capture.md) in the runtime's own categories and
//! order, Generic through DMA Rings Collectives. `neffld load`,
//! [`crate::api::Runtime::memory_stats`] and `nrt_get_vnc_memory_stats`
//! all report this one accounting.
//!
//! A row is the sum of two parts:
//! - **runtime**: what the runtime allocates for itself on every core when
//!   it starts, before any model ([`runtime_rows`]: the runtime line's
//!   figures);
//! - **model**: the requested bytes of every live allocation the loaded
//!   models made on the core (the device ledger's requested column).

use crate::device::{Device, DeviceError, MemUsage};
use crate::ids::{LCore, PCore};
use crate::line::RuntimeLine;
use crate::Arch;

/// One row per [`MemUsage`], in the profiler's order.
pub type Rows = [u64; MemUsage::COUNT];

/// What the runtime of `line` allocates for itself on each physical core of
/// `arch` when it starts (the line's figures and their evidence:
/// [`RuntimeLine::start_rows`]).
pub fn runtime_rows(arch: Arch, line: RuntimeLine) -> Rows {
    line.start_rows(arch)
}

/// A row of the runtime's own list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowKey {
    /// The row of one usage.
    Usage(MemUsage),
    /// The single `DMA Rings` row of the oldest runtimes (2.23), in place of
    /// the four DMA Rings rows.
    DmaRings,
}

/// One row as the runtime lists it: what it charged for itself at start
/// and what the models did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReportRow {
    pub key: RowKey,
    pub runtime: u64,
    pub model: u64,
}

impl ReportRow {
    pub fn bytes(&self) -> u64 {
        self.runtime + self.model
    }
}

/// The memory report of one physical core.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreMemory {
    pub pcore: PCore,
    /// The runtime line whose list [`CoreMemory::report`] gives.
    pub line: RuntimeLine,
    /// Charged when the runtime started.
    pub runtime: Rows,
    /// Charged by the models loaded on the core.
    pub model: Rows,
}

impl CoreMemory {
    /// The core's report on `dev` now, under `line`.
    pub fn of(dev: &dyn Device, arch: Arch, line: RuntimeLine, pcore: PCore) -> CoreMemory {
        let ledger = dev.ledger();
        let mut model = [0; MemUsage::COUNT];
        for u in MemUsage::ALL {
            model[u.index()] = ledger.requested(pcore, u);
        }
        CoreMemory {
            pcore,
            line,
            runtime: runtime_rows(arch, line),
            model,
        }
    }

    /// Bytes of one row (runtime and model parts together).
    pub fn row(&self, usage: MemUsage) -> u64 {
        self.runtime[usage.index()] + self.model[usage.index()]
    }

    /// Every row in the profiler's order: (usage, runtime part, model part).
    pub fn rows(&self) -> impl Iterator<Item = (MemUsage, u64, u64)> + '_ {
        MemUsage::ALL
            .iter()
            .map(|&u| (u, self.runtime[u.index()], self.model[u.index()]))
    }

    /// The profiler's `Total` row.
    pub fn total(&self) -> u64 {
        MemUsage::ALL.iter().map(|&u| self.row(u)).sum()
    }

    /// The rows as the line's runtime lists them: every usage in the
    /// profiler's order; on the oldest lines ([`RuntimeLine::legacy_rows`])
    /// the four DMA Rings rows are one, and Generic shows only the
    /// runtime's part (2.23 reports 0 although its NEFFs' DVE tables are
    /// staged: it does not count them).
    pub fn report(&self) -> Vec<ReportRow> {
        let row = |u: MemUsage| ReportRow {
            key: RowKey::Usage(u),
            runtime: self.runtime[u.index()],
            model: self.model[u.index()],
        };
        if !self.line.legacy_rows() {
            return MemUsage::ALL.iter().map(|&u| row(u)).collect();
        }
        let mut rows: Vec<ReportRow> = MemUsage::ALL
            .iter()
            .filter(|&&u| u.index() < MemUsage::DmaRing.index())
            .map(|&u| ReportRow {
                model: if u == MemUsage::Generic {
                    0
                } else {
                    self.model[u.index()]
                },
                ..row(u)
            })
            .collect();
        let dma = &MemUsage::ALL[MemUsage::DmaRing.index()..];
        rows.push(ReportRow {
            key: RowKey::DmaRings,
            runtime: dma.iter().map(|u| self.runtime[u.index()]).sum(),
            model: dma.iter().map(|u| self.model[u.index()]).sum(),
        });
        rows
    }
}

/// What `nrt_get_vnc_memory_stats` reports for a logical core, with the
/// per-core rows it sums.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryStats {
    /// Sum of every row of every physical core of the logical core.
    pub used: u64,
    /// HBM visible to the logical core.
    pub limit: u64,
    pub cores: Vec<CoreMemory>,
}

impl MemoryStats {
    /// The report of logical core `lcore` (of `lnc` physical cores).
    pub fn of(
        dev: &dyn Device,
        arch: Arch,
        line: RuntimeLine,
        lcore: LCore,
        lnc: u32,
    ) -> Result<MemoryStats, DeviceError> {
        let limit = dev.vnc_memory_stats(lcore, lnc)?.limit;
        let cores: Vec<CoreMemory> = dev
            .geometry()
            .pcores_of(lcore, lnc)?
            .map(|c| CoreMemory::of(dev, arch, line, PCore(c)))
            .collect();
        Ok(MemoryStats {
            used: cores.iter().map(CoreMemory::total).sum(),
            limit,
            cores,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{AllocReq, Geometry, SimDevice};

    #[test]
    fn rows_add_runtime_and_requested_model_bytes() {
        let dev = SimDevice::new(Geometry::for_arch(Arch::Cayman));
        dev.alloc(AllocReq {
            size: 12_416,
            align: 0,
            core: PCore(4),
            usage: MemUsage::InstrPe,
            hint: "pe",
        })
        .unwrap();
        let s = MemoryStats::of(&dev, Arch::Cayman, RuntimeLine::V2_30, LCore(2), 2).unwrap();
        assert_eq!(s.cores.len(), 2);
        let c4 = &s.cores[0];
        assert_eq!(c4.pcore, PCore(4));
        assert_eq!(
            c4.row(MemUsage::InstrPe),
            12_416,
            "requested, not 4 KiB pages"
        );
        assert_eq!(c4.row(MemUsage::UcodeLib), 1_744_584);
        assert_eq!(s.cores[1].row(MemUsage::InstrPe), 0);
        assert_eq!(s.used, s.cores[0].total() + s.cores[1].total());
        assert_eq!(s.used, 12_416 + 2 * (13_312 + 1_088 + 28_672 + 1_744_584));
        let trn1 = runtime_rows(Arch::Sunda, RuntimeLine::V2_23);
        assert_eq!(trn1[MemUsage::UcodeLib.index()], 100_669_644);
        assert_eq!(c4.report().len(), MemUsage::COUNT);
    }

    #[test]
    fn the_oldest_line_lists_one_dma_rings_row_and_no_model_generic() {
        let dev = SimDevice::new(Geometry::for_arch(Arch::Sunda));
        for (usage, size) in [
            (MemUsage::DmaRingIo, 65_536),
            (MemUsage::DmaRingSpill, 4_096),
            (MemUsage::Generic, 25_600),
            (MemUsage::InstrPool, 1_792),
        ] {
            dev.alloc(AllocReq {
                size,
                align: 0,
                core: PCore(0),
                usage,
                hint: "x",
            })
            .unwrap();
        }
        let c = CoreMemory::of(&dev, Arch::Sunda, RuntimeLine::V2_23, PCore(0));
        let rows = c.report();
        // 18 usage rows and the single DMA Rings row: 19, as 2.23 lists them.
        assert_eq!(rows.len(), 19);
        assert_eq!(rows[18].key, RowKey::DmaRings);
        assert_eq!(rows[18].bytes(), 65_536 + 4_096);
        assert_eq!(rows[0].key, RowKey::Usage(MemUsage::Generic));
        assert_eq!(rows[0].bytes(), 0);
        assert_eq!(rows[MemUsage::InstrPool.index()].bytes(), 1_792);
        assert_eq!(rows[MemUsage::UcodeLib.index()].bytes(), 100_669_644);
        // The ledger still holds the DVE tables.
        assert_eq!(c.row(MemUsage::Generic), 25_600);
    }
}
