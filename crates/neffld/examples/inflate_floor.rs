//! The floor of a one-shot load: read the file, then one libdeflate call that
//! inflates its payload's gzip member into one buffer. Nothing a loader does
//! with one member can be faster; `scripts/perf.sh` times whole `neffld`
//! processes against whole processes of this.
//!
//!     inflate_floor FILE [OUT_BYTES]
//!
//! OUT_BYTES is the buffer's capacity (default: 128 × the payload, at most
//! the payload + 8 GiB). Reserving more than is written costs nothing but
//! address space: only the pages the decoder writes are ever touched.

use neffld::container::fast_inflate::{Decompressor, Outcome};
use neffld::container::HEADER_LEN;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: inflate_floor FILE [OUT_BYTES]");
        std::process::exit(2);
    };
    let bytes = std::fs::read(path).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(2)
    });
    // data_size: the header's u64 at 0x10.
    let data_size = bytes
        .get(0x10..0x18)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")) as usize)
        .unwrap_or(0);
    let Some(window) = bytes.get(HEADER_LEN..HEADER_LEN.saturating_add(data_size)) else {
        eprintln!("{path}: not a NEFF");
        std::process::exit(1)
    };
    let cap = args
        .get(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| (window.len().saturating_mul(128)).min(window.len() + (8 << 30)));
    let mut out = Vec::with_capacity(cap);
    let mut d = Decompressor::new().expect("libdeflate state");
    match d.gzip_member(window, &mut out) {
        Outcome::Done { .. } => println!("{} inflated bytes", out.len()),
        Outcome::NoRoom => {
            eprintln!("{path}: more than {cap} inflated bytes: give OUT_BYTES");
            std::process::exit(1)
        }
        Outcome::Bad => {
            eprintln!("{path}: not one valid gzip member");
            std::process::exit(1)
        }
    }
}
