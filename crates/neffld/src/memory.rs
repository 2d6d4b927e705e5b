//! What the runtime allocates for itself on every physical core when it
//! starts, before any model, in the profiler's rows. The runtime allocates
//! these for real ([`crate::api::Runtime`]), so they are in the one ledger
//! every memory report projects ([`crate::report::memory`]).

use crate::device::MemUsage;
use crate::report::memory::Rows;
use crate::Arch;

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
