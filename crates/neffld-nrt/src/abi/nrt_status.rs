//! C declarations of `nrt/nrt_status.h`: the status codes every call
//! returns. `nrt_get_status_as_str` lives in `crate::status`.

/// Outcome of a runtime call. The numbers are part of the ABI (C callers
/// compare against them), so each one is written out; 8 and 12 are unused.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NRT_STATUS {
    /// The call did what it was asked.
    NRT_SUCCESS = 0,
    /// A failure with no more precise code; also what every execution,
    /// profiling or collectives entry point of this library returns, since no
    /// code for "not supported" exists.
    NRT_FAILURE = 1,
    /// A bad argument or a NEFF that cannot be loaded.
    NRT_INVALID = 2,
    /// A model handle that is not (or no longer) live.
    NRT_INVALID_HANDLE = 3,
    /// Device memory (or another device resource) ran out.
    NRT_RESOURCE = 4,
    /// An operation did not finish in time.
    NRT_TIMEOUT = 5,
    /// The hardware reported a fault.
    NRT_HW_ERROR = 6,
    /// An execution queue had no room.
    NRT_QUEUE_FULL = 7,
    /// No logical NeuronCore was free for the model.
    NRT_LOAD_NOT_ENOUGH_NC = 9,
    /// The NEFF's format version is not one the loader reads.
    NRT_UNSUPPORTED_NEFF_VERSION = 10,
    /// Host memory ran out (kept for compatibility).
    NRT_FAIL_HOST_MEM_ALLOC = 11,
    /// Called before `nrt_init`.
    NRT_UNINITIALIZED = 13,
    /// Called after `nrt_close` (and before the next `nrt_init`).
    NRT_CLOSED = 14,
    /// A queue was read while empty.
    NRT_QUEUE_EMPTY = 15,
    /// An execution unit hit an error it cannot recover from.
    NRT_EXEC_UNIT_UNRECOVERABLE = 101,
    /// An execution was given an input that does not match the model.
    NRT_EXEC_BAD_INPUT = 1002,
    /// An execution finished, but produced NaN or other numerical errors.
    NRT_EXEC_COMPLETED_WITH_NUM_ERR = 1003,
    /// An execution finished with logical or parity errors.
    NRT_EXEC_COMPLETED_WITH_ERR = 1004,
    /// The NeuronCore is held by another model or process.
    NRT_EXEC_NC_BUSY = 1005,
    /// An indirect copy or embedding update went out of bounds.
    NRT_EXEC_OOB = 1006,
    /// A collective operation has not completed yet.
    NRT_COLL_PENDING = 1100,
    /// A collective operation stalled (a peer may have failed).
    NRT_EXEC_HW_ERR_COLLECTIVES = 1200,
    /// Device memory had an unrepairable uncorrectable error.
    NRT_EXEC_HW_ERR_HBM_UE = 1201,
    /// NeuronCore on-chip memory had a parity error.
    NRT_EXEC_HW_ERR_NC_UE = 1202,
    /// A DMA engine stopped on an unrecoverable error.
    NRT_EXEC_HW_ERR_DMA_ABORT = 1203,
    /// The software notification queue overflowed.
    NRT_EXEC_SW_NQ_OVERFLOW = 1204,
    /// Device memory had a repairable uncorrectable error.
    NRT_EXEC_HW_ERR_REPAIRABLE_HBM_UE = 1205,
    /// The network proxy used by collectives failed.
    NRT_NETWORK_PROXY_FAILURE = 1206,
}

/// A status as a C caller may pass it: any integer, not only a defined code.
/// The header spells this type `NRT_STATUS`; Rust keeps it an integer so an
/// undefined value is never read as an enum.
pub type NrtStatusArg = u32;
