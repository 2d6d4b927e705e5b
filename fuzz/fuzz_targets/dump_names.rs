//! `neffld load --dump`'s file names: arbitrary bytes as a subgraph's name
//! (the kelf json's graph name, which the runtime takes as any label), made
//! into `<subgraph>_<engine>.bin` and written by the dump's policy: a name
//! that is no plain file name is refused, nothing is written outside the
//! destination. The body is `neffld_testkit::fuzz_dump_names`, which the
//! regression tests replay.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    neffld_testkit::fuzz_dump_names(data);
});
