//! The C boundary: logging set up, panics caught, statuses produced.

use std::panic::{catch_unwind, AssertUnwindSafe};

use tracing::error;

use crate::abi::nrt_status::NRT_STATUS;

/// Result of the body of an exported function: `Err` carries the status to
/// return (the body has already logged why).
pub(crate) type NrtResult = Result<(), NRT_STATUS>;

/// Runs the body of an exported function that returns a status.
pub(crate) fn guarded(api: &'static str, body: impl FnOnce() -> NrtResult) -> NRT_STATUS {
    crate::log::ensure();
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => NRT_STATUS::NRT_SUCCESS,
        Ok(Err(status)) => status,
        Err(_) => {
            error!("{api}: internal error (a panic was stopped at the C boundary)");
            NRT_STATUS::NRT_FAILURE
        }
    }
}

/// Runs the body of an exported function that returns a value; a panic
/// yields `fallback` (NULL, 0 or nothing).
pub(crate) fn guarded_value<T>(api: &'static str, fallback: T, body: impl FnOnce() -> T) -> T {
    crate::log::ensure();
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(value) => value,
        Err(_) => {
            error!("{api}: internal error (a panic was stopped at the C boundary)");
            fallback
        }
    }
}

/// Refuses a NULL argument with `NRT_INVALID`.
pub(crate) fn non_null<T>(api: &str, what: &str, ptr: *const T) -> NrtResult {
    if ptr.is_null() {
        error!("{api}: {what} is NULL");
        return Err(NRT_STATUS::NRT_INVALID);
    }
    Ok(())
}
