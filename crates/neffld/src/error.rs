//! Every error a load can end with, and its NRT status. [`LoadError`]'s
//! variants are what a caller can act on (the runtime closed, no free
//! core, a core that is not there, a container or a setting refused, the
//! staged model's findings); what the pipeline's inner layers refuse is one
//! opaque [`PipelineError`] with a status and a message, since their cases
//! are the pipeline's own and change with it.

pub use crate::api::{LoadError, PipelineError};
pub use crate::config::ConfigError;
pub use crate::container::{ContainerError, FileKind, HashAlgorithm};
pub use crate::fallible::HostOom;
pub use crate::stage::validate::Finding;
