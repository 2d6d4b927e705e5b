//! S1 over arbitrary bytes: header gates, integrity (gate, report or off),
//! inflate, tar walk.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neffld::container::{self, OpenOptions};

fuzz_target!(|data: &[u8]| {
    // A small inflate ceiling keeps each execution bounded in memory.
    let opts = OpenOptions {
        verify_hash: data.first().is_some_and(|b| b & 1 == 1),
        compare_hash: data.first().is_some_and(|b| b & 2 == 2),
        inflate_limit: Some(16 << 20),
        max_members: None,
    };
    match container::open(data, &opts) {
        Ok(neff) => {
            // A digest compared for a report never fails the open, and only
            // one of the two verdicts is ever kept.
            assert!(neff.verified().is_none() || neff.compared().is_none());
            assert_eq!(neff.compared().is_some(), opts.compare_hash && !opts.verify_hash);
        }
        Err(e) => {
            let _ = e.status();
            let _ = e.to_string();
        }
    }
});
