//! Runtime 2.30: its preamble before the NEFF's records and its postamble
//! after them, per engine and per core role, the fixed block of
//! instruction memory it keeps beside each image, and what it allocates for
//! itself when it starts. Every figure here is the runtime's (2.30 on
//! trn2), measured on the ten shared hardware captures (docs/reference/capture.md);
//! the NEFF does not say them. Its preamble has no per-queue ring blocks:
//! the captured NEFFs use dynamic queues only, and a static queue's 2.30
//! code was never seen.
//!
//! Slot counts (64-byte slots, from each captured image against the NEFF's
//! own stream; identical in all ten captures):
//!
//! | engine | first core (sg00) | second core (sg01) | postamble |
//! |---|---|---|---|
//! | pe   | 67 | 66 | 11 |
//! | act  | 67 | 56 | 11 |
//! | pool | 62 | 61 | 11 |
//! | dve  | 67 | 66 | 11 |
//! | sp   | 50 | 49 |  9 |
//!
//! Aligning the two preambles of each engine slot by slot shows where the
//! first core's extra slots sit: one slot in every engine (pe 56, act 58,
//! pool 53, dve 58, sp 43 of the first core), and on act ten more at slots
//! 2..12 — the activation-table load, which only the core with act tables
//! runs (sg01 of every fixture has none). The single slot is charged to the
//! core role: the ten captures cannot tell it from "the subgraph drives
//! DMA queues" since sg01 is idle in all of them (docs/decisions.md).
//!
//! Content. The postamble is the runtime's own bytes: on every capture it
//! is the same per engine on both cores (semaphore updates, a notification,
//! a final branch; no addresses), except the branch's 32-bit offset at
//! bytes 48..52 of its last slot, which goes back to a fixed preamble slot
//! (the loop start): `(loop slot − last slot) × 64`. Those bytes are kept
//! in `postamble_trn2_2_30.bin` (taken from the second core of a capture,
//! offset zeroed) and the offset is computed ([`super::regs::branch`]). The preamble is the
//! runtime's bytes too (`preamble_trn2_2_30.bin`, both roles): across the
//! ten captures it varies only in the data of the first write to a few
//! queue registers of each engine, which [`QueueShape`] sets from the
//! subgraph's dynamic queue sets. Its address words are the runtime's own
//! (its pages in the small pool's reserved block, the cores' register
//! windows, the partner core's event register, the table-load rings) and
//! local to the channel and the core's place in it, so they hold for every
//! logical core of a trn2 (docs/decisions.md, "Hardware fidelity").

use super::regs::{Record, OP_WRITE, RECORD};
use super::shared::{POSTAMBLE_TRN2, TRN1_UCODE};
use super::{of, CoreRole, Part, PerEngine, Rules, RuntimeCode};
use crate::device::address::RUNTIME_SMALL_POOL_BYTES;
use crate::device::{MemUsage, StartTaken};
use crate::manifest::def::{DmaQueue, QueueKind};
use crate::manifest::engine::EngineType;
use crate::Arch;

pub(super) struct V2_30;

/// Preamble slots on the second core (sg01 of every capture).
const BASE_PREAMBLE: PerEngine = [66, 56, 61, 66, 49];

/// Slots after the NEFF's last kept record (its `0xCC` end marker is
/// deleted): 11, and 9 on sp, on both cores of every capture.
const POSTAMBLE: PerEngine = [11, 11, 11, 11, 9];

/// Preamble slot the postamble's final branch returns to: pe 24, act 24
/// (34 after its act-table block), pool 27, dve 34, sp 21 on both cores
/// of every capture.
const LOOP_SLOT: PerEngine = [24, 24, 27, 34, 21];

/// Act-table load sequence in the act preamble: act slots 2..12 of sg00 in
/// every capture, absent on sg01 (no act tables).
const ACT_TABLE_LOAD_SLOTS: u32 = 10;

/// Where the act-table block starts in the first core's act preamble.
const ACT_TABLE_BLOCK_START: usize = 2;

fn preamble_slots(c: &RuntimeCode) -> u32 {
    let mut n = of(BASE_PREAMBLE, c.engine);
    if c.role == CoreRole::First {
        n += 1;
    }
    if c.engine == EngineType::Act && c.act_tables {
        n += ACT_TABLE_LOAD_SLOTS;
    }
    n
}

/// The runtime's bytes for `engine` and `role`, the first core's with act
/// tables (`preamble_trn2_2_30.bin`).
fn stored(engine: EngineType, role: CoreRole) -> &'static [u8] {
    let mut at = 0;
    for e in EngineType::ALL {
        for r in [CoreRole::First, CoreRole::Second] {
            let mut len = of(BASE_PREAMBLE, e) as usize;
            if r == CoreRole::First {
                len += 1;
                if e == EngineType::Act {
                    len += ACT_TABLE_LOAD_SLOTS as usize;
                }
            }
            let len = len * RECORD;
            if (e, r) == (engine, role) {
                return &PREAMBLE_TRN2[at..at + len];
            }
            at += len;
        }
    }
    &[]
}

fn records(b: &[u8]) -> impl Iterator<Item = Record> + '_ {
    b.chunks_exact(RECORD)
        .map(|r| <Record>::try_from(r).expect("64-byte record"))
}

/// The preamble records: the runtime's bytes for the engine and core role,
/// the act-table block (act slots 2..12 of the first core) taken out or
/// put in as the subgraph has act tables, and the data of the first write
/// to each queue register set from the subgraph's queues
/// ([`QueueShape::register`]).
fn preamble(c: &RuntimeCode) -> Vec<Record> {
    let mut v: Vec<Record> = records(stored(c.engine, c.role)).collect();
    if c.engine == EngineType::Act {
        let block = ACT_TABLE_BLOCK_START..ACT_TABLE_BLOCK_START + ACT_TABLE_LOAD_SLOTS as usize;
        match (c.role, c.act_tables) {
            (CoreRole::First, false) => {
                v.drain(block);
            }
            (CoreRole::Second, true) => {
                let first: Vec<Record> = records(stored(c.engine, CoreRole::First)).collect();
                let at = block.start;
                v.splice(at..at, first[block].iter().copied());
            }
            _ => {}
        }
    }
    let mut seen = 0u32;
    for r in &mut v {
        if r[0] != OP_WRITE || r[24..32] != [0; 8] {
            continue;
        }
        let reg = u64::from_le_bytes(r[16..24].try_into().expect("8 bytes"));
        let offset = (reg & 0xffff) as u16;
        let bit = match offset {
            0x13a0 => 1,
            0x13c0 => 2,
            0x13e0 => 4,
            0x1500 => 8,
            _ => continue,
        };
        if seen & bit != 0 {
            continue;
        }
        seen |= bit;
        if let Some(data) = c.dynamic.register(c.engine, offset) {
            r[32..40].copy_from_slice(&data.to_le_bytes());
        }
    }
    debug_assert_eq!(v.len() as u32, preamble_slots(c));
    v
}

impl Rules for V2_30 {
    fn preamble(&self, c: &RuntimeCode) -> Vec<Part> {
        vec![Part::Known(preamble(c))]
    }

    /// The runtime's bytes, the final branch aimed at [`LOOP_SLOT`].
    fn postamble(&self, c: &RuntimeCode, _pre: u32) -> Vec<Part> {
        let n = of(POSTAMBLE, c.engine) as usize;
        let start = POSTAMBLE[..c.engine.index()].iter().sum::<u32>() as usize * RECORD;
        let mut v: Vec<Record> = records(&POSTAMBLE_TRN2[start..start + n * RECORD]).collect();
        let template = v.pop().expect("a postamble ends with its branch");
        let mut to = of(LOOP_SLOT, c.engine);
        if c.engine == EngineType::Act && c.act_tables {
            to += ACT_TABLE_LOAD_SLOTS;
        }
        vec![Part::Known(v), Part::Branch { template, to }]
    }

    /// Each engine's memory row is its image plus this: +1728 pe/pool,
    /// +1344 act/dve, +1536 sp on sg00 and +1280 on sg01, in all ten
    /// captures. The 256 sp bytes of the first core go with its role, as
    /// its extra preamble slot does.
    fn fixed_block(&self, engine: EngineType, role: CoreRole) -> u64 {
        match (engine, role) {
            (EngineType::Pe | EngineType::Pool, _) => 1728,
            (EngineType::Act | EngineType::Dve, _) => 1344,
            (EngineType::Sp, CoreRole::First) => 1536,
            (EngineType::Sp, CoreRole::Second) => 1280,
        }
    }

    /// trn2 (all ten shared captures, both cores):
    /// - Ucode lib 1,744,584 and GpSimd STDIO 1,088: the whole row, the same
    ///   for every NEFF;
    /// - Generic 13,312: the row is 38,912 on both cores, of which 25,600 are
    ///   the NEFF's DVE tables (1 + 4 + 4 + 16 KiB, staged per core);
    /// - DMA Rings Runtime 28,672: the row is 30,720 on the core with only the
    ///   DVE-table ring and 32,768 on the one with the act-table ring too
    ///   (2,048 bytes each).
    ///
    /// trn1: Ucode lib 100,669,644 (96 MiB + 6,348; trn1 captures of runtimes
    /// 2.23 and 2.25). No trn1 capture of 2.30 shows the other rows; trn1 and
    /// trn3 take the trn2 values (docs/decisions.md).
    fn start_rows(&self, arch: Arch) -> [u64; MemUsage::COUNT] {
        let mut r = [0; MemUsage::COUNT];
        r[MemUsage::Generic.index()] = 13_312;
        r[MemUsage::PoolStdio.index()] = 1_088;
        r[MemUsage::DmaRing.index()] = 28_672;
        r[MemUsage::UcodeLib.index()] = match arch {
            Arch::Sunda => TRN1_UCODE,
            Arch::Cayman | Arch::Mariana => 1_744_584,
        };
        r
    }

    /// Its own small allocations at the bottom of every channel's small pool
    /// ([`RUNTIME_SMALL_POOL_BYTES`]).
    fn start_taken(&self, _arch: Arch) -> StartTaken {
        StartTaken {
            small_pool: RUNTIME_SMALL_POOL_BYTES,
            ..StartTaken::default()
        }
    }
}

/// The subgraph's dynamic DMA queue sets, as the preamble's first writes
/// to each engine's queue registers set them up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueShape {
    /// Dynamic queue sets of the subgraph.
    pub sets: u32,
    /// Queue mask of the hardware set each engine owns (a dynamic set
    /// without a `dynamic_dma` section), by [`EngineType::index`].
    pub hw_mask: [u32; 5],
    /// Queue mask of pool's software (DGE) set, one with `dynamic_dma`.
    pub pool_dge_mask: u32,
    /// First semaphore of sp's hardware set.
    pub sp_semaphore: Option<u32>,
}

impl QueueShape {
    /// No dynamic queues (sg01 of every capture).
    pub const NONE: QueueShape = QueueShape {
        sets: 0,
        hw_mask: [0; 5],
        pool_dge_mask: 0,
        sp_semaphore: None,
    };

    /// The shape of `queues` (every queue of the subgraph).
    pub fn of<'a>(queues: impl IntoIterator<Item = &'a DmaQueue>) -> QueueShape {
        let mut shape = QueueShape::NONE;
        for q in queues.into_iter().filter(|q| q.kind == QueueKind::Dynamic) {
            shape.sets += 1;
            let n = q.num_queues.unwrap_or(0).min(32) as u32;
            let mask = if n >= 32 { u32::MAX } else { (1 << n) - 1 };
            if q.dynamic_dma.is_some() {
                if q.owner == EngineType::Pool {
                    shape.pool_dge_mask |= mask;
                }
            } else {
                shape.hw_mask[q.owner.index()] |= mask;
                if q.owner == EngineType::Sp {
                    let first = q.semaphore_set.iter().min().copied();
                    shape.sp_semaphore = first.map(|s| s.min(u64::from(u32::MAX)) as u32);
                }
            }
        }
        shape
    }

    /// The data of the preamble's first write to register `offset` of
    /// `engine`'s block, or `None` for a register it does not set up.
    ///
    /// - `+0x13a0`: the mask of the engine's hardware queue set — `0xffff`
    ///   for act with `qActDynamicHW` (the baseline fixtures) and for sp
    ///   with `qSPDynamicHW` (all), 0 for pool, whose set is a DGE one, and
    ///   on every core without queues. A rule all 20 cores agree with.
    /// - pool `+0x1500`: pool's DGE mask with the number of the other sets
    ///   in bits 16 and up: `0x2ffff` with three sets, `0x1ffff` with two,
    ///   0 without queues.
    /// - `+0x13c0`: act 1 with a hardware set, 0 without; sp 4 when its set
    ///   starts at semaphore 24, 2 at semaphore 8, i.e. `(first + 8) / 8`.
    ///   Two shapes cannot tell this from other rules (docs/decisions.md).
    /// - `+0x13e0`, every engine: 5 with three sets, 2 with two, 0 with
    ///   none: `3 × sets − 4`, a fit to two shapes (docs/decisions.md).
    pub fn register(self, engine: EngineType, offset: u16) -> Option<u64> {
        let sets = u64::from(self.sets);
        let hw = u64::from(self.hw_mask[engine.index()]);
        Some(match (engine, offset) {
            (_, 0x13a0) => hw,
            (EngineType::Pool, 0x1500) if self.pool_dge_mask != 0 => {
                (sets.saturating_sub(1) << 16) | u64::from(self.pool_dge_mask)
            }
            (EngineType::Pool, 0x1500) => 0,
            (EngineType::Act, 0x13c0) => u64::from(hw != 0),
            (EngineType::Sp, 0x13c0) => self.sp_semaphore.map_or(0, |s| (u64::from(s) + 8) / 8),
            (_, 0x13c0) => 0,
            (_, 0x13e0) => (3 * sets).saturating_sub(4),
            _ => return None,
        })
    }
}

/// The runtime's preambles, per engine in [`EngineType::ALL`] order the
/// first core's (with act tables) then the second core's: the bytes of
/// `kfusion__fused_attention__fused`'s capture, sg00 and sg01, with the
/// data of the first write to each queue register zeroed (set from the
/// subgraph's queues). Their address words are the runtime's own (its
/// pages, its register windows, the table-load rings at their captured
/// places), the same in every capture (docs/decisions.md).
static PREAMBLE_TRN2: &[u8; 611 * RECORD] = include_bytes!("preamble_trn2_2_30.bin");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::line::{Captured, DmaWindow, RingBases};

    fn code(engine: EngineType, role: CoreRole, act_tables: bool) -> RuntimeCode {
        RuntimeCode {
            line: Captured::V2_30,
            engine,
            role,
            act_tables,
            dve_tables: true,
            queues: Vec::new(),
            dynamic: QueueShape::NONE,
            window: DmaWindow::of(
                &crate::device::Geometry::for_arch(Arch::Cayman),
                crate::ids::PCore(4),
            ),
        }
    }

    fn pre(c: &RuntimeCode) -> Vec<Record> {
        c.preamble(&RingBases::default()).records
    }

    #[test]
    fn slot_counts_follow_engine_role_and_act_tables() {
        use EngineType::*;
        let first: Vec<u32> = [Pe, Act, Pool, Dve, Sp]
            .iter()
            .map(|&e| code(e, CoreRole::First, true).preamble_slots())
            .collect();
        assert_eq!(first, [67, 67, 62, 67, 50]);
        let second: Vec<u32> = [Pe, Act, Pool, Dve, Sp]
            .iter()
            .map(|&e| code(e, CoreRole::Second, false).preamble_slots())
            .collect();
        assert_eq!(second, [66, 56, 61, 66, 49]);
        for e in [Pe, Act, Pool, Dve, Sp] {
            let c = code(e, CoreRole::First, true);
            let p = c.preamble(&RingBases::default());
            assert_eq!(p.records.len() as u32, c.preamble_slots());
            assert!(p.filler.is_empty(), "2.30's bytes are all known");
            let post = c.postamble(7);
            assert_eq!(post.records.len() as u32, c.postamble_slots());
            assert!(post.filler.is_empty());
            // Every postamble ends with the branch back to the loop slot.
            let last = post.records.last().unwrap();
            assert_eq!(last[0], 0xA9, "{e:?}");
            let off = i32::from_le_bytes(last[48..52].try_into().unwrap());
            let last_slot = (c.preamble_slots() + 7 + c.postamble_slots() - 1) as i32;
            let mut loop_slot = LOOP_SLOT[e.index()] as i32;
            if e == Act {
                loop_slot += 10;
            }
            assert_eq!(last_slot + off / 64, loop_slot, "{e:?}");
        }
        assert_eq!(code(Sp, CoreRole::Second, false).postamble_slots(), 9);
    }

    #[test]
    fn the_act_table_block_goes_with_the_act_tables() {
        use EngineType::Act;
        let with = pre(&code(Act, CoreRole::First, true));
        let without = pre(&code(Act, CoreRole::First, false));
        assert_eq!(without.len(), with.len() - 10);
        assert_eq!(without[..2], with[..2]);
        assert_eq!(without[2..], with[12..]);
        let second = pre(&code(Act, CoreRole::Second, false));
        let second_with = pre(&code(Act, CoreRole::Second, true));
        assert_eq!(second_with.len(), second.len() + 10);
        assert_eq!(second_with[2..12], with[2..12]);
        for c in [(CoreRole::First, false), (CoreRole::Second, true)] {
            let code = code(Act, c.0, c.1);
            assert_eq!(pre(&code).len() as u32, code.preamble_slots());
        }
    }

    #[test]
    fn queue_registers_follow_the_queue_sets() {
        use EngineType::*;
        // Three sets (the baseline fixtures): act and sp hardware, pool DGE.
        let baseline = QueueShape {
            sets: 3,
            hw_mask: [0, 0xffff, 0, 0, 0xffff],
            pool_dge_mask: 0xffff,
            sp_semaphore: Some(24),
        };
        assert_eq!(baseline.register(Act, 0x13a0), Some(0xffff));
        assert_eq!(baseline.register(Act, 0x13c0), Some(1));
        assert_eq!(baseline.register(Sp, 0x13c0), Some(4));
        assert_eq!(baseline.register(Pe, 0x13e0), Some(5));
        assert_eq!(baseline.register(Pool, 0x1500), Some(0x2ffff));
        assert_eq!(baseline.register(Pool, 0x13a0), Some(0));
        assert_eq!(baseline.register(Pe, 0x14c0), None);
        // No queues (every second core): all zero.
        for e in EngineType::ALL {
            for r in [0x13a0, 0x13c0, 0x13e0] {
                assert_eq!(QueueShape::NONE.register(e, r), Some(0), "{e:?} {r:#x}");
            }
        }
        assert_eq!(QueueShape::NONE.register(Pool, 0x1500), Some(0));
    }
}
