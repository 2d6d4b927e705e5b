//! `neffld plan`'s inputs: arbitrary bytes as a deployment file (TOML) and,
//! line by line, as the command line's short forms. The body is
//! `neffld_testkit::fuzz_deployment`, which the regression tests replay.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = neffld_testkit::fuzz_deployment(data);
});
