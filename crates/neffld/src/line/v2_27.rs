//! Runtime 2.27 (44 captures on trn2, cores 4 and 5; spec rules fitted on
//! 32 and checked on 12): the preamble is two head slots, one block per
//! queue the engine owns, the table-load block (act with act tables, dve
//! with DVE tables) and a fixed body; the postamble a fixed body, the
//! queues' resets, and the final branch. Both cores of a pair get the same
//! counts. The head, the fixed bodies and the postamble's `0xA6` are not
//! known byte for byte: they are filler ([`super::regs::filler`]).

use super::shared::{postamble_parts, preamble_parts, TRN1_UCODE, TRN2_UCODE_2_27};
use super::{of, CoreRole, Part, PerEngine, Rules, RuntimeCode};
use crate::device::address::RUNTIME_SMALL_POOL_BYTES;
use crate::device::{MemUsage, StartTaken};
use crate::manifest::engine::EngineType;
use crate::Arch;

pub(super) struct V2_27;

/// Preamble slots without queues and tables, pe, act, pool, dve, sp: 62,
/// 53, 56, 54, 45 (320/320 fitted and 120/120 checked images).
const PREAMBLE: PerEngine = [62, 53, 56, 54, 45];

/// Postamble slots without queues: 11, and 9 on sp.
const POSTAMBLE: PerEngine = [11, 11, 11, 11, 9];

/// The final branch returns to preamble slot `preamble − K`.
const K: PerEngine = [40, 30, 31, 30, 26];

impl Rules for V2_27 {
    fn preamble(&self, c: &RuntimeCode) -> Vec<Part> {
        // 2.27's DVE preamble is 54 + its 5-slot table block = 59.
        preamble_parts(c, PREAMBLE)
    }

    fn postamble(&self, c: &RuntimeCode, pre: u32) -> Vec<Part> {
        postamble_parts(c, POSTAMBLE, Some(pre.saturating_sub(of(K, c.engine))))
    }

    /// Image + 1600 / 1216 / 1408 / 1216 / 1152 (pe, act, pool, dve, sp), on
    /// both cores whatever the queues or tables.
    fn fixed_block(&self, engine: EngineType, _role: CoreRole) -> u64 {
        match engine {
            EngineType::Pe => 1600,
            EngineType::Act | EngineType::Dve => 1216,
            EngineType::Pool => 1408,
            EngineType::Sp => 1152,
        }
    }

    /// Generic 38,912 on both cores (as on 2.30: 13,312 the runtime's, the
    /// rest the DVE tables), GpSimd STDIO 1,088, DMA Rings Runtime
    /// 30,720 + 2,048 · T (28,672 the runtime's, the rest the table rings),
    /// Ucode lib 1,703,936 on trn2. trn1 takes its own Ucode lib (no 2.27
    /// capture of trn1).
    fn start_rows(&self, arch: Arch) -> [u64; MemUsage::COUNT] {
        let mut r = [0; MemUsage::COUNT];
        r[MemUsage::Generic.index()] = 13_312;
        r[MemUsage::PoolStdio.index()] = 1_088;
        r[MemUsage::DmaRing.index()] = 28_672;
        r[MemUsage::UcodeLib.index()] = match arch {
            Arch::Sunda => TRN1_UCODE,
            Arch::Cayman | Arch::Mariana => TRN2_UCODE_2_27,
        };
        r
    }

    /// The stream NEFFs' first image sits at `0x8005c03b0000` in all ten
    /// of their captures, where 2.30's first small allocation does: the
    /// runtime is taken to hold as much of the small pool (where it puts
    /// its fixed blocks and the weights relative to the images is not
    /// known; they are placed as on 2.30).
    fn start_taken(&self, _arch: Arch) -> StartTaken {
        StartTaken {
            small_pool: RUNTIME_SMALL_POOL_BYTES,
            ..StartTaken::default()
        }
    }
}
