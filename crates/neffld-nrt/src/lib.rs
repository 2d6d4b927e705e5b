//! neffld-nrt: the libnrt C API over neffld, as `libneffld_nrt.so` / `.a`
//! with the headers in `include/nrt/`.
//!
//! Every function of the public `nrt.h`, `nrt_experimental.h` and
//! `nrt_status.h` is exported. Runtime lifetime, model load/unload, model
//! tensor information, core counts and tensors are implemented on the
//! simulated device; execution, profiling and collectives calls log and
//! return `NRT_FAILURE` (the public status set has no "unsupported" code).
//!
//! Boundary rules, applied in every exported function:
//! - a panic is caught and becomes `NRT_FAILURE` (or the neutral return value
//!   of a function without a status); it never unwinds into C;
//! - pointers the library hands out (models, tensors, tensor sets, tensor
//!   info arrays) are kept in a registry of live handles, so NULL, a stale or
//!   a foreign pointer is refused with a status instead of being freed twice;
//! - the runtime state is START → INIT → CLOSED → INIT …; see [`state`].

pub mod abi;
mod boundary;
mod counts;
mod handles;
mod info;
mod log;
mod model;
mod state;
mod status;
mod tensor;
mod tensor_set;
mod unsupported;

pub use abi::nrt::*;
pub use abi::nrt_experimental::*;
pub use abi::nrt_status::*;
