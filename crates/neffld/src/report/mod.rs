//! What a load, a device or a NEFF looks like to a person or a tool: the
//! library decides these views once, and the CLI, the C library and Python
//! only render them.

pub mod align;
pub mod compare;
pub mod memory;
pub mod staged;

pub use memory::{Column, CoreMemory, HbmMemory, MemoryReport, MemoryStats, Usage};
pub use staged::StagedView;
