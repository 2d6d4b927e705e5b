//! S1 on the real fixtures: every gate passes, the archive matches what the
//! compiler wrote, and the writer reproduces the real files.

use neffld::container::writer::{NeffWriter, Producer};
use neffld::container::{self, DigestForm, Encoding, HashAlgorithm, OpenOptions};
use neffld_testkit as testkit;

fn fixtures() -> Vec<(String, Vec<u8>)> {
    testkit::real_fixtures()
}

fn verify() -> OpenOptions {
    OpenOptions {
        verify_hash: true,
        ..Default::default()
    }
}

#[test]
fn every_fixture_opens_with_a_word_swapped_md5() {
    let all = fixtures();
    for (name, bytes) in all {
        let neff = container::open(&bytes, &verify()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let v = neff.verified().expect("verified");
        assert_eq!(v.algorithm, HashAlgorithm::Md5, "{name}");
        assert_eq!(v.form, DigestForm::WordSwapped, "{name}");
        assert_eq!(neff.header().pkg_version, 2);
        assert_eq!(neff.header().version_major, 2);
        assert_eq!(neff.header().vnc_size, 2);
        assert!(neff.header().declares_lnc());
        assert_eq!(bytes.len() as u64, 1024 + neff.header().data_size, "{name}");
        assert_eq!(neff.header().data_size % 10240, 0, "{name}");
        let n = neff.archive().len();
        assert!((65..=72).contains(&n), "{name}: {n} members");
        assert!(
            neff.archive().warnings().is_empty(),
            "{name}: {:?}",
            neff.archive().warnings()
        );
        for m in [
            "neff.json",
            "kelf-0.json",
            "info.json",
            "sg00/def.json",
            "sg01/def.json",
        ] {
            assert!(neff.archive().contains(m), "{name} lacks {m}");
        }
        assert_eq!(
            neff.archive().members().last().unwrap().name,
            "neff.json",
            "{name}"
        );
        match neff.archive().encoding() {
            Some(Encoding::Gzip {
                members: 1,
                nonzero_trailing: false,
                ..
            }) => {}
            other => panic!("{name}: {other:?}"),
        }
    }
}

#[test]
fn matmul_facts_from_the_spec() {
    let all = fixtures();
    let get = |n: &str| &all.iter().find(|(f, _)| f == n).unwrap().1;
    let small = container::open(get("matmul_small.neff"), &verify()).unwrap();
    assert_eq!(
        small.header().uuid_string(),
        "00a04c53-5fd9-4f07-bffd-d5eacdefc852"
    );
    assert_eq!(small.header().name_str(), "file.neff");
    assert_eq!(small.header().feature_bits, 0x209C00);
    assert_eq!(small.header().data_size, 61440);
    assert_eq!(small.archive().decoded_len(), 356864);
    assert_eq!(small.archive().len(), 72);
    assert_eq!(
        small.archive().encoding(),
        Some(Encoding::Gzip {
            members: 1,
            trailing: 7839,
            nonzero_trailing: false
        })
    );
    assert_eq!(
        small
            .archive()
            .get("sg00/default_datapath_table.bin")
            .unwrap()
            .len(),
        16384
    );
    let large = container::open(get("matmul_large.neff"), &verify()).unwrap();
    assert_eq!(large.header().feature_bits, 0x201C00);
    assert_eq!(large.archive().decoded_len(), 9285120);
    assert_eq!(
        large.archive().encoding(),
        Some(Encoding::Gzip {
            members: 1,
            trailing: 1156,
            nonzero_trailing: false
        })
    );
}

#[test]
fn a_flipped_payload_byte_fails_verification_only_when_asked() {
    let all = fixtures();
    let (_, mut bytes) = all
        .into_iter()
        .find(|(n, _)| n == "matmul_small.neff")
        .unwrap();
    // Flip a byte in the zero padding: the archive still decodes, the hash does not match.
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    let e = container::open(&bytes, &verify()).unwrap_err();
    assert!(e.to_string().starts_with("MD5 mismatch!"), "{e}");
    assert_eq!(e.status(), neffld::NrtStatus::Invalid);
    let neff = container::open(&bytes, &OpenOptions::default()).unwrap();
    assert!(neff.verified().is_none());
    assert!(
        !neff.archive().warnings().is_empty(),
        "non-zero padding is reported"
    );
}

/// A digest compared for a report (`compare_hash`, as `neffld verify` asks
/// when the load would not check it) is kept, match or mismatch, and never
/// fails the open; when the hash is required, the gate's verdict is the one.
#[test]
fn a_digest_compared_for_a_report_is_kept_not_enforced() {
    let compare = OpenOptions {
        compare_hash: true,
        ..OpenOptions::default()
    };
    for (name, mut bytes) in fixtures() {
        let gate = container::open(&bytes, &verify()).unwrap().verified();
        let neff = container::open(&bytes, &compare).unwrap();
        assert!(neff.verified().is_none(), "{name}");
        assert_eq!(
            neff.compared().unwrap().as_ref().ok().copied(),
            gate,
            "{name}"
        );
        let both = OpenOptions {
            verify_hash: true,
            ..compare
        };
        let neff = container::open(&bytes, &both).unwrap();
        assert_eq!(neff.verified(), gate, "{name}");
        assert!(neff.compared().is_none(), "{name}: one verdict, the gate's");
        // A flipped padding byte: the archive decodes, the digest differs.
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        let neff = container::open(&bytes, &compare).unwrap();
        let e = neff.compared().unwrap().as_ref().unwrap_err();
        assert!(e.to_string().starts_with("MD5 mismatch!"), "{name}: {e}");
        assert!(container::open(&bytes, &OpenOptions::default())
            .unwrap()
            .compared()
            .is_none());
    }
}

/// The 2.21+ writer rebuilds each fixture from its own members: the
/// uncompressed tar and the gzip header are identical byte for byte. (The
/// deflate body is not: the compiler used C zlib at level 1, our encoder is
/// zlib-rs, whose level-1 matcher makes different but equally valid choices.)
#[test]
fn writer_reproduces_the_fixtures() {
    let all = fixtures();
    for (name, bytes) in all {
        let neff = container::open(&bytes, &OpenOptions::default()).unwrap();
        let members: Vec<(&str, &[u8])> = neff.archive().iter().collect();
        let mut w = NeffWriter::with_header(Producer::V2_21, neff.header().clone());
        w.gzip_mtime = u32::from_le_bytes(bytes[1028..1032].try_into().unwrap());
        let tar = w.tar(&members);
        assert_eq!(tar.len(), neff.archive().decoded_len(), "{name}");
        assert!(
            tar == neff.archive().decoded(),
            "{name}: rebuilt tar differs"
        );
        let rebuilt = w.write(&members);
        let reopened = container::open(&rebuilt, &verify()).unwrap();
        assert_eq!(reopened.verified().unwrap().form, DigestForm::WordSwapped);
        assert_eq!(
            &rebuilt[1024..1034],
            &bytes[1024..1034],
            "{name}: gzip header"
        );
    }
}

/// The hash gate comes before the inflate (gate 2e) even when the two run
/// side by side: with a byte of every fixture's deflate stream damaged, a
/// verifying open reports the digest mismatch, never the decode's error, and
/// a non-verifying open shows what the decode alone made of it.
#[test]
fn a_damaged_deflate_stream_fails_on_the_hash_first_at_every_size() {
    let mut threaded = 0;
    for (name, mut bytes) in fixtures() {
        let header = container::NeffHeader::parse(&bytes).unwrap();
        let window = container::HEADER_LEN..container::HEADER_LEN + header.data_size as usize;
        threaded += usize::from(window.len() >= 256 << 10);
        let mid = window.start + window.len() / 2;
        bytes[mid] ^= 0x5a;
        let e = container::open(&bytes, &verify()).unwrap_err();
        assert!(e.to_string().starts_with("MD5 mismatch!"), "{name}: {e}");
        match container::open(&bytes, &OpenOptions::default()) {
            Ok(neff) => assert!(neff.verified().is_none(), "{name}"),
            Err(e) => assert!(!e.to_string().starts_with("MD5"), "{name}: {e}"),
        }
    }
    assert!(threaded > 0, "a fixture takes the two-thread path");
}

/// libdeflate's two entry points (`container::fast_inflate`) decode the
/// same bytes and find the same end, on every real fixture, and both say
/// when the room is too small.
#[cfg(feature = "libdeflate")]
#[test]
fn into_a_slice_and_into_a_vec_decode_alike() {
    use neffld::container::fast_inflate::{Decompressor, Outcome};
    use neffld::container::{NeffHeader, HEADER_LEN};
    for (name, bytes) in testkit::real_fixtures() {
        let h = NeffHeader::parse(&bytes).unwrap();
        let window = &bytes[HEADER_LEN..HEADER_LEN + h.data_size as usize];
        let mut d = Decompressor::new().unwrap();
        let mut v = Vec::with_capacity(window.len() * 16);
        let Outcome::Done { consumed } = d.gzip_member(window, &mut v) else {
            panic!("{name}: the Vec decode failed");
        };
        let mut room = vec![0xA5u8; v.len() + 100];
        let (outcome, produced) = d.gzip_member_into(window, &mut room);
        assert!(
            matches!(outcome, Outcome::Done { consumed: c } if c == consumed),
            "{name}"
        );
        assert_eq!(produced, v.len(), "{name}");
        assert!(room[..produced] == v[..], "{name}: the bytes differ");
        assert!(
            room[produced..].iter().all(|&b| b == 0xA5),
            "{name}: wrote past the end"
        );
        let mut short = vec![0u8; v.len() - 1];
        let (outcome, produced) = d.gzip_member_into(window, &mut short);
        assert!(matches!(outcome, Outcome::NoRoom), "{name}");
        assert_eq!(produced, 0);
    }
}
