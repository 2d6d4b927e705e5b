//! The NTFF capture reader over arbitrary bytes: every input either reads
//! (and then survives a version-6 write and read back unchanged) or fails
//! with a message and `NRT_INVALID`. The body is
//! `neffld_testkit::fuzz_capture`, shared with the replay of kept inputs in
//! `crates/neffld/tests/pipeline/fuzz_regressions.rs`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    neffld_testkit::fuzz_capture(data);
});
