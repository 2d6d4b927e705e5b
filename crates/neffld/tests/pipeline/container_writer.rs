//! The writer's producer families, read back through the container layer,
//! and hostile payloads built with it: every one ends in a clean error.

use neffld::container::writer::{gzip, tar_entry, NeffWriter, Producer, TarEntry};
use neffld::container::{self, ContainerError, DigestForm, Encoding, HashAlgorithm, OpenOptions};
use neffld::NrtStatus;

const VERIFY: OpenOptions = OpenOptions {
    verify_hash: true,
    compare_hash: false,
    inflate_limit: None,
    max_members: None,
};

fn members() -> Vec<(String, Vec<u8>)> {
    vec![
        ("sg00/def.json".into(), b"{\"var\":{}}".to_vec()),
        ("neff.json".into(), b"{}".to_vec()),
        ("kelf-0.json".into(), b"{\"graphs\":[]}".to_vec()),
        (
            format!("sg00/{}.npy", "long_tensor_name_".repeat(9)),
            vec![7u8; 1500],
        ),
        ("sg00/PE.bin".into(), vec![0xB1; 64]),
    ]
}

fn refs(m: &[(String, Vec<u8>)]) -> Vec<(&str, &[u8])> {
    m.iter().map(|(n, b)| (n.as_str(), b.as_slice())).collect()
}

#[test]
fn every_family_round_trips_with_its_digest_form() {
    let m = members();
    for p in Producer::ALL {
        let bytes = NeffWriter::new(p).write(&refs(&m));
        let neff = container::open(&bytes, &VERIFY).unwrap_or_else(|e| panic!("{p:?}: {e}"));
        let v = neff.verified().unwrap();
        let (alg, form, enc_gzip) = match p {
            Producer::V2_0_99229 => (HashAlgorithm::Md5, DigestForm::Plain, true),
            Producer::V2_18 | Producer::V2_21 => {
                (HashAlgorithm::Md5, DigestForm::WordSwapped, true)
            }
            Producer::Pkg1 => (HashAlgorithm::Sha256, DigestForm::Plain, false),
        };
        assert_eq!((v.algorithm, v.form), (alg, form), "{p:?}");
        assert_eq!(
            matches!(neff.archive().encoding(), Some(Encoding::Gzip { .. })),
            enc_gzip,
            "{p:?}"
        );
        assert_eq!(neff.header().data_size % 10240, 0, "{p:?}");
        assert_eq!(
            neff.archive().len(),
            m.len(),
            "{p:?}: no PaxHeader pseudo-members"
        );
        for (name, body) in &m {
            assert_eq!(
                neff.archive().get(name),
                Some(body.as_slice()),
                "{p:?}: {name}"
            );
        }
        let order: Vec<&str> = neff
            .archive()
            .members()
            .iter()
            .map(|m| m.name.as_str())
            .collect();
        let neff_json_last = order.last() == Some(&"neff.json");
        assert_eq!(neff_json_last, p == Producer::V2_21, "{p:?}: {order:?}");
        assert!(
            neff.archive().warnings().is_empty(),
            "{p:?}: {:?}",
            neff.archive().warnings()
        );
    }
}

#[test]
fn the_legacy_family_writes_a_pax_header_before_every_member() {
    let m = members();
    let w = NeffWriter::new(Producer::V2_0_99229);
    let tar = w.tar(&refs(&m));
    let mut pos = 0;
    let mut kinds = Vec::new();
    while tar[pos] != 0 {
        let size =
            usize::from_str_radix(std::str::from_utf8(&tar[pos + 124..pos + 135]).unwrap(), 8)
                .unwrap();
        let name = String::from_utf8_lossy(&tar[pos..pos + 100])
            .trim_end_matches('\0')
            .to_string();
        kinds.push((tar[pos + 156], name));
        assert_eq!(&tar[pos + 265..pos + 266], b"\0", "empty uname");
        assert_ne!(&tar[pos + 136..pos + 147], b"00000000000", "real mtime");
        pos += 512 + size.div_ceil(512) * 512;
    }
    assert_eq!(kinds.len(), 2 * m.len());
    for pair in kinds.chunks(2) {
        assert_eq!(pair[0].0, b'x');
        assert!(pair[0].1.contains("PaxHeader/"), "{}", pair[0].1);
        assert_eq!(pair[1].0, b'0');
    }
}

#[test]
fn plain_md5_in_a_modern_container_is_accepted() {
    let m = members();
    let mut w = NeffWriter::new(Producer::V2_21);
    w.digest_form = Some(DigestForm::Plain);
    let neff = container::open(&w.write(&refs(&m)), &VERIFY).unwrap();
    assert_eq!(neff.verified().unwrap().form, DigestForm::Plain);
}

#[test]
fn content_decides_the_decoder_not_pkg_version() {
    // A pkg 2 header over a raw tar, and a pkg 1 header over gzip.
    let m = members();
    let raw = NeffWriter::new(Producer::Pkg1).tar(&refs(&m));
    let mut w = NeffWriter::new(Producer::V2_21);
    let bytes = w.finish(raw.clone());
    let neff = container::open(&bytes, &VERIFY).unwrap();
    assert_eq!(neff.archive().encoding(), Some(Encoding::RawTar));
    w.producer = Producer::Pkg1;
    let neff = container::open(&w.finish(gzip(&raw, 6)), &VERIFY).unwrap();
    assert!(matches!(
        neff.archive().encoding(),
        Some(Encoding::Gzip { .. })
    ));
    assert_eq!(neff.verified().unwrap().algorithm, HashAlgorithm::Sha256);
}

#[test]
fn every_s1_reject_maps_to_its_status() {
    let m = members();
    let w = NeffWriter::new(Producer::V2_21);
    let good = w.write(&refs(&m));
    let status =
        |bytes: &[u8], opts: &OpenOptions| container::open(bytes, opts).unwrap_err().status();

    assert_eq!(status(&good[..1000], &VERIFY), NrtStatus::Invalid); // too short
    let mut b = good.clone();
    b[8..16].copy_from_slice(&(good.len() as u64).to_le_bytes());
    assert_eq!(status(&b, &VERIFY), NrtStatus::Invalid); // header_size >= size
    let mut b = good.clone();
    b[0x18] = 3;
    assert_eq!(status(&b, &VERIFY), NrtStatus::UnsupportedNeffVersion);
    let mut b = good.clone();
    b[0x220 + 4] = 0x10; // bit 36
    assert_eq!(status(&b, &VERIFY), NrtStatus::UnsupportedNeffVersion);
    assert_eq!(status(&good[..good.len() - 1], &VERIFY), NrtStatus::Invalid); // data_size too big
    let mut b = good.clone();
    b[0] = 5;
    assert_eq!(status(&b, &VERIFY), NrtStatus::UnsupportedNeffVersion);
    let mut b = good.clone();
    b[0xAC] ^= 1;
    assert_eq!(status(&b, &VERIFY), NrtStatus::Invalid); // MD5 mismatch
    container::open(&b, &OpenOptions::default()).unwrap(); // ...not checked by default

    // An empty payload: an error with verification, an empty archive without.
    let mut empty = w.finish(Vec::new());
    empty.push(0); // header_size must stay below the file size (gate 1c)
    assert!(matches!(
        container::open(&empty, &VERIFY).unwrap_err(),
        ContainerError::EmptyPayload
    ));
    assert!(container::open(&empty, &OpenOptions::default())
        .unwrap()
        .archive()
        .is_empty());
}

#[test]
fn damaged_payloads_fail_cleanly_after_rehashing() {
    let m = members();
    let w = NeffWriter::new(Producer::V2_21);
    let tar = w.tar(&refs(&m));

    // A truncated tar member, recompressed and re-hashed: names the member.
    let one = tar_entry(&TarEntry::file("sg00/w.npy", &[5u8; 1500]));
    let e = container::open(&w.finish(gzip(&one[..512 + 100], 1)), &VERIFY).unwrap_err();
    assert!(
        e.to_string().contains("runs past the end") && e.to_string().contains("sg00/w.npy"),
        "{e}"
    );
    assert!(tar.len() > 1024);

    // A lying size field.
    let mut e1 = TarEntry::file("a.bin", &[1u8; 100]);
    e1.header_size = Some(1 << 40);
    let mut lying = tar_entry(&e1);
    lying.extend_from_slice(&[0u8; 1024]);
    let e = container::open(&w.finish(gzip(&lying, 1)), &VERIFY).unwrap_err();
    assert!(
        matches!(e, ContainerError::MemberPastEnd { ref name, .. } if name == "a.bin"),
        "{e}"
    );

    // A gzip bomb under a small limit.
    let bomb = gzip(&vec![0u8; 4 << 20], 9);
    let opts = OpenOptions {
        verify_hash: true,
        compare_hash: false,
        inflate_limit: Some(1 << 20),
        max_members: None,
    };
    let e = container::open(&w.finish(bomb), &opts).unwrap_err();
    assert!(matches!(e, ContainerError::InflateLimit { .. }), "{e}");

    // Truncated gzip stream.
    let z = gzip(&tar, 1);
    let e = container::open(&w.finish(z[..z.len() - 20].to_vec()), &VERIFY).unwrap_err();
    assert!(e.to_string().contains("gzip"), "{e}");
    assert_eq!(e.status(), NrtStatus::Invalid);
}

mod round_trip {
    use super::*;
    use proptest::collection::{btree_map, vec};
    use proptest::prelude::*;

    fn name() -> impl Strategy<Value = String> {
        // Path segments of mixed length, so some names need the ustar prefix or a pax path.
        vec("[a-z0-9_.-]{1,70}", 1..4)
            .prop_map(|segs| segs.join("/"))
            .prop_filter("no wavegraph", |n| {
                !n.ends_with("wavegraph-bin.json")
                    && !n.starts_with("./")
                    && !n.split('/').any(|s| s == "." || s == "..")
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// Whatever members go in come out, byte for byte, in every family.
        #[test]
        fn writer_then_reader_is_the_identity(members in btree_map(name(), vec(any::<u8>(), 0..3000), 1..12)) {
            let list: Vec<(&str, &[u8])> = members.iter().map(|(n, b)| (n.as_str(), b.as_slice())).collect();
            for p in Producer::ALL {
                let bytes = NeffWriter::new(p).write(&list);
                let neff = container::open(&bytes, &VERIFY).map_err(|e| TestCaseError::fail(format!("{p:?}: {e}")))?;
                prop_assert_eq!(neff.archive().len(), members.len(), "{:?}", p);
                for (n, b) in &members {
                    prop_assert_eq!(neff.archive().get(n), Some(b.as_slice()), "{:?} {}", p, n);
                }
            }
        }
    }
}

/// Each S1 reject names its culprit (the field, offset or member) in the message.
#[test]
fn s1_reject_messages_name_the_culprit() {
    let m = members();
    let w = NeffWriter::new(Producer::V2_21);
    let good = w.write(&refs(&m));
    let msg = |bytes: &[u8]| container::open(bytes, &VERIFY).unwrap_err().to_string();
    assert!(msg(&good[..1000]).contains("Invalid number of NEFF bytes received 0x3e8"));
    let mut b = good.clone();
    b[8..16].copy_from_slice(&(1u64 << 40).to_le_bytes());
    assert!(msg(&b).contains("header_size (offset 0x8)"), "{}", msg(&b));
    let mut b = good.clone();
    b[0x18] = 3;
    assert!(msg(&b).contains("NEFF version: 3.0 is not supported"));
    let mut b = good.clone();
    b[0x220 + 4] = 0x10;
    assert!(msg(&b).contains("features: 0x1000000000"), "{}", msg(&b));
    assert!(msg(&good[..good.len() - 1]).contains("data_size (header offset 0x10)"));
    let mut b = good.clone();
    b[0] = 5;
    assert!(msg(&b).contains("Unsupported NEFF packager: 5"));
    let mut b = good.clone();
    b[0xAC] ^= 1;
    assert!(
        msg(&b).starts_with("MD5 mismatch! header holds"),
        "{}",
        msg(&b)
    );
    // A bad tar checksum names the header offset; a bomb names the limit.
    let mut tar = w.tar(&refs(&m));
    tar[512 * 2 + 3] ^= 0x20;
    assert!(
        msg(&w.finish(gzip(&tar, 1))).contains("tar header at offset 0x"),
        "{}",
        msg(&w.finish(gzip(&tar, 1)))
    );
    let opts = OpenOptions {
        verify_hash: false,
        compare_hash: false,
        inflate_limit: Some(1000),
        max_members: None,
    };
    let e = container::open(&good, &opts).unwrap_err().to_string();
    assert!(e.contains("limit of 1000 bytes"), "{e}");
}
