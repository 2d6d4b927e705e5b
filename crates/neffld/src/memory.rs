//! The runtime's per-core memory report: the rows the profiler shows
//! (`nc_mem_usage`, spec/capture.md) in the runtime's own categories and
//! order, Generic through DMA Rings Collectives. `neffld load`,
//! [`crate::api::Runtime::memory_stats`] and `nrt_get_vnc_memory_stats`
//! all report this one accounting.
//!
//! A row is the sum of two parts:
//! - **runtime**: what the runtime allocates for itself on every core when
//!   it starts, before any model ([`runtime_rows`]);
//! - **model**: the requested bytes of every live allocation the loaded
//!   models made on the core (the device ledger's requested column).

use crate::device::{Device, DeviceError, MemUsage, Owner};
use crate::ids::{LCore, PCore};
use crate::Arch;

/// One row per [`MemUsage`], in the profiler's order.
pub type Rows = [u64; MemUsage::COUNT];

/// What the runtime allocates for itself on each physical core of `arch`
/// when it starts.
///
/// trn2 (runtime 2.30.51, all ten shared captures, both cores):
/// - Ucode lib 1,744,584 and GpSimd STDIO 1,088: the whole row, the same
///   for every NEFF;
/// - Generic 13,312: the row is 38,912 on both cores, of which 25,600 are
///   the NEFF's DVE tables (1 + 4 + 4 + 16 KiB, staged per core);
/// - DMA Rings Runtime 28,672: the row is 30,720 on the core with only the
///   DVE-table ring and 32,768 on the one with the act-table ring too
///   (2,048 bytes each).
///
/// trn1: Ucode lib 100,669,644 (96 MiB + 6,348; trn1 captures of runtimes
/// 2.23 and 2.25). No shared trn1 capture shows the other rows; trn1 and
/// trn3 take the trn2 values (docs/decisions.md).
pub fn runtime_rows(arch: Arch) -> Rows {
    let mut r = [0; MemUsage::COUNT];
    r[MemUsage::Generic.index()] = 13_312;
    r[MemUsage::PoolStdio.index()] = 1_088;
    r[MemUsage::DmaRing.index()] = 28_672;
    r[MemUsage::UcodeLib.index()] = match arch {
        Arch::Sunda => 100_669_644,
        Arch::Cayman | Arch::Mariana => 1_744_584,
    };
    r
}

/// The rows of [`runtime_rows`] that hold bytes, in the profiler's order:
/// what the runtime allocates on each physical core when it starts.
pub fn start_rows(arch: Arch) -> impl Iterator<Item = (MemUsage, u64)> {
    let rows = runtime_rows(arch);
    MemUsage::ALL
        .into_iter()
        .map(move |u| (u, rows[u.index()]))
        .filter(|&(_, bytes)| bytes > 0)
}

/// The memory report of one physical core.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreMemory {
    pub pcore: PCore,
    /// Held by the runtime itself: what it took when it started, and the
    /// shared scratchpad pages of the core's models.
    pub runtime: Rows,
    /// Held by the models loaded on the core and the client's tensors.
    pub model: Rows,
}

impl CoreMemory {
    /// The core's report on `dev` now.
    pub fn of(dev: &Device, pcore: PCore) -> CoreMemory {
        let ledger = dev.ledger();
        let mut runtime = [0; MemUsage::COUNT];
        let mut model = [0; MemUsage::COUNT];
        for owner in ledger.owners(pcore) {
            let rows = if owner == Owner::Runtime {
                &mut runtime
            } else {
                &mut model
            };
            for (row, cell) in rows.iter_mut().zip(ledger.rows_of(pcore, owner)) {
                *row += cell.requested;
            }
        }
        CoreMemory {
            pcore,
            runtime,
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
    pub fn of(dev: &Device, lcore: LCore, lnc: u32) -> Result<MemoryStats, DeviceError> {
        let limit = dev.vnc_memory_stats(lcore, lnc)?.limit;
        let cores: Vec<CoreMemory> = dev
            .geometry()
            .pcores_of(lcore, lnc)?
            .map(|c| CoreMemory::of(dev, PCore(c)))
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
    use std::sync::Arc;

    #[test]
    fn rows_add_runtime_and_requested_model_bytes() {
        let dev = Arc::new(SimDevice::new(Geometry::for_arch(Arch::Cayman)));
        let runtime = crate::api::Runtime::with_device(Default::default(), dev.clone()).unwrap();
        dev.alloc(AllocReq {
            size: 12_416,
            align: 0,
            core: PCore(4),
            usage: MemUsage::InstrPe,
            owner: Owner::Model(crate::ids::HModel(1)),
            pool: None,
            hint: "pe",
        })
        .unwrap();
        let s = MemoryStats::of(&*dev, LCore(2), 2).unwrap();
        assert_eq!(s.cores.len(), 2);
        let c4 = &s.cores[0];
        assert_eq!(c4.pcore, PCore(4));
        assert_eq!(
            c4.row(MemUsage::InstrPe),
            12_416,
            "requested, not 4 KiB pages"
        );
        assert_eq!(c4.row(MemUsage::UcodeLib), 1_744_584);
        assert_eq!(c4.model[MemUsage::UcodeLib.index()], 0, "the runtime's own");
        assert_eq!(c4.model[MemUsage::InstrPe.index()], 12_416);
        assert_eq!(s.cores[1].row(MemUsage::InstrPe), 0);
        assert_eq!(s.used, s.cores[0].total() + s.cores[1].total());
        assert_eq!(s.used, 12_416 + 2 * (13_312 + 1_088 + 28_672 + 1_744_584));
        let trn1 = runtime_rows(Arch::Sunda);
        assert_eq!(trn1[MemUsage::UcodeLib.index()], 100_669_644);
        drop(runtime);
    }
}
