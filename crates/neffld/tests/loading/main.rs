//! Loading onto a device: staging, relocation, the scratchpad, the simulated device and its faults, and a runtime's lifecycle.

mod close_race;
mod collectives;
#[path = "../common/mod.rs"]
mod common;
mod device;
mod faults;
mod instance;
mod lifecycle;
mod load;
mod load_collectives;
mod relocation;
mod retention;
mod scratchpad;
mod staging;
mod world_plan;
