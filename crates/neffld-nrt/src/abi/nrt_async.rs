//! C declarations of `nrt/nrt_async.h`, async API 3.0 (libnrt 2.31+):
//! execution units and sequence ids.

/// The kinds of execution unit a request can be queued on (async API 3.0:
/// reads and writes are tensor operations; the 2.x values are gone).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum nrta_xu_t {
    /// Tensor reads, writes and copies.
    NRTA_XU_TENSOR_OP = 0,
    NRTA_XU_COMPUTE = 1,
    NRTA_XU_COLLECTIVES = 2,
    /// How many kinds there are (not a unit).
    NRTA_XU_TYPE_NUM = 3,
}

/// An execution-unit type as a C caller may pass it (any integer). The
/// header spells this type `nrta_xu_t`.
pub type NrtaXuArg = u32;

/// A request id: the execution unit in the top 16 bits, a strictly
/// increasing sequence number in the low 48.
pub type nrta_seq_t = u64;
/// An execution unit id (the top 16 bits of a `nrta_seq_t`).
pub type nrta_xu_id_t = u16;

/// The largest sequence number (48 bits).
pub const NRTA_SEQ_NUM_MAX: u64 = 0xFFFF_FFFF_FFFF;
/// Mask of the sequence number in a `nrta_seq_t`.
pub const NRTA_SEQ_NUM_MASK: u64 = NRTA_SEQ_NUM_MAX;
