//! C declarations of `nrt/ndebug_stream.h`: the debug-event records a
//! client reads from a core's debug stream.

use std::ffi::c_char;

/// The kinds of debug event.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ndebug_stream_event_type {
    NDEBUG_STREAM_EVENT_TYPE_INVALID = 0,
    NDEBUG_STREAM_EVENT_TYPE_DEBUG_TENSOR_READ = 1,
}

/// The SDK's typedef of [`ndebug_stream_event_type`]; C code names the type
/// either way (`ndebug_stream_event_type_t`, `enum
/// ndebug_stream_event_type`).
pub type ndebug_stream_event_type_t = ndebug_stream_event_type;

/// The fixed 64-byte header before every event's payload.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ndebug_stream_event_header {
    /// Bytes of the payload that follows.
    pub data_size: u64,
    /// An `ndebug_stream_event_type_t` value.
    pub r#type: u32,
    pub reserved: [c_char; 52],
}

/// The SDK's typedef of [`ndebug_stream_event_header`]; C code names the
/// type either way (`ndebug_stream_event_header_t`, `struct
/// ndebug_stream_event_header`).
pub type ndebug_stream_event_header_t = ndebug_stream_event_header;

/// The payload of a tensor-read event: 1024 bytes of description followed
/// by the tensor's bytes.
#[repr(C)]
pub struct ndebug_stream_payload_debug_tensor_read {
    pub prefix: [c_char; 512],
    pub logical_nc_id: u32,
    pub pipe: u32,
    pub tensor_dtype: [c_char; 16],
    pub tensor_shape: [u64; 8],
    pub tensor_data_size: u64,
    pub reserved0: [c_char; 416],
    /// `tensor_data_size` bytes (a flexible array member in C).
    pub tensor_data: [c_char; 0],
}

/// The SDK's typedef of [`ndebug_stream_payload_debug_tensor_read`]; C code
/// names the type either way (`ndebug_stream_payload_debug_tensor_read_t`,
/// `struct ndebug_stream_payload_debug_tensor_read`).
pub type ndebug_stream_payload_debug_tensor_read_t = ndebug_stream_payload_debug_tensor_read;
