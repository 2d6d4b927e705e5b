//! S1 over arbitrary bytes: header gates, integrity (on), inflate, tar walk.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neffld::container::{self, OpenOptions};

fuzz_target!(|data: &[u8]| {
    // A small inflate ceiling keeps each execution bounded in memory.
    let opts = OpenOptions {
        verify_hash: data.first().is_some_and(|b| b & 1 == 1),
        inflate_limit: Some(16 << 20),
        max_members: None,
    };
    if let Err(e) = container::open(data, &opts) {
        let _ = e.status();
        let _ = e.to_string();
    }
});
