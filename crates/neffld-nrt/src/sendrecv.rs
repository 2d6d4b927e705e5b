//! The asynchronous send/receive domain (`nrt_async_sendrecv.h`): tensor
//! transfers between cores over the network. The simulated device has no
//! network, so every call logs one line and returns `NRT_FAILURE`.

#![allow(unused_variables)]

use std::ffi::{c_char, c_int};

use crate::abi::nrt_status::NRT_STATUS;
use crate::tensor::nrt_tensor_t;
use crate::unsupported;

/// A send or receive communicator (never created here).
pub struct nrt_async_sendrecv_comm {
    _private: [u8; 0],
}

/// The name C callers use for [`nrt_async_sendrecv_comm`].
pub type nrt_async_sendrecv_comm_t = nrt_async_sendrecv_comm;

/// A pending send or receive (never created here).
pub struct nrt_async_sendrecv_request {
    _private: [u8; 0],
}

/// The name C callers use for [`nrt_async_sendrecv_request`].
pub type nrt_async_sendrecv_request_t = nrt_async_sendrecv_request;

/// Refused (`NRT_FAILURE`): no network.
#[no_mangle]
pub extern "C" fn nrt_async_sendrecv_get_max_num_communicators_per_lnc(
    num: *mut c_int,
) -> NRT_STATUS {
    unsupported::call("nrt_async_sendrecv_get_max_num_communicators_per_lnc")
}

/// Refused (`NRT_FAILURE`): no network.
#[no_mangle]
pub extern "C" fn nrt_async_sendrecv_get_max_num_pending_request(num: *mut c_int) -> NRT_STATUS {
    unsupported::call("nrt_async_sendrecv_get_max_num_pending_request")
}

/// Refused (`NRT_FAILURE`): no network.
#[no_mangle]
pub extern "C" fn nrt_async_sendrecv_init(lnc: c_int) -> NRT_STATUS {
    unsupported::call("nrt_async_sendrecv_init")
}

/// Refused (`NRT_FAILURE`): no network.
#[no_mangle]
pub extern "C" fn nrt_async_sendrecv_close(lnc: c_int) -> NRT_STATUS {
    unsupported::call("nrt_async_sendrecv_close")
}

/// Refused (`NRT_FAILURE`): no network.
#[no_mangle]
pub extern "C" fn nrt_async_sendrecv_connect(
    peer_ip: *const c_char,
    peer_lnc: c_int,
    lnc: c_int,
    send_comm: *mut *mut nrt_async_sendrecv_comm_t,
) -> NRT_STATUS {
    unsupported::call("nrt_async_sendrecv_connect")
}

/// Refused (`NRT_FAILURE`): no network.
#[no_mangle]
pub extern "C" fn nrt_async_sendrecv_accept(
    peer_ip: *const c_char,
    peer_lnc: c_int,
    lnc: c_int,
    recv_comm: *mut *mut nrt_async_sendrecv_comm_t,
) -> NRT_STATUS {
    unsupported::call("nrt_async_sendrecv_accept")
}

/// Refused (`NRT_FAILURE`): no communicator exists.
#[no_mangle]
pub extern "C" fn nrt_async_sendrecv_test_comm(
    comm: *mut nrt_async_sendrecv_comm_t,
    done: *mut bool,
) -> NRT_STATUS {
    unsupported::call("nrt_async_sendrecv_test_comm")
}

/// Refused (`NRT_FAILURE`): no network.
#[no_mangle]
pub extern "C" fn nrt_async_sendrecv_send_tensor(
    tensor: *mut nrt_tensor_t,
    offset: usize,
    length: usize,
    send_comm: *mut nrt_async_sendrecv_comm_t,
    request: *mut *mut nrt_async_sendrecv_request_t,
) -> NRT_STATUS {
    unsupported::call("nrt_async_sendrecv_send_tensor")
}

/// Refused (`NRT_FAILURE`): no network.
#[no_mangle]
pub extern "C" fn nrt_async_sendrecv_recv_tensor(
    tensor: *mut nrt_tensor_t,
    offset: usize,
    length: usize,
    recv_comm: *mut nrt_async_sendrecv_comm_t,
    request: *mut *mut nrt_async_sendrecv_request_t,
) -> NRT_STATUS {
    unsupported::call("nrt_async_sendrecv_recv_tensor")
}

/// Refused (`NRT_FAILURE`): no request exists.
#[no_mangle]
pub extern "C" fn nrt_async_sendrecv_test_request(
    request: *mut nrt_async_sendrecv_request_t,
    done: *mut bool,
    size: *mut usize,
) -> NRT_STATUS {
    unsupported::call("nrt_async_sendrecv_test_request")
}

/// Refused (`NRT_FAILURE`): nothing is ever received.
#[no_mangle]
pub extern "C" fn nrt_async_sendrecv_flush(lnc: c_int) -> NRT_STATUS {
    unsupported::call("nrt_async_sendrecv_flush")
}
