//! libnrt's C API as clients call it: the exported functions, the shipped headers against the SDK's ABI, C and C++ clients. The runtime's state is process-wide, so a test that initialises it runs alone in a child process (`neffld_testkit::Alone`).

mod abi;
mod abi_probe;
mod c_smoke;
mod close_race;
mod collectives;
mod eventfds;
mod exports;
mod fork;
mod instance;
mod line_calls;
mod memory_log;
mod overlap;
mod profile_stop;
mod reinit;
mod tag_names;
mod tensor_ops;
mod uninit;
mod virtual_placement;
mod visible_cores;
