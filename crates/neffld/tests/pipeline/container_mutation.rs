//! Random damage to real and writer-built containers: every outcome is a
//! parse or a clean error, never a panic, and errors carry a load status.

use neffld::container::writer::{NeffWriter, Producer};
use neffld::container::{self, Archive, OpenOptions};
use neffld::NrtStatus;
use proptest::prelude::*;

/// A real fixture (vendored under `testdata/fixtures`).
fn fixture() -> Vec<u8> {
    neffld_testkit::fixture("kfusion__fused_attention__fused.neff")
}

fn legacy() -> Vec<u8> {
    let members: Vec<(&str, &[u8])> = vec![
        ("neff.json", b"{}"),
        ("sg00/def.json", b"{\"var\":{}}"),
        ("sg00/PE.bin", &[0xB1; 128]),
    ];
    NeffWriter::new(Producer::V2_0_99229).write(&members)
}

const OPTS: OpenOptions = OpenOptions {
    verify_hash: false,
    compare_hash: false,
    inflate_limit: Some(64 << 20),
    max_members: None,
};

fn check(bytes: &[u8]) {
    if let Err(e) = container::open(bytes, &OPTS) {
        assert!(
            matches!(
                e.status(),
                NrtStatus::Invalid | NrtStatus::UnsupportedNeffVersion | NrtStatus::Resource
            ),
            "{e}"
        );
        assert!(!e.to_string().is_empty());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn flipped_bytes_never_panic(seed in any::<u64>(), flips in 1usize..8, which in 0usize..2) {
        let mut b = if which == 0 { fixture() } else { legacy() };
        let mut x = seed | 1;
        for _ in 0..flips {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            // Bias toward the header and the start of the payload, where structure lives.
            let pos = if x % 3 == 0 { (x >> 8) as usize % 1100 } else { (x >> 8) as usize % b.len() };
            b[pos] ^= (x >> 40) as u8 | 1;
        }
        check(&b);
    }

    #[test]
    fn truncations_never_panic(cut in 0usize..70_000) {
        let b = fixture();
        check(&b[..cut.min(b.len())]);
    }

    #[test]
    fn arbitrary_tar_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..4096)) {
        let _ = Archive::from_tar(data);
    }
}
