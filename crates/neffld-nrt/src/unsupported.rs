//! The one way a call the simulated device cannot perform answers: one
//! error line naming the call, and `NRT_FAILURE`. The public status set has
//! no "unsupported" code, and `NRT_FAILURE` is its code for a failure with
//! no more precise meaning. Which calls these are is said in each domain
//! module and in the header comment of each function.

use tracing::error;

use crate::abi::nrt_status::NRT_STATUS;

/// Logs that `api` is not supported and returns `NRT_FAILURE`.
pub(crate) fn call(api: &'static str) -> NRT_STATUS {
    crate::log::ensure();
    error!(
        "{api}: not supported by neffld (it loads models on a simulated device; nothing executes)"
    );
    NRT_STATUS::NRT_FAILURE
}
