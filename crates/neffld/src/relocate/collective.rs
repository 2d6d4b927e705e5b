//! The records the collectives band lowers to (spec/collectives.md §2): one
//! per pseudo, as the runtime's `instr_col_*` translators emit them.
//!
//! The runtime's trigger is its 32-bit register write (`add_wr32`, opcode
//! `0xA5`, the write every DMA trigger becomes) to the address its
//! collectives engine returns when it plans the operation. That address is
//! not public; neffld writes the increment window of the semaphores of
//! the TOP_SP that runs the record's stream (`0x82_8000_0000`, one TOP_SP
//! every `0x4000_0000`, increments at `+0x1800`, semaphore 0 being the
//! engine's trigger), where the public notes place the doorbell the
//! TOP_SP polls. The records of the rank-id and global-id loads are the
//! runtime's `add_ldr32_addr` and `add_mov32_imm` / `add_str32_imm_*`,
//! whose opcodes are not public either: neffld writes `0xA6` and `0xA7`.
//! Every such record is marked approximate in the image
//! (docs/decisions.md, "Collectives").

use crate::kbin::collective::Events;
use crate::kbin::CcLowering;
use crate::line::regs::{Record, OP_WRITE, RECORD};

/// The first TOP_SP's semaphore window.
pub const TOPSP_BASE: u64 = 0x82_8000_0000;
/// One TOP_SP's window to the next.
pub const TOPSP_STRIDE: u64 = 0x4000_0000;
/// The semaphore increment window in a TOP_SP's.
pub const SEMAPHORE_INC: u64 = 0x1800;
/// Where neffld places the rank ids of a stream's groups, one word each.
pub const RANK_ID_WINDOW: u64 = 0x2000;

/// neffld's opcode for the runtime's 32-bit load into a register.
pub const OP_LOAD32: u8 = 0xA6;
/// neffld's opcode for the runtime's 32-bit immediate move (into a
/// register) or store (to memory).
pub const OP_MOVE32: u8 = 0xA7;

fn topsp(stream: u16) -> u64 {
    TOPSP_BASE + u64::from(stream) * TOPSP_STRIDE
}

/// The doorbell a collective of `stream` rings.
pub fn doorbell(stream: u16) -> u64 {
    topsp(stream) + SEMAPHORE_INC
}

/// Where the rank id of `group` is read from.
pub fn rank_id_address(stream: u16, group: u16) -> u64 {
    topsp(stream) + RANK_ID_WINDOW + 4 * u64::from(group)
}

fn put(r: &mut Record, word: usize, value: u64) {
    r[word * 8..word * 8 + 8].copy_from_slice(&value.to_le_bytes());
}

fn with_events(op: u8, events: &Events) -> Record {
    let mut r = [0u8; RECORD];
    r[0] = op;
    r[1] = 0x10;
    r[4..12].copy_from_slice(events);
    r
}

/// The trigger of a collective: one 32-bit write of 1 to its doorbell
/// (width at byte 12, address in word 2, data in word 4, as the runtime's
/// other register writes).
pub fn trigger(events: &Events, stream: u16) -> Record {
    let mut r = with_events(OP_WRITE, events);
    r[12] = 4;
    put(&mut r, 2, doorbell(stream));
    put(&mut r, 4, 1);
    r
}

/// A 4-byte load of the rank id of `group` into register `dst_reg`.
pub fn rank_id(events: &Events, stream: u16, group: u16, dst_reg: u16) -> Record {
    let mut r = with_events(OP_LOAD32, events);
    r[12] = 4;
    r[14..16].copy_from_slice(&dst_reg.to_le_bytes());
    put(&mut r, 2, rank_id_address(stream, group));
    r
}

/// The global id moved into register `reg`.
pub fn gid_to_register(events: &Events, reg: u8, gid: u32) -> Record {
    let mut r = with_events(OP_MOVE32, events);
    r[12] = 4;
    r[14] = reg;
    put(&mut r, 4, u64::from(gid));
    r
}

/// The global id stored at `word` (an address as the runtime writes one,
/// or an IO template), in word 2 where the record's operand is.
pub fn gid_to_memory(events: &Events, word: u64, gid: u32) -> Record {
    let mut r = with_events(OP_MOVE32, events);
    r[12] = 4;
    r[13] = 1;
    put(&mut r, 2, word);
    put(&mut r, 4, u64::from(gid));
    r
}

/// The record of a doorbell or a rank-id load, which no address of the
/// plan changes; `None` for a global id, whose record needs the id and,
/// stored to memory, its variable's address.
pub fn fixed(l: &CcLowering) -> Option<Record> {
    match *l {
        CcLowering::Trigger { events, stream } => Some(trigger(&events, stream)),
        CcLowering::RankId {
            events,
            group,
            stream,
            dst_reg,
        } => Some(rank_id(&events, stream, group, dst_reg)),
        CcLowering::GlobalId { .. } => None,
    }
}

/// Image offset of a memory destination's word in a [`gid_to_memory`] record.
pub const GID_MEMORY_WORD: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trigger_writes_one_to_its_streams_doorbell() {
        let ev = [4, 10, 0x13, 22, 0, 0, 0, 0];
        let r = trigger(&ev, 1);
        assert_eq!((r[0], r[1], r[12], r[13]), (0xA5, 0x10, 4, 0));
        assert_eq!(&r[4..12], &ev);
        assert_eq!(
            u64::from_le_bytes(r[16..24].try_into().unwrap()),
            0x82_8000_0000 + 0x4000_0000 + 0x1800
        );
        assert_eq!(u64::from_le_bytes(r[32..40].try_into().unwrap()), 1);
    }

    #[test]
    fn rank_ids_are_a_word_per_group() {
        assert_eq!(rank_id_address(0, 3) - rank_id_address(0, 0), 12);
        let r = rank_id(&[0; 8], 0, 2, 7);
        assert_eq!((r[0], r[12], r[14]), (OP_LOAD32, 4, 7));
    }
}
