//! The tar walker over arbitrary decoded bytes (skips inflate, so it runs fast).
#![no_main]

use libfuzzer_sys::fuzz_target;
use neffld::container::Archive;

fuzz_target!(|data: &[u8]| {
    if let Ok(a) = Archive::from_tar(data.to_vec()) {
        for (name, body) in a.iter() {
            assert_eq!(a.get(name).map(|b| b.len()), Some(body.len()));
        }
    }
});
