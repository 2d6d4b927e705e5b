//! Resolved relocations: what the KBIN build decided about every pseudo
//! record of a stream, so that lowering only applies addresses.
//!
//! For each engine, in record order: which records are deleted, which
//! `0xD4` operand slot refers to which variable at which offset (the DGE
//! indirection already followed), and which ring and block each `0xC1`
//! trigger starts. The values are built only by the KBIN build, after every
//! check on them passed; staging, relocation and the staged-model check
//! read them and decide nothing.

use super::collective::CcLowering;
use crate::ids::VarId;

/// A variable and a byte offset inside its staged extent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operand {
    var: VarId,
    offset: u64,
    dge_index: Option<u16>,
}

impl Operand {
    pub(crate) fn new(var: VarId, offset: u64) -> Operand {
        Operand {
            var,
            offset,
            dge_index: None,
        }
    }

    /// An operand the NEFF wrote as row `index` of the `dge-table` list
    /// (ADDR8 mode `0x20`), which names `var`.
    pub(crate) fn through_dge(var: VarId, offset: u64, index: u16) -> Operand {
        Operand {
            var,
            offset,
            dge_index: Some(index),
        }
    }

    pub fn var(&self) -> VarId {
        self.var
    }

    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The `dge-table` row the NEFF named the variable by, if it did: such
    /// an operand of an input or output stays as written on the device
    /// (the DGE resolves it at execution, as every capture shows).
    pub fn dge_index(&self) -> Option<u16> {
        self.dge_index
    }
}

/// A static DMA block: the index of its ring in [`Kbin::dma_rings`] and of
/// the block in that ring's [`DmaRing::blocks`].
///
/// [`Kbin::dma_rings`]: super::Kbin::dma_rings
/// [`DmaRing::blocks`]: super::DmaRing::blocks
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockRef {
    ring: usize,
    block: usize,
}

impl BlockRef {
    pub(crate) fn new(ring: usize, block: usize) -> BlockRef {
        BlockRef { ring, block }
    }

    pub fn ring(&self) -> usize {
        self.ring
    }

    pub fn block(&self) -> usize {
        self.block
    }
}

/// What lowering does to one pseudo record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lowering {
    /// `0xCC` branch label, `0xDF` EXIT: no device record.
    Delete,
    /// `0xD4`: both ADDR8 operands rewritten in place.
    Direct { src: Operand, dst: Operand },
    /// `0xC1`: the runtime's register write that starts this block.
    Trigger(BlockRef),
    /// The collectives band: one record each (a PTC2's extension is
    /// [`Lowering::Delete`]d).
    Collective(CcLowering),
}

/// One record of a stream that lowering changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Relocation {
    record: u32,
    lowering: Lowering,
}

impl Relocation {
    pub(crate) fn new(record: u32, lowering: Lowering) -> Relocation {
        Relocation { record, lowering }
    }

    /// Index of the record in the NEFF stream.
    pub fn record(&self) -> u32 {
        self.record
    }

    pub fn lowering(&self) -> Lowering {
        self.lowering
    }
}
