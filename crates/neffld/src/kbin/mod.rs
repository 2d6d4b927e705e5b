//! S3: one sealed [`Kbin`] record per subgraph, built from the manifests
//! (parse.md §7). The build is where the NEFF's facts about its streams are
//! checked — every pseudo record is known, every trigger starts exactly one
//! block and every block is triggered once, every ADDR8 operand resolves to
//! a staged variable in bounds, every remote variable binds, every DMA
//! block's access [`pattern`]s pair up within the vring limit — and what the
//! checks found is kept as resolved [`reloc`]ations and ring sizes. A `Kbin` is built only
//! here and read through accessors, so whatever holds one may trust it:
//! staging and relocation apply addresses and decide nothing.
//!
//! Instruction streams and tables stay where S1 put them: a kbin holds
//! [`Blob`](crate::manifest::Blob) ranges into the archive's decoded buffer,
//! so the caller keeps the [`Neff`](crate::container::Neff) alive beside it.

pub mod build;
pub mod collective;
pub mod isa;
pub mod pattern;
pub mod reloc;
pub mod vars;

use thiserror::Error;

pub use build::{build, DmaRing, EngineProgram, Kbin};
pub use collective::CcLowering;
pub use pattern::RingCounts;
pub use reloc::{BlockRef, Lowering, Operand, Relocation};

use crate::NrtStatus;

/// Everything the KBIN build can reject. All map to `NRT_INVALID` but a
/// ring past the vring limit (`NRT_QUEUE_FULL`, stage.md §14).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum KbinError {
    #[error("DMA trigger {queue}/{id} in {stream} has no matching block (instruction {instr})")]
    TriggerWithoutBlock {
        queue: String,
        id: u32,
        stream: String,
        instr: u64,
    },
    #[error("DMA block {queue}/{id} in {stream} is never triggered")]
    BlockNeverTriggered {
        queue: String,
        id: u64,
        stream: String,
    },
    #[error("DMA block {queue}/{id} in {stream} is triggered {count} times (expected once)")]
    BlockTriggeredTwice {
        queue: String,
        id: u32,
        stream: String,
        count: u64,
    },
    #[error("invalid var_id {var_id} in instruction {instr} of {stream}")]
    Addr8VarId {
        var_id: u32,
        instr: u64,
        stream: String,
    },
    #[error("invalid DGE index {index} in instruction {instr} of {stream} (the dge-table list has {len} entries)")]
    Addr8DgeIndex {
        index: u16,
        instr: u64,
        stream: String,
        len: usize,
    },
    #[error("unsupported ADDR8 mode {mode:#x} in instruction {instr} of {stream}")]
    Addr8Mode {
        mode: u8,
        instr: u64,
        stream: String,
    },
    #[error("invalid offset in {var}, {size} <= {offset} (instruction {instr} of {stream})")]
    Addr8OutOfBounds {
        var: String,
        instr: u64,
        stream: String,
        offset: u64,
        size: u64,
    },
    #[error("Variable {var} is not staged in HBM (instruction {instr} of {stream})")]
    Addr8NotStaged {
        var: String,
        instr: u64,
        stream: String,
    },
    #[error("the subgraph has {count} dge-table variables; ADDR8 mode 0x20 needs exactly one (instruction {instr} of {stream})")]
    DgeTables {
        count: usize,
        instr: u64,
        stream: String,
    },
    #[error("instruction {instr} (opcode {opcode:#04x}) of {stream}: {detail}")]
    Pseudo {
        opcode: u8,
        instr: u64,
        stream: String,
        detail: &'static str,
    },
    /// A record of the collectives band the runtime's translator refuses.
    #[error("instruction {instr} (opcode {opcode:#04x}) of {stream}: {detail}")]
    Collective {
        opcode: u8,
        instr: u64,
        stream: String,
        detail: String,
    },
    #[error("{subgraph}: DMA access pattern of block {queue}/{id}: {detail}")]
    BadPattern {
        subgraph: String,
        queue: String,
        id: u64,
        detail: String,
    },
    /// The reference's message, after where it happened.
    #[error("{subgraph}, queue {queue}: Descriptor limit reached. Descriptors in vring {count}, Max allowed {max}")]
    RingFull {
        subgraph: String,
        queue: String,
        count: u64,
        max: u64,
    },
    #[error("Failed to resolve remote variables for subgraphs {first} to {last}: {detail}")]
    RemoteUnresolved {
        first: usize,
        last: usize,
        detail: String,
    },
}

impl KbinError {
    pub fn status(&self) -> NrtStatus {
        match self {
            KbinError::RingFull { .. } => NrtStatus::QueueFull,
            _ => NrtStatus::Invalid,
        }
    }
}
