//! Every error a load can end with, one enum per layer, nameable so that a
//! caller can match on the layer's cases; [`LoadError`] holds them all, and
//! each gives its NRT status.

pub use crate::api::LoadError;
pub use crate::config::ConfigError;
pub use crate::container::{ContainerError, FileKind, HashAlgorithm};
pub use crate::device::{CopyOp, DeviceError, FaultOp, MemHandle, StartTaken};
pub use crate::fallible::HostOom;
pub use crate::kbin::KbinError;
pub use crate::manifest::ManifestError;
pub use crate::parse::ParseError;
pub use crate::registry::RegistryError;
pub use crate::relocate::ipmap::IpMapError;
pub use crate::relocate::RelocError;
pub use crate::stage::scratchpad::ReserveError;
pub use crate::stage::validate::Finding;
pub use crate::stage::{ScratchpadNeed, StageError};
