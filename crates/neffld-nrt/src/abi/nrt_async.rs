//! C declarations of `nrt/nrt_async.h`: execution units, sequence ids and
//! the error record of the asynchronous API.

/// The execution units a request can be queued on.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum nrta_xu_t {
    NRTA_XU_TENSOR_READ = 0,
    NRTA_XU_TENSOR_WRITE = 1,
    /// Tensor operations other than reads and writes.
    NRTA_XU_TENSOR_OP = 2,
    NRTA_XU_COMPUTE = 3,
    NRTA_XU_COLLECTIVES = 4,
    /// How many kinds there are (not a unit).
    NRTA_XU_TYPE_NUM = 5,
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

/// One failed request: its id and its status (an `NRT_STATUS` value, kept
/// 64 bits wide so every compiler lays it out alike).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct nrta_error_t {
    pub seq_id: nrta_seq_t,
    pub error_code: u64,
}
