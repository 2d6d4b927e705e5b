//! neffld: an open, hardware-free implementation of the Neuron runtime's
//! model loader-linker (`nrt_load`).
//!
//! The pipeline, one module per stage (a later stage imports an earlier one,
//! never the reverse):
//!
//! ```text
//! bytes ─S1─▶ container ─S2─▶ manifest ─S3─▶ kbin ─S4─▶ stage + device ─S5─▶ relocate + registry
//! ```
//!
//! What the runtime itself writes and allocates around a NEFF depends on
//! its release line: [`line`], which relocation, staging and the memory
//! report read.

pub mod api;
pub mod arch;
pub mod cache;
pub mod capture;
pub mod config;
pub mod container;
pub mod device;
pub mod fallible;
pub mod host_pages;
pub mod ids;
pub mod instance;
pub mod kbin;
pub mod line;
pub mod manifest;
pub mod memory;
pub mod parse;
pub mod plan;
pub mod registry;
pub mod relocate;
pub mod report;
pub mod shared;
pub mod stage;
pub mod status;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
pub mod text;
pub mod tree;
pub mod verify;

pub use arch::Arch;
pub use status::NrtStatus;
pub use verify::{verify, VerifyReport};
