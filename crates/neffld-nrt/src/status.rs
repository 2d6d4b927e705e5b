//! The status domain: from neffld's statuses and errors to the C
//! `NRT_STATUS`, and `nrt_get_status_as_str` (`nrt_status.h`).

use std::ffi::{c_char, CStr};

use neffld::api::{LoadError, Runtime};
use neffld::error::PipelineError;
use neffld::tensor_ops::TensorOpError;
use neffld::NrtStatus;
use tracing::error;

use crate::abi::nrt_status::{NrtStatusArg, NRT_STATUS};

/// The C status of a neffld status (the same numeric value).
pub(crate) fn from_core(status: NrtStatus) -> NRT_STATUS {
    use NRT_STATUS::*;
    match status {
        NrtStatus::Success => NRT_SUCCESS,
        NrtStatus::Failure => NRT_FAILURE,
        NrtStatus::Invalid => NRT_INVALID,
        NrtStatus::InvalidHandle => NRT_INVALID_HANDLE,
        NrtStatus::Resource => NRT_RESOURCE,
        NrtStatus::Timeout => NRT_TIMEOUT,
        NrtStatus::HwError => NRT_HW_ERROR,
        NrtStatus::QueueFull => NRT_QUEUE_FULL,
        NrtStatus::LoadNotEnoughNc => NRT_LOAD_NOT_ENOUGH_NC,
        NrtStatus::UnsupportedNeffVersion => NRT_UNSUPPORTED_NEFF_VERSION,
        NrtStatus::FailHostMemAlloc => NRT_FAIL_HOST_MEM_ALLOC,
        NrtStatus::Uninitialized => NRT_UNINITIALIZED,
        NrtStatus::Closed => NRT_CLOSED,
        NrtStatus::QueueEmpty => NRT_QUEUE_EMPTY,
        NrtStatus::ExecUnitUnrecoverable => NRT_EXEC_UNIT_UNRECOVERABLE,
        NrtStatus::ExecBadInput => NRT_EXEC_BAD_INPUT,
        NrtStatus::ExecCompletedWithNumErr => NRT_EXEC_COMPLETED_WITH_NUM_ERR,
        NrtStatus::ExecCompletedWithErr => NRT_EXEC_COMPLETED_WITH_ERR,
        NrtStatus::ExecNcBusy => NRT_EXEC_NC_BUSY,
        NrtStatus::ExecOob => NRT_EXEC_OOB,
        NrtStatus::CollPending => NRT_COLL_PENDING,
        NrtStatus::ExecHwErrCollectives => NRT_EXEC_HW_ERR_COLLECTIVES,
        NrtStatus::ExecHwErrHbmUe => NRT_EXEC_HW_ERR_HBM_UE,
        NrtStatus::ExecHwErrNcUe => NRT_EXEC_HW_ERR_NC_UE,
        NrtStatus::ExecHwErrDmaAbort => NRT_EXEC_HW_ERR_DMA_ABORT,
        NrtStatus::ExecSwNqOverflow => NRT_EXEC_SW_NQ_OVERFLOW,
        NrtStatus::ExecHwErrRepairableHbmUe => NRT_EXEC_HW_ERR_REPAIRABLE_HBM_UE,
        NrtStatus::NetworkProxyFailure => NRT_NETWORK_PROXY_FAILURE,
        // A status the library gains before this header has it.
        _ => NRT_FAILURE,
    }
}

/// Logs a failed runtime call and returns its status.
pub(crate) fn load_error(api: &str, e: &LoadError) -> NRT_STATUS {
    let status = from_core(e.status());
    error!("{api}: {e}");
    status
}

/// `nrt_load`'s logical core: -1 is any free one (`None`, the library's
/// form); another negative one is refused ([`bad_vnc`]).
pub(crate) fn vnc_arg(api: &str, vnc: i32, rt: &Runtime) -> Result<Option<u32>, NRT_STATUS> {
    match vnc {
        -1 => Ok(None),
        v => u32::try_from(v).map(Some).map_err(|_| bad_vnc(api, v, rt)),
    }
}

/// A negative logical core, which the library's `u32` cannot carry: logged
/// and refused as the runtime refuses a core past the visible ones.
pub(crate) fn bad_vnc(api: &str, vnc: i32, rt: &Runtime) -> NRT_STATUS {
    error!(
        "{api}: Invalid vnc {vnc}, visible vncs: {}",
        rt.visible_vnc_count()
    );
    NRT_STATUS::NRT_INVALID
}

/// Logs a failed device operation and returns its status.
pub(crate) fn device_error(api: &str, e: &PipelineError) -> NRT_STATUS {
    let status = from_core(e.status());
    error!("{api}: {e}");
    status
}

/// Logs a refused or failed tensor operation and returns its status.
pub(crate) fn tensor_op_error(api: &str, e: &TensorOpError) -> NRT_STATUS {
    let status = from_core(e.status());
    error!("{api}: {e}");
    status
}

/// The identifier of a status code as a static NUL-terminated string
/// (`"NRT_INVALID"` for 2), or `"UNKNOWN"` for a value no code has.
///
/// Ownership: the string is static; the caller must not free or modify it.
/// Usable in any runtime state, including before `nrt_init`.
#[no_mangle]
pub extern "C" fn nrt_get_status_as_str(status: NrtStatusArg) -> *const c_char {
    status_cstr(status).as_ptr()
}

fn status_cstr(code: NrtStatusArg) -> &'static CStr {
    NrtStatus::from_code(code).map_or(c"UNKNOWN", NrtStatus::as_cstr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_keeps_its_value_and_name() {
        for s in NrtStatus::ALL {
            assert_eq!(from_core(s) as u32, s.code());
            assert_eq!(status_cstr(s.code()).to_str().unwrap(), s.as_str());
        }
        assert_eq!(status_cstr(8), c"UNKNOWN");
        assert_eq!(status_cstr(12), c"UNKNOWN");
        assert_eq!(status_cstr(u32::MAX), c"UNKNOWN");
    }
}
