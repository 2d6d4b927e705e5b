//! Runtime 2.25 (2 captures of one NEFF on trn1 core 0, in the checked set
//! only: observations, not fitted rules). Its triggers, queue numbering and
//! queue blocks are 2.23's, its postamble counts too; its preamble is laid
//! out as 2.27's (head, queue blocks at slot 2, a DVE table block). The
//! per-queue terms beyond the captured shape (one IO queue on pool and on
//! sp) and the act-table terms are 2.27's, assumed. The final branch's
//! target is not known: that slot is filler as well as the fixed bodies.

use super::shared::{postamble_parts, preamble_parts, TRN1_UCODE, TRN2_UCODE_2_27};
use super::{CoreRole, Part, PerEngine, Rules, RuntimeCode};
use crate::device::{MemUsage, StartTaken};
use crate::manifest::engine::EngineType;
use crate::Arch;

pub(super) struct V2_25;

/// Preamble slots without queues and tables: the captured pe 50, act 43,
/// pool 59, dve 49, sp 49 less pool's and sp's IO block (13) and dve's
/// table block (5).
const PREAMBLE: PerEngine = [50, 43, 46, 44, 36];

/// Postamble slots without queues, as 2.23 (10/10 images).
const POSTAMBLE: PerEngine = [61, 61, 67, 61, 57];

impl Rules for V2_25 {
    fn preamble(&self, c: &RuntimeCode) -> Vec<Part> {
        preamble_parts(c, PREAMBLE)
    }

    fn postamble(&self, c: &RuntimeCode, _pre: u32) -> Vec<Part> {
        postamble_parts(c, POSTAMBLE, None)
    }

    /// Image + 1408 / 1024 / 1088 / 1024 / 960 (pe, act, pool, dve, sp).
    fn fixed_block(&self, engine: EngineType, _role: CoreRole) -> u64 {
        match engine {
            EngineType::Pe => 1408,
            EngineType::Act | EngineType::Dve => 1024,
            EngineType::Pool => 1088,
            EngineType::Sp => 960,
        }
    }

    /// Generic 25,600 (the DVE tables, here the model's), GpSimd STDIO
    /// 1,088, DMA Rings Runtime 34,816 (32,768 the runtime's and the DVE
    /// table ring), Ucode lib as 2.23.
    fn start_rows(&self, arch: Arch) -> [u64; MemUsage::COUNT] {
        let mut r = [0; MemUsage::COUNT];
        r[MemUsage::PoolStdio.index()] = 1_088;
        r[MemUsage::DmaRing.index()] = 32_768;
        r[MemUsage::UcodeLib.index()] = match arch {
            Arch::Sunda => TRN1_UCODE,
            Arch::Cayman | Arch::Mariana => TRN2_UCODE_2_27,
        };
        r
    }

    /// The captured images start at `0x3c0058000`, 0x58000 into the small
    /// pool, 0x8000 apart in 2.23's rank order. With the five fixed blocks
    /// allocated first (one page each), holding 0x50000 bytes at start puts
    /// the first image there.
    fn start_taken(&self, _arch: Arch) -> StartTaken {
        StartTaken {
            small_pool: 0x5_0000,
            ..StartTaken::default()
        }
    }

    /// Its IO ring row is half the ring formula (32,768 for two queues of
    /// 32,768 by the formula).
    fn ring_bytes(&self, formula: u64) -> u64 {
        formula / 2
    }
}
