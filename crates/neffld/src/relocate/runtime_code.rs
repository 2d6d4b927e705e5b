//! What only the runtime writes into an instruction image: its preamble
//! before the NEFF's records and its postamble after them, per engine and
//! per core role, and the fixed block of instruction memory it keeps beside
//! each image. Every figure here is the runtime's (2.30 on trn2), measured
//! on the ten shared hardware captures (spec/capture.md); the NEFF does not
//! say them.
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
//! offset zeroed) and the offset is computed. The preamble is the
//! runtime's bytes too (`preamble_trn2_2_30.bin`, both roles): across the
//! ten captures it varies only in the data of the first write to a few
//! queue registers of each engine, which [`QueueShape`] sets from the
//! subgraph's dynamic queue sets. Its address words are the runtime's own
//! (its pages in the small pool's reserved block, the cores' register
//! windows, the partner core's event register, the table-load rings) and
//! local to the channel and the core's place in it, so they hold for every
//! logical core of a trn2 (docs/decisions.md, "Hardware fidelity").

use crate::manifest::def::{DmaQueue, QueueKind};
use crate::manifest::engine::EngineType;

/// Which physical core of its logical core a subgraph runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CoreRole {
    /// The first (or only) physical core: `sg00` of a two-core logical core.
    First,
    /// Any later one: `sg01` of a two-core logical core.
    Second,
}

impl CoreRole {
    /// The role of subgraph `k` of a logical core.
    pub fn of_subgraph(k: usize) -> CoreRole {
        if k == 0 {
            CoreRole::First
        } else {
            CoreRole::Second
        }
    }
}

/// What of the subgraph changes the runtime's own code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuntimeCode {
    pub engine: EngineType,
    pub role: CoreRole,
    /// The subgraph stages activation tables (the act preamble loads them).
    pub act_tables: bool,
    /// The subgraph's dynamic DMA queue sets, which the preamble configures.
    pub queues: QueueShape,
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

/// Alignment of every instruction image: one 32 KiB slot. In all ten
/// captures each image starts on a 32 KiB boundary, and the pe images of
/// 34,944 and 35,008 bytes (two slots) sit at `0x…408000`, which is not
/// 64 KiB-aligned: stage.md §6.8's `max(0x8000, size)` rounded up to a
/// power of two is corrected (docs/decisions.md).
pub const IMAGE_ALIGN: u64 = 0x8000;

/// The order in which runtime 2.30 allocates the instruction images of a
/// two-core logical core on trn2, as `(role, engine)`: the images of a load
/// fill consecutive 32 KiB slots in exactly this order in all ten captures,
/// except that in five of them the two cores' pool and sp images come
/// second core first. The two cores are built on two threads and the
/// second, which stages no act tables and no rings, starts ahead; the
/// pool/sp swap is the race between them, which nothing in a NEFF decides,
/// so the order of the other five is kept (docs/decisions.md).
const IMAGE_ORDER: [(CoreRole, EngineType); 10] = [
    (CoreRole::Second, EngineType::Act),
    (CoreRole::Second, EngineType::Dve),
    (CoreRole::First, EngineType::Act),
    (CoreRole::Second, EngineType::Pe),
    (CoreRole::First, EngineType::Dve),
    (CoreRole::First, EngineType::Pe),
    (CoreRole::First, EngineType::Pool),
    (CoreRole::Second, EngineType::Pool),
    (CoreRole::First, EngineType::Sp),
    (CoreRole::Second, EngineType::Sp),
];

/// Where an image of `role` and `engine` comes in a load's image
/// allocation order ([`IMAGE_ORDER`]). A one-core logical core gets its
/// images in the first core's order (act, dve, pe, pool, sp, the kbin's
/// alphabetical order); every later core of a larger one shares the second
/// core's ranks, lower cores first.
pub fn image_rank(role: CoreRole, engine: EngineType) -> usize {
    IMAGE_ORDER
        .iter()
        .position(|&x| x == (role, engine))
        .unwrap_or(IMAGE_ORDER.len())
}

/// Act-table load sequence in the act preamble: act slots 2..12 of sg00 in
/// every capture, absent on sg01 (no act tables).
const ACT_TABLE_LOAD_SLOTS: u32 = 10;

impl RuntimeCode {
    /// Preamble slots on the second core (sg01 of every capture).
    fn base_preamble(self) -> u32 {
        match self.engine {
            EngineType::Pe | EngineType::Dve => 66,
            EngineType::Act => 56,
            EngineType::Pool => 61,
            EngineType::Sp => 49,
        }
    }

    /// Slots the runtime puts before the NEFF's first record.
    pub fn preamble_slots(self) -> u32 {
        let mut n = self.base_preamble();
        if self.role == CoreRole::First {
            n += 1;
        }
        if self.engine == EngineType::Act && self.act_tables {
            n += ACT_TABLE_LOAD_SLOTS;
        }
        n
    }

    /// Slots after the NEFF's last kept record (its `0xCC` end marker is
    /// deleted): 11, and 9 on sp, on both cores of every capture.
    pub fn postamble_slots(self) -> u32 {
        match self.engine {
            EngineType::Sp => 9,
            _ => 11,
        }
    }

    /// Instruction memory the runtime charges beside the image: each
    /// engine's memory row is its image plus this (+1728 pe/pool, +1344
    /// act/dve, +1536 sp on sg00 and +1280 on sg01, in all ten captures).
    /// The 256 sp bytes of the first core go with its role, as its extra
    /// preamble slot does.
    pub fn fixed_block(self) -> u64 {
        match (self.engine, self.role) {
            (EngineType::Pe | EngineType::Pool, _) => 1728,
            (EngineType::Act | EngineType::Dve, _) => 1344,
            (EngineType::Sp, CoreRole::First) => 1536,
            (EngineType::Sp, CoreRole::Second) => 1280,
        }
    }

    /// The preamble records: the runtime's bytes for the engine and core
    /// role (`preamble_trn2_2_30.bin`), the act-table block (act slots
    /// 2..12 of the first core) taken out or put in as the subgraph has act
    /// tables, and the data of the first write to each queue register set
    /// from the subgraph's queues ([`QueueShape::register`]).
    pub fn preamble(self) -> Vec<[u8; 64]> {
        let stored = |role: CoreRole| -> &'static [u8] {
            let mut at = 0;
            for e in PREAMBLE_ORDER {
                for r in [CoreRole::First, CoreRole::Second] {
                    let len = RuntimeCode {
                        engine: e,
                        role: r,
                        act_tables: r == CoreRole::First,
                        queues: QueueShape::NONE,
                    }
                    .preamble_slots() as usize
                        * RECORD;
                    if (e, r) == (self.engine, role) {
                        return &PREAMBLE_TRN2[at..at + len];
                    }
                    at += len;
                }
            }
            &[]
        };
        let records = |b: &'static [u8]| {
            b.chunks_exact(RECORD)
                .map(|r| <[u8; 64]>::try_from(r).expect("64-byte record"))
        };
        let mut v: Vec<[u8; 64]> = records(stored(self.role)).collect();
        if self.engine == EngineType::Act {
            let block =
                ACT_TABLE_BLOCK_START..ACT_TABLE_BLOCK_START + ACT_TABLE_LOAD_SLOTS as usize;
            match (self.role, self.act_tables) {
                (CoreRole::First, false) => {
                    v.drain(block);
                }
                (CoreRole::Second, true) => {
                    let first: Vec<[u8; 64]> = records(stored(CoreRole::First)).collect();
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
            if let Some(data) = self.queues.register(self.engine, offset) {
                r[32..40].copy_from_slice(&data.to_le_bytes());
            }
        }
        v
    }

    /// Preamble slot the postamble's final branch returns to: pe 24, act 24
    /// (34 after its act-table block), pool 27, dve 34, sp 21 on both cores
    /// of every capture.
    pub fn loop_slot(self) -> u32 {
        let base = match self.engine {
            EngineType::Pe | EngineType::Act => 24,
            EngineType::Pool => 27,
            EngineType::Dve => 34,
            EngineType::Sp => 21,
        };
        if self.engine == EngineType::Act && self.act_tables {
            base + ACT_TABLE_LOAD_SLOTS
        } else {
            base
        }
    }

    /// The postamble records of an image whose NEFF part is `main_slots`
    /// long: the runtime's bytes, the final branch aimed at [`loop_slot`].
    ///
    /// [`loop_slot`]: RuntimeCode::loop_slot
    pub fn postamble(self, main_slots: u32) -> Vec<[u8; 64]> {
        let n = self.postamble_slots() as usize;
        let start = match self.engine {
            EngineType::Pe => 0,
            EngineType::Act => 11,
            EngineType::Pool => 22,
            EngineType::Dve => 33,
            EngineType::Sp => 44,
        } * RECORD;
        let mut v: Vec<[u8; 64]> = POSTAMBLE_TRN2[start..start + n * RECORD]
            .chunks_exact(RECORD)
            .map(|r| r.try_into().expect("64-byte record"))
            .collect();
        let last = i64::from(self.preamble_slots() + main_slots) + n as i64 - 1;
        let offset = (i64::from(self.loop_slot()) - last) * RECORD as i64;
        let offset = i32::try_from(offset).unwrap_or(i32::MIN);
        if let Some(branch) = v.last_mut() {
            branch[BRANCH_OFFSET..BRANCH_OFFSET + 4].copy_from_slice(&offset.to_le_bytes());
        }
        v
    }
}

/// The runtime's preambles, per engine in [`PREAMBLE_ORDER`] the first
/// core's (with act tables) then the second core's: the bytes of
/// `kfusion__fused_attention__fused`'s capture, sg00 and sg01, with the
/// data of the first write to each queue register zeroed (set from the
/// subgraph's queues). Their address words are the runtime's own (its
/// pages, its register windows, the table-load rings at their captured
/// places), the same in every capture (docs/decisions.md).
static PREAMBLE_TRN2: &[u8; 611 * RECORD] = include_bytes!("preamble_trn2_2_30.bin");

/// Engines in the order of `preamble_trn2_2_30.bin` (eng_type order).
const PREAMBLE_ORDER: [EngineType; 5] = [
    EngineType::Pe,
    EngineType::Act,
    EngineType::Pool,
    EngineType::Dve,
    EngineType::Sp,
];

/// Where the act-table block starts in the first core's act preamble.
const ACT_TABLE_BLOCK_START: usize = 2;

/// The runtime's register WRITE record (`0xA5`: register at bytes 16..24,
/// a second register or 0 at 24..32, data at 32..40).
const OP_WRITE: u8 = 0xA5;

/// The runtime's postambles (pe, act, pool, dve: 11 slots; sp: 9), branch
/// offsets zeroed.
static POSTAMBLE_TRN2: &[u8; 53 * RECORD] = include_bytes!("postamble_trn2_2_30.bin");

const RECORD: usize = 64;

/// Where the final branch keeps its offset.
const BRANCH_OFFSET: usize = 48;

#[cfg(test)]
mod tests {
    use super::*;

    fn code(engine: EngineType, role: CoreRole, act_tables: bool) -> RuntimeCode {
        RuntimeCode {
            engine,
            role,
            act_tables,
            queues: QueueShape::NONE,
        }
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
            assert_eq!(c.preamble().len() as u32, c.preamble_slots());
            let post = c.postamble(7);
            assert_eq!(post.len() as u32, c.postamble_slots());
            // Every postamble ends with the branch back to the loop slot.
            let last = post.last().unwrap();
            assert_eq!(last[0], 0xA9, "{e:?}");
            let off = i32::from_le_bytes(last[48..52].try_into().unwrap());
            let last_slot = (c.preamble_slots() + 7 + c.postamble_slots() - 1) as i32;
            assert_eq!(last_slot + off / 64, c.loop_slot() as i32, "{e:?}");
        }
        assert_eq!(code(Sp, CoreRole::Second, false).postamble_slots(), 9);
    }

    #[test]
    fn the_act_table_block_goes_with_the_act_tables() {
        use EngineType::Act;
        let with = code(Act, CoreRole::First, true).preamble();
        let without = code(Act, CoreRole::First, false).preamble();
        assert_eq!(without.len(), with.len() - 10);
        assert_eq!(without[..2], with[..2]);
        assert_eq!(without[2..], with[12..]);
        let second = code(Act, CoreRole::Second, false).preamble();
        let second_with = code(Act, CoreRole::Second, true).preamble();
        assert_eq!(second_with.len(), second.len() + 10);
        assert_eq!(second_with[2..12], with[2..12]);
        for c in [(CoreRole::First, false), (CoreRole::Second, true)] {
            let code = code(Act, c.0, c.1);
            assert_eq!(code.preamble().len() as u32, code.preamble_slots());
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
