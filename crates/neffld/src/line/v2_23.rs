//! Runtime 2.23 (6 captures on trn1 core 0, all of one NEFF shape: one IO
//! queue on pool and one on sp, no act tables, no data queue). The preamble
//! is one block per queue the engine owns, then a fixed body; the postamble
//! a fixed body (the event resets, one per event id), the queues' resets
//! and the final branch. The per-data-queue terms (+14 before, +2 after)
//! follow the blocks' structure and are not captured; neither is a 2.23
//! image with act tables, which adds nothing here. The fixed bodies' bytes
//! are not known: filler ([`super::regs::filler`]).
//!
//! Its memory is listed in the runtime's old form: 19 rows, one `DMA Rings`
//! row holding the model's queue rings (the ring formula, 65,536 bytes for
//! the captured shape), Generic 0 although the NEFFs have DVE tables, no
//! runtime ring row, and instruction rows that are the images alone.

use super::shared::{postamble_parts, TRN1_UCODE, TRN2_UCODE_2_27};
use super::{of, CoreRole, Part, PerEngine, Rules, RuntimeCode};
use crate::device::{MemUsage, StartTaken};
use crate::manifest::engine::EngineType;
use crate::Arch;

pub(super) struct V2_23;

/// Preamble slots without queues: 27, 14, 14, 14, 12 (pe, act, pool, dve,
/// sp; 20/20 fitted and 10/10 checked images, one shape).
const PREAMBLE: PerEngine = [27, 14, 14, 14, 12];

/// Postamble slots without queues: 61, 61, 67, 61, 57. pe's 3..53, act's
/// 54..104, pool's 105..155, dve's 156..206 and sp's 207..255 are one event
/// reset each; pool has 6 slots of its own besides.
const POSTAMBLE: PerEngine = [61, 61, 67, 61, 57];

/// The final branch returns to preamble slot `preamble − K`.
const K: PerEngine = [23, 10, 10, 10, 9];

impl Rules for V2_23 {
    fn preamble(&self, c: &RuntimeCode) -> Vec<Part> {
        vec![Part::QueueBlocks, Part::Filler(of(PREAMBLE, c.engine))]
    }

    fn postamble(&self, c: &RuntimeCode, pre: u32) -> Vec<Part> {
        postamble_parts(c, POSTAMBLE, Some(pre.saturating_sub(of(K, c.engine))))
    }

    /// The instruction rows are the images alone.
    fn fixed_block(&self, _engine: EngineType, _role: CoreRole) -> u64 {
        0
    }

    /// Ucode lib and GpSimd STDIO 1,088; Generic and the runtime's rings
    /// none. On trn2 (never captured under 2.23) its Ucode lib is 2.27's.
    fn start_rows(&self, arch: Arch) -> [u64; MemUsage::COUNT] {
        let mut r = [0; MemUsage::COUNT];
        r[MemUsage::PoolStdio.index()] = 1_088;
        r[MemUsage::UcodeLib.index()] = match arch {
            Arch::Sunda => TRN1_UCODE,
            Arch::Cayman | Arch::Mariana => TRN2_UCODE_2_27,
        };
        r
    }

    /// The images of the captured shape sit at `0x1048000 + 0x8000 · rank`
    /// (act, dve, pe, pool, sp; 30/30 images): the main pool, right above
    /// 0x48000 bytes of each channel's that the runtime holds, and no small
    /// pool. The DMA rings sit below them from `0x1018000` in the captures,
    /// so part of that is rings the runtime allocates before the images; a
    /// model's own rings land above them here (docs/decisions.md).
    fn start_taken(&self, _arch: Arch) -> StartTaken {
        StartTaken {
            main_pool: 0x4_8000,
            small_pool: 0,
            no_small_pool: true,
        }
    }

    /// 2.23 has no table-load rings of its own (no DMA Rings Runtime row).
    fn table_ring_bytes(&self) -> u64 {
        0
    }

    fn legacy_rows(&self) -> bool {
        true
    }
}
