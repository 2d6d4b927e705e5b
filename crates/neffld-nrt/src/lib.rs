//! neffld-nrt: the libnrt C API over neffld, built as `libnrt.so.1` /
//! `libnrt.a` with the headers in `include/nrt/` (see
//! `scripts/install-libnrt`).
//!
//! Every function the public headers declare is exported. Runtime lifetime,
//! model load/unload, model information, core counts, tensors, tensor sets,
//! the system trace and model profiles are implemented on the simulated
//! device, and so are the async API 3.0's tensor requests, queues, sequence
//! numbers and eventfd completions ([`nrta`]); execution (sync or async)
//! checks its tensor binding and then refuses; calls that need hardware this
//! library does not simulate (collectives, debug streams, device mappings)
//! log one line and return `NRT_FAILURE` (the public status set has no
//! "unsupported" code).
//!
//! Layout: [`abi`] is the leaf of C declarations (data types, enums,
//! constants; one file per header). Each domain module holds its `extern`
//! functions and its opaque handle type, tied to the Rust object behind it
//! by [`handles::Handle`]. Domain modules import `abi`, never the reverse.
//!
//! Boundary rules, applied in every exported function:
//! - a panic is caught and becomes `NRT_FAILURE` (or the neutral return value
//!   of a function without a status); it never unwinds into C;
//! - pointers the library hands out are kept in a registry of live handles,
//!   so NULL, a stale or a foreign pointer is refused with a status instead
//!   of being freed twice;
//! - the runtime state is START → INIT → CLOSED → INIT …; see [`state`].

#![allow(non_camel_case_types)]

pub mod abi;
mod boundary;
mod handles;
mod log;
mod memory_log;
mod state;
mod status;
mod unsupported;

mod debug_stream;
mod device;
mod execute;
mod experimental;
mod model;
mod model_info;
mod nec;
mod nrta;
mod profile;
mod runtime;
mod sendrecv;
mod tensor;
mod tensor_ops;
mod tensor_set;
mod trace;
mod version;

pub use abi::ndebug_stream::*;
pub use abi::nec::*;
pub use abi::nrt::*;
pub use abi::nrt_async::*;
pub use abi::nrt_experimental::*;
pub use abi::nrt_status::*;
pub use abi::nrt_version::*;

pub use debug_stream::*;
pub use device::*;
pub use execute::*;
pub use experimental::*;
pub use model::*;
pub use model_info::*;
pub use nec::*;
pub use nrta::*;
pub use profile::*;
pub use runtime::*;
pub use sendrecv::*;
pub use status::nrt_get_status_as_str;
pub use tensor::*;
pub use tensor_ops::*;
pub use tensor_set::*;
pub use trace::*;
pub use version::*;
