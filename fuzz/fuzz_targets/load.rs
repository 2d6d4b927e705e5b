//! The whole load (S0–S5) over arbitrary bytes on a `NullDevice`, then
//! unload: every input either loads, passes the staged-model validator and
//! unloads, or fails with a status and a message; either way the device and
//! the registry are empty afterwards. The body is `neffld_testkit::fuzz_load`
//! (shared with the replay of kept inputs in `crates/neffld/tests/pipeline/fuzz_regressions.rs`),
//! where the flag byte that leads each input is described.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    neffld_testkit::fuzz_load(data);
});
