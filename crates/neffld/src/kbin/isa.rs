//! Instruction-stream facts the build needs (parse.md §8): 64-byte records,
//! the opcode census, the ADDR8 operand of `0xD4`, and the `0xC1` trigger.
//! Records are read, never rewritten: lowering belongs to the stage side.

use std::collections::BTreeMap;

/// Every engine stream is a flat array of records of this size.
pub const RECORD_LEN: usize = 64;

pub const OP_SET_ORDERING_MODE: u8 = 0xB1;
pub const OP_PSEUDO_BRANCH_LABEL: u8 = 0xCC;
#[cfg(any(test, feature = "testkit"))]
pub const OP_EVENT_SEMAPHORE: u8 = 0xA0;
#[cfg(any(test, feature = "testkit"))]
pub const OP_NOP: u8 = 0xA4;
pub const OP_PSEUDO_DMATRIGGER: u8 = 0xC1;
pub const OP_PSEUDO_DMA_DIRECT2D: u8 = 0xD4;

pub const OP_FUNCTION_BEGIN: u8 = 0xD1;
pub const OP_FUNCTION_CALL: u8 = 0xD3;
pub const OP_PSEUDO_INST: u8 = 0xDF;
pub const OP_COMPARE_BRANCH: u8 = 0xA9;
/// Sub-op (byte 12) of `0xDF` that ends a stream.
pub const PSEUDO_INST_EXIT: u8 = 1;

/// True for the host-only opcodes that never reach an engine as written:
/// the band `0xC1..=0xDF` and the `0xA9` straggler (stage.md §8.1).
pub fn is_pseudo(op: u8) -> bool {
    (0xC1..=0xDF).contains(&op) || op == OP_COMPARE_BRANCH
}

/// ADDR8 operand modes (byte 7).
pub const ADDR8_STATIC_VAR: u8 = 0x10;
pub const ADDR8_DGE_INDEX: u8 = 0x20;

/// Byte offsets of the source and destination ADDR8 operands in `0xD4`.
pub const D4_SRC: usize = 16;
pub const D4_DST: usize = 40;

/// The records of a stream; a trailing partial record is not a record (the
/// manifest layer already rejects such streams).
pub fn records(stream: &[u8]) -> impl Iterator<Item = &[u8]> {
    stream.chunks_exact(RECORD_LEN)
}

/// Opcode → number of records.
pub type OpcodeCensus = BTreeMap<u8, u64>;

pub fn census(stream: &[u8]) -> OpcodeCensus {
    // Count in a flat table (streams run to tens of thousands of records),
    // then keep only the opcodes present.
    let mut counts = [0u64; 256];
    for r in records(stream) {
        counts[usize::from(r[0])] += 1;
    }
    (0..=u8::MAX).zip(counts).filter(|&(_, n)| n > 0).collect()
}

/// An 8-byte address operand: bytes 0..3 offset, 4..5 id, 6 reserved, 7 mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Addr8 {
    /// Byte offset inside the referenced object.
    pub offset: u32,
    /// var_id (mode 0x10) or DGE list index (mode 0x20).
    pub id: u16,
    pub reserved: u8,
    pub mode: u8,
}

impl Addr8 {
    pub fn decode(b: &[u8]) -> Option<Addr8> {
        let b: &[u8; 8] = b.get(..8)?.try_into().ok()?;
        Some(Addr8 {
            offset: u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            id: u16::from_le_bytes([b[4], b[5]]),
            reserved: b[6],
            mode: b[7],
        })
    }

    #[cfg(any(test, feature = "testkit"))]
    pub fn encode(&self) -> [u8; 8] {
        let o = self.offset.to_le_bytes();
        let i = self.id.to_le_bytes();
        [o[0], o[1], o[2], o[3], i[0], i[1], self.reserved, self.mode]
    }
}

/// The two operands of a `0xD4` record, if it is one.
pub fn d4_operands(record: &[u8]) -> Option<(Addr8, Addr8)> {
    if record.first() != Some(&OP_PSEUDO_DMA_DIRECT2D) {
        return None;
    }
    Some((
        Addr8::decode(record.get(D4_SRC..D4_SRC + 8)?)?,
        Addr8::decode(record.get(D4_DST..D4_DST + 8)?)?,
    ))
}

/// A `0xC1` PSEUDO_DMATRIGGER: queue name (bytes 12..43, NUL-padded) and block id (48..51).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DmaTrigger {
    pub queue: String,
    pub block_id: u32,
}

pub fn trigger(record: &[u8]) -> Option<DmaTrigger> {
    if record.first() != Some(&OP_PSEUDO_DMATRIGGER) {
        return None;
    }
    let name = record.get(12..44)?;
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    let id = record.get(48..52)?;
    Some(DmaTrigger {
        queue: String::from_utf8_lossy(&name[..end]).into_owned(),
        block_id: u32::from_le_bytes([id[0], id[1], id[2], id[3]]),
    })
}

/// Builders for tests and tooling: records with the layouts above.
#[cfg(any(test, feature = "testkit"))]
pub mod encode {
    use super::*;

    /// A record with only the opcode and `inst_word_len` (0x10) set.
    pub fn record(opcode: u8) -> [u8; RECORD_LEN] {
        let mut r = [0u8; RECORD_LEN];
        r[0] = opcode;
        r[1] = 0x10;
        r
    }

    pub fn trigger(queue: &str, block_id: u32) -> [u8; RECORD_LEN] {
        let mut r = record(OP_PSEUDO_DMATRIGGER);
        let n = queue.len().min(32);
        r[12..12 + n].copy_from_slice(&queue.as_bytes()[..n]);
        r[48..52].copy_from_slice(&block_id.to_le_bytes());
        r
    }

    pub fn dma_direct2d(src: Addr8, dst: Addr8) -> [u8; RECORD_LEN] {
        let mut r = record(OP_PSEUDO_DMA_DIRECT2D);
        r[D4_SRC..D4_SRC + 8].copy_from_slice(&src.encode());
        r[D4_DST..D4_DST + 8].copy_from_slice(&dst.encode());
        r[14] = 16;
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addr8_round_trips() {
        let a = Addr8 {
            offset: 0xFF00_0000,
            id: 2,
            reserved: 0,
            mode: ADDR8_DGE_INDEX,
        };
        assert_eq!(Addr8::decode(&a.encode()), Some(a));
        let r = encode::dma_direct2d(a, a);
        assert_eq!(d4_operands(&r), Some((a, a)));
        assert_eq!(d4_operands(&encode::record(0x01)), None);
    }

    #[test]
    fn trigger_reads_name_and_id() {
        let r = encode::trigger("qPoolSpillReload0", 15_399);
        let t = trigger(&r).unwrap();
        assert_eq!(t.queue, "qPoolSpillReload0");
        assert_eq!(t.block_id, 15_399);
        let mut stream = r.to_vec();
        stream.extend_from_slice(&encode::record(OP_NOP));
        let c = census(&stream);
        assert_eq!(c.get(&OP_PSEUDO_DMATRIGGER), Some(&1));
        assert_eq!(c.get(&OP_NOP), Some(&1));
    }
}
