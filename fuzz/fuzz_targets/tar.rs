//! The tar walker over arbitrary decoded bytes (skips inflate, so it runs
//! fast): every listed member can be looked up by its exact name, and by
//! its text when that is its name (UTF-8). The body is
//! `neffld_testkit::fuzz_tar`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    neffld_testkit::fuzz_tar(data);
});
