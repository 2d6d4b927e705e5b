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
//! (deployments), [`error`] (what a load can end with, and its status),
//! typed [`ids`].
//! Nothing public hands out a pipeline type: `unnameable_types` below
//! turns any such leak into a warning, which CI denies.
// A public function that returns a type of a private module leaks the
// pipeline: the lint names it.
#![warn(unnameable_types)]
// Every item of the surface says what it is for. The pipeline's modules,
// public only to the project's own tests (`testkit`), are not the surface.
#![deny(missing_docs)]

/// Declares the pipeline's modules: visible to this crate only, and to the
/// project's own tests, benches and fuzzers through the `testkit` feature
/// (which the `neffld-testkit` crate turns on for them). What the front
/// ends and users need is the deliberate surface below. An item of these
/// modules that only the tests use is behind `cfg(test)` or the feature,
/// so the shipped build has no dead code to hide.
macro_rules! internal {
    ($($name:ident),* $(,)?) => {$(
        #[cfg(feature = "testkit")]
        #[allow(missing_docs)]
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
pub mod comm;
pub mod config;
pub mod dtype;
pub mod error;
pub mod execute;
pub mod ids;
pub mod instance;
pub mod neff;
pub mod plan;
pub mod report;
pub mod settings;
pub mod status;
pub mod tensor_ops;
pub mod text;
pub mod tree;

/// How neffld names itself where a runtime's version stands (a dump's
/// `runtime`, `nrt_get_version`'s detail): "neffld" and the version.
pub const RUNTIME_NAME: &str = concat!("neffld ", env!("CARGO_PKG_VERSION"));

pub use arch::Arch;
pub use line::{LineProvenance, RuntimeLine};

/// The runtime lines neffld reproduces: one row of facts per line
/// ([`lines::FACTS`]: version, SDK and date, the captured line each chip
/// carries over, the documented switches, start-up memory, the C calls a
/// line adds, and the documented facts with their sources).
pub mod lines {
    pub use crate::line::facts::{
        ImplicitAsync, LineFacts, LineNote, LineProvenance, Note, Per, RuntimeLine, StartDelta,
        Switches, FACTS,
    };
}
pub use status::NrtStatus;
pub use verify::{verify, VerifyReport};
