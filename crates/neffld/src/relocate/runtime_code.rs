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
//! offset zeroed) and the offset is computed. The preamble's *bytes* are not
//! the runtime's yet (docs/decisions.md, "Hardware fidelity"): it holds
//! addresses of the runtime's own device map; a branch hint and a semaphore
//! wait open it and `0xA4` no-op records fill it to the runtime's count.

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

    /// The preamble records.
    pub fn preamble(self) -> Vec<[u8; 64]> {
        let n = self.preamble_slots() as usize;
        let mut v = Vec::with_capacity(n);
        v.push(control_record(0xB5, |_| {})); // branch hint
        v.push(control_record(0xA0, |r| r[0x20] = 1)); // semaphore wait (model switch)
        v.resize(n.max(2), nop());
        v.truncate(n);
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

/// The runtime's postambles (pe, act, pool, dve: 11 slots; sp: 9), branch
/// offsets zeroed.
static POSTAMBLE_TRN2: &[u8; 53 * RECORD] = include_bytes!("postamble_trn2_2_30.bin");

const RECORD: usize = 64;

/// Where the final branch keeps its offset.
const BRANCH_OFFSET: usize = 48;

fn control_record(opcode: u8, fill: impl FnOnce(&mut [u8; 64])) -> [u8; 64] {
    let mut r = [0u8; 64];
    r[0] = opcode;
    r[1] = 0x10;
    fill(&mut r);
    r
}

/// The `0xA4` no-op control record.
fn nop() -> [u8; 64] {
    control_record(crate::kbin::isa::OP_NOP, |_| {})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(engine: EngineType, role: CoreRole, act_tables: bool) -> RuntimeCode {
        RuntimeCode {
            engine,
            role,
            act_tables,
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
}
