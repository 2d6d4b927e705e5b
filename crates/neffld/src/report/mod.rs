//! What a load, a device or a NEFF looks like to a person or a tool: the
//! library decides these views once, and the CLI, the C library and Python
//! only render them.

pub mod align;
pub mod categories;
pub mod compare;
pub mod examine;
pub mod io;
pub mod memory;
pub mod recorder;
pub mod staged;
pub mod weights;

pub use crate::device::{DeviceMem, MemCategory, MemLocation, MemUsage, Owner};
/// One collective of a NEFF, as the KBIN build checked it: what
/// `inspect`, `load` and the planner list.
pub use crate::kbin::collective::CollectiveInfo as Collective;
pub use crate::manifest::engine::EngineType;
pub use categories::{MonitorCategory, MonitorUsage};
pub use examine::{Examination, ExamineOptions};
pub use io::IoTensors;
pub use memory::{Column, CoreMemory, HbmMemory, MemoryReport, MemoryStats, Usage};
pub use recorder::{watch_refusals, Placed, Recorder, RefusalSeen, Refused};
pub use staged::StagedView;
