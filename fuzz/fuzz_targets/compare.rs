//! A capture held against a real load: arbitrary bytes either fail to read
//! as a capture or compare consistently (agreement only at the same or the
//! raced address, a race only of a racing engine, counts within the
//! images). The body is `neffld_testkit::fuzz_compare`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    neffld_testkit::fuzz_compare(data);
});
