//! `NRT_STATUS` values of the public `nrt_status.h`.
//!
//! The numeric values are ABI: C clients compare against them, so they are
//! spelled out here rather than derived. Every error type of every layer maps
//! to exactly one of these through its `status()` method.

use std::ffi::CStr;
use std::fmt;

/// A status code as the public runtime reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
#[non_exhaustive]
pub enum NrtStatus {
    /// The call did what it was asked.
    Success = 0,
    /// A failure with no more specific code (a bug, a panic caught at the boundary).
    Failure = 1,
    /// Bad input: a malformed NEFF, an argument out of range, a refused setting.
    Invalid = 2,
    /// A model or tensor handle that is not live, or belongs to another runtime.
    InvalidHandle = 3,
    /// Device memory (or another device resource) ran out.
    Resource = 4,
    /// An execution did not finish in time (execution is not simulated).
    Timeout = 5,
    /// The hardware reported an error (not simulated).
    HwError = 6,
    /// An execution queue was full (not simulated).
    QueueFull = 7,
    /// No logical core was free for a load that named none.
    LoadNotEnoughNc = 9,
    /// The NEFF's format version is not one the runtime line reads.
    UnsupportedNeffVersion = 10,
    /// The host ran out of memory.
    FailHostMemAlloc = 11,
    /// A call before `nrt_init`.
    Uninitialized = 13,
    /// A call after `nrt_close`, or a load that raced it.
    Closed = 14,
    /// An execution queue was empty (not simulated).
    QueueEmpty = 15,
    /// An execution unit failed unrecoverably (not simulated).
    ExecUnitUnrecoverable = 101,
    /// An execution's inputs were bad (not simulated).
    ExecBadInput = 1002,
    /// An execution completed with numerical errors (not simulated).
    ExecCompletedWithNumErr = 1003,
    /// An execution completed with errors (not simulated).
    ExecCompletedWithErr = 1004,
    /// The core was busy with another execution (not simulated).
    ExecNcBusy = 1005,
    /// An execution accessed memory out of bounds (not simulated).
    ExecOob = 1006,
    /// A collectives operation is still pending (not simulated).
    CollPending = 1100,
    /// A collectives hardware error during execution (not simulated).
    ExecHwErrCollectives = 1200,
    /// An uncorrectable HBM error during execution (not simulated).
    ExecHwErrHbmUe = 1201,
    /// An uncorrectable core error during execution (not simulated).
    ExecHwErrNcUe = 1202,
    /// A DMA abort during execution (not simulated).
    ExecHwErrDmaAbort = 1203,
    /// A software notification queue overflowed (not simulated).
    ExecSwNqOverflow = 1204,
    /// A repairable HBM error during execution (not simulated).
    ExecHwErrRepairableHbmUe = 1205,
    /// The network proxy failed (not simulated).
    NetworkProxyFailure = 1206,
}

impl NrtStatus {
    /// Every defined status, in value order.
    pub const ALL: [NrtStatus; 28] = [
        NrtStatus::Success,
        NrtStatus::Failure,
        NrtStatus::Invalid,
        NrtStatus::InvalidHandle,
        NrtStatus::Resource,
        NrtStatus::Timeout,
        NrtStatus::HwError,
        NrtStatus::QueueFull,
        NrtStatus::LoadNotEnoughNc,
        NrtStatus::UnsupportedNeffVersion,
        NrtStatus::FailHostMemAlloc,
        NrtStatus::Uninitialized,
        NrtStatus::Closed,
        NrtStatus::QueueEmpty,
        NrtStatus::ExecUnitUnrecoverable,
        NrtStatus::ExecBadInput,
        NrtStatus::ExecCompletedWithNumErr,
        NrtStatus::ExecCompletedWithErr,
        NrtStatus::ExecNcBusy,
        NrtStatus::ExecOob,
        NrtStatus::CollPending,
        NrtStatus::ExecHwErrCollectives,
        NrtStatus::ExecHwErrHbmUe,
        NrtStatus::ExecHwErrNcUe,
        NrtStatus::ExecHwErrDmaAbort,
        NrtStatus::ExecSwNqOverflow,
        NrtStatus::ExecHwErrRepairableHbmUe,
        NrtStatus::NetworkProxyFailure,
    ];

    /// The numeric value a C caller sees.
    pub fn code(self) -> u32 {
        self as u32
    }

    /// The status with this numeric value, if one is defined (8 and 12 are holes).
    pub fn from_code(code: u32) -> Option<NrtStatus> {
        NrtStatus::ALL.iter().copied().find(|s| s.code() == code)
    }

    /// The bare identifier as a static C string: the one table of names,
    /// which `nrt_get_status_as_str` hands out as it is.
    pub fn as_cstr(self) -> &'static CStr {
        match self {
            NrtStatus::Success => c"NRT_SUCCESS",
            NrtStatus::Failure => c"NRT_FAILURE",
            NrtStatus::Invalid => c"NRT_INVALID",
            NrtStatus::InvalidHandle => c"NRT_INVALID_HANDLE",
            NrtStatus::Resource => c"NRT_RESOURCE",
            NrtStatus::Timeout => c"NRT_TIMEOUT",
            NrtStatus::HwError => c"NRT_HW_ERROR",
            NrtStatus::QueueFull => c"NRT_QUEUE_FULL",
            NrtStatus::LoadNotEnoughNc => c"NRT_LOAD_NOT_ENOUGH_NC",
            NrtStatus::UnsupportedNeffVersion => c"NRT_UNSUPPORTED_NEFF_VERSION",
            NrtStatus::FailHostMemAlloc => c"NRT_FAIL_HOST_MEM_ALLOC",
            NrtStatus::Uninitialized => c"NRT_UNINITIALIZED",
            NrtStatus::Closed => c"NRT_CLOSED",
            NrtStatus::QueueEmpty => c"NRT_QUEUE_EMPTY",
            NrtStatus::ExecUnitUnrecoverable => c"NRT_EXEC_UNIT_UNRECOVERABLE",
            NrtStatus::ExecBadInput => c"NRT_EXEC_BAD_INPUT",
            NrtStatus::ExecCompletedWithNumErr => c"NRT_EXEC_COMPLETED_WITH_NUM_ERR",
            NrtStatus::ExecCompletedWithErr => c"NRT_EXEC_COMPLETED_WITH_ERR",
            NrtStatus::ExecNcBusy => c"NRT_EXEC_NC_BUSY",
            NrtStatus::ExecOob => c"NRT_EXEC_OOB",
            NrtStatus::CollPending => c"NRT_COLL_PENDING",
            NrtStatus::ExecHwErrCollectives => c"NRT_EXEC_HW_ERR_COLLECTIVES",
            NrtStatus::ExecHwErrHbmUe => c"NRT_EXEC_HW_ERR_HBM_UE",
            NrtStatus::ExecHwErrNcUe => c"NRT_EXEC_HW_ERR_NC_UE",
            NrtStatus::ExecHwErrDmaAbort => c"NRT_EXEC_HW_ERR_DMA_ABORT",
            NrtStatus::ExecSwNqOverflow => c"NRT_EXEC_SW_NQ_OVERFLOW",
            NrtStatus::ExecHwErrRepairableHbmUe => c"NRT_EXEC_HW_ERR_REPAIRABLE_HBM_UE",
            NrtStatus::NetworkProxyFailure => c"NRT_NETWORK_PROXY_FAILURE",
        }
    }

    /// The bare identifier (`NRT_INVALID`), from the same table.
    pub fn as_str(self) -> &'static str {
        // Every name in the table is ASCII, so this never falls back.
        self.as_cstr().to_str().unwrap_or("NRT_?")
    }
}

impl fmt::Display for NrtStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.as_str(), self.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_holes_stay_holes() {
        for s in NrtStatus::ALL {
            assert_eq!(NrtStatus::from_code(s.code()), Some(s));
        }
        assert_eq!(NrtStatus::from_code(8), None);
        assert_eq!(NrtStatus::from_code(12), None);
        assert_eq!(NrtStatus::Invalid.code(), 2);
        assert_eq!(NrtStatus::UnsupportedNeffVersion.code(), 10);
        assert_eq!(
            NrtStatus::LoadNotEnoughNc.as_str(),
            "NRT_LOAD_NOT_ENOUGH_NC"
        );
    }
}
