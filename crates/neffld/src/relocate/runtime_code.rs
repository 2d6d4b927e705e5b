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
//! Content: the slot *counts* are the runtime's; the slot *bytes* are not
//! yet (docs/decisions.md, "Runtime preamble"): a branch hint and a
//! semaphore wait open the preamble, the rest is the no-op control record
//! `0xB1`, and the postamble keeps its semaphore update, done notification
//! and branch to start, padded the same way.

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

    /// The postamble records: semaphore update, done notification, filler,
    /// branch back to the start last.
    pub fn postamble(self) -> Vec<[u8; 64]> {
        let n = self.postamble_slots() as usize;
        let mut v = Vec::with_capacity(n);
        v.push(control_record(0xA0, |r| {
            r[0x22] = 0x15; // update mode: semaphore increment
            r[0x28] = 1;
        }));
        v.push(control_record(0xA4, |r| r[6] = 17)); // sync event set
        v.resize(n.saturating_sub(1).max(2), nop());
        v.push(control_record(super::instr::OP_COMPARE_BRANCH, |r| {
            r[3] = 2; // relative-encoded branch
        }));
        v.truncate(n);
        v
    }
}

fn control_record(opcode: u8, fill: impl FnOnce(&mut [u8; 64])) -> [u8; 64] {
    let mut r = [0u8; 64];
    r[0] = opcode;
    r[1] = 0x10;
    fill(&mut r);
    r
}

/// The `0xB1` control record the captured preambles (slot 1 of every
/// engine) and idle NEFF streams use as a no-op.
fn nop() -> [u8; 64] {
    control_record(0xB1, |r| r[12] = 1)
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
            assert_eq!(c.postamble().len() as u32, c.postamble_slots());
        }
        assert_eq!(code(Sp, CoreRole::Second, false).postamble_slots(), 9);
        assert_eq!(
            code(Sp, CoreRole::First, false).postamble().last().unwrap()[0],
            0xA9
        );
    }
}
