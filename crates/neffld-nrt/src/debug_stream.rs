//! The debug-stream domain (`ndebug_stream.h`): debug events a core emits
//! while it executes. Nothing executes on the simulated device, so no stream
//! exists: connecting and reading log one line and return `NRT_FAILURE`,
//! closing logs one line.

#![allow(unused_variables)]

use std::ffi::{c_int, c_void};

use crate::abi::ndebug_stream::ndebug_stream_event_header_t;
use crate::abi::nrt_status::NRT_STATUS;
use crate::unsupported;

/// Refused (`NRT_FAILURE`): no core emits debug events.
#[no_mangle]
pub extern "C" fn nrt_debug_client_connect(
    logical_nc_idx: c_int,
    stream_fd: *mut c_int,
) -> NRT_STATUS {
    unsupported::call("nrt_debug_client_connect")
}

/// Logs that no connection exists (none can be made).
#[no_mangle]
pub extern "C" fn nrt_debug_client_connect_close(stream_fd: c_int) {
    unsupported::call("nrt_debug_client_connect_close");
}

/// Refused (`NRT_FAILURE`): no connection exists.
#[no_mangle]
pub extern "C" fn nrt_debug_client_read_one_event(
    stream_fd: c_int,
    header: *mut ndebug_stream_event_header_t,
    payload: *mut *mut c_void,
) -> NRT_STATUS {
    unsupported::call("nrt_debug_client_read_one_event")
}
