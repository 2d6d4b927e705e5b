//! `pack` and `extract`'s file-system policy over trees the input
//! describes (files, directories, symbolic links, FIFOs) and over hostile
//! member names: special entries refused, names and bytes kept exactly,
//! nothing written outside the destination. The body is
//! `neffld_testkit::fuzz_tree`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    neffld_testkit::fuzz_tree(data);
});
