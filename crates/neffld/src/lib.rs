//! neffld: an open, hardware-free implementation of the Neuron runtime's
//! model loader-linker (`nrt_load`).
//!
//! The pipeline, one module per stage (a later stage imports an earlier one,
//! never the reverse), is this crate's own:
//!
//! ```text
//! bytes ─S1─▶ container ─S2─▶ manifest ─S3─▶ kbin ─S4─▶ stage + device ─S5─▶ relocate + registry
//! ```
//!
//! What users and the front ends (the CLI, the C library, Python) see is a
//! deliberate surface around it: [`api`] (a runtime, loading and its
//! options, [`config`]), [`report`] (what the gates found, the staged view
//! of a load, the memory report), [`neff`] (reading, writing and taking a
//! NEFF apart), [`capture`] (profiler captures), [`plan`] and [`instance`]
//! (deployments), [`error`] (one error enum per layer), typed [`ids`].
//! Nothing public hands out a pipeline type: `unnameable_types` below
//! turns any such leak into a warning, which CI denies.
// A public function that returns a type of a private module leaks the
// pipeline: the lint names it.
#![warn(unnameable_types)]

/// Declares the pipeline's modules: visible to this crate only, and to the
/// project's own tests, benches and fuzzers through the `testkit` feature
/// (which the `neffld-testkit` crate turns on for them). What the front
/// ends and users need is the deliberate surface below. An item of these
/// modules that only the tests use is behind `cfg(test)` or the feature,
/// so the shipped build has no dead code to hide.
macro_rules! internal {
    ($($name:ident),* $(,)?) => {$(
        #[cfg(feature = "testkit")]
        pub mod $name;
        #[cfg(not(feature = "testkit"))]
        pub(crate) mod $name;
    )*};
}

/// Functions of public types that hand out the pipeline's internals (a
/// runtime on a hand-made device, a loaded model's staged records): for
/// this crate, and for its own tests through the `testkit` feature.
macro_rules! testkit_pub {
    ($(#[$m:meta])* fn $($rest:tt)*) => {
        #[cfg(feature = "testkit")]
        $(#[$m])* pub fn $($rest)*
        #[cfg(not(feature = "testkit"))]
        $(#[$m])* pub(crate) fn $($rest)*
    };
}

internal!(
    cache, container, device, fallible, host_pages, kbin, line, loaded, manifest, memory, parse,
    registry, relocate, shared, stage, verify,
);

pub mod api;
pub mod arch;
pub mod capture;
pub mod config;
pub mod error;
pub mod ids;
pub mod instance;
pub mod neff;
pub mod plan;
pub mod report;
pub mod settings;
pub mod status;
pub mod text;
pub mod tree;

/// How neffld names itself where a runtime's version stands (a dump's
/// `runtime`, `nrt_get_version`'s detail): "neffld" and the version.
pub const RUNTIME_NAME: &str = concat!("neffld ", env!("CARGO_PKG_VERSION"));

pub use arch::Arch;
pub use line::{LineProvenance, RuntimeLine};
pub use status::NrtStatus;
pub use verify::{verify, VerifyReport};
