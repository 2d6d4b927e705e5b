//! S5: relocation — rewriting compiler-relative references into device
//! addresses. Pure functions of (what the NEFF says, where the plan put
//! things) → bytes; nothing here touches a device, so everything is tested
//! without staging.

pub mod collective;
pub mod dma;
pub mod instr;
pub mod ipmap;

use thiserror::Error;

use crate::fallible::HostOom;
use crate::NrtStatus;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum RelocError {
    #[error("instruction {index} (opcode {opcode:#04x}) of {engine}: {detail}")]
    Instruction {
        engine: String,
        index: u64,
        opcode: u8,
        detail: String,
    },
    #[error("Variable {0} is not staged in HBM")]
    NotStaged(String),
    #[error("template pointer cannot encode var_id {var} offset {offset} (19 and 36 bits)")]
    TemplateRange { var: u32, offset: u64 },
    #[error("device address arithmetic overflows 64 bits")]
    AddressOverflow,
    #[error(transparent)]
    HostMemory(#[from] HostOom),
    #[error("a DMA ring of {capacity} descriptors overflows: its blocks expand into more than the count the KBIN build sealed")]
    RingOverflow { capacity: usize },
}

impl RelocError {
    pub fn status(&self) -> NrtStatus {
        match self {
            RelocError::HostMemory(oom) => oom.status(),
            // The sealed count and the expansion disagree: a neffld defect.
            RelocError::RingOverflow { .. } => NrtStatus::Failure,
            _ => NrtStatus::Invalid,
        }
    }
}
