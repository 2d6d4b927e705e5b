//! Reading a NEFF from a stream (`container::stream`): exactly the NEFF,
//! whatever follows it, and a declared size reserved only as bytes arrive.

use std::io::{self, Read};

use neffld::container::stream::{read_neff_within, MAX_STREAM_NEFF};
use neffld::container::writer::{NeffWriter, Producer};
use neffld::container::{NeffHeader, HEADER_LEN};
use neffld_testkit::Synth;

/// A reader that counts what it handed out.
struct Counted<R> {
    inner: R,
    read: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(b)?;
        self.read += n as u64;
        Ok(n)
    }
}

#[test]
fn a_neff_then_more_reads_the_neff_only() {
    let neff = NeffWriter::new(Producer::V2_18).write(&Synth::static_sunda().member_list());
    let mut r = Counted {
        inner: io::Cursor::new(neff.clone()).chain(io::repeat(7)),
        read: 0,
    };
    assert_eq!(read_neff_within(&mut r, MAX_STREAM_NEFF).unwrap(), neff);
    assert_eq!(r.read, neff.len() as u64, "nothing past the NEFF is read");
    let opened = neffld::container::open(&neff, &Default::default());
    assert!(opened.is_ok());
}

#[test]
fn an_endless_stream_of_zeros_stops_after_the_header() {
    let mut r = Counted {
        inner: io::repeat(0),
        read: 0,
    };
    let got = read_neff_within(&mut r, MAX_STREAM_NEFF).unwrap();
    assert_eq!(got.len(), HEADER_LEN);
    assert_eq!(r.read, HEADER_LEN as u64);
    let e = neffld::container::open(&got, &Default::default()).unwrap_err();
    assert!(
        e.to_string().starts_with("Unsupported NEFF packager: 0"),
        "the same gate a file of zeros fails: {e}"
    );
}

#[test]
fn a_short_stream_is_what_it_held() {
    let neff = NeffWriter::new(Producer::V2_18).write(&Synth::static_sunda().member_list());
    for cut in [0, 100, HEADER_LEN, neff.len() - 1] {
        let got = read_neff_within(&mut io::Cursor::new(&neff[..cut]), MAX_STREAM_NEFF).unwrap();
        assert_eq!(got, &neff[..cut]);
    }
    let e = neffld::container::open(&neff[..neff.len() - 1], &Default::default()).unwrap_err();
    assert!(
        matches!(e, neffld::container::ContainerError::DataSize { .. }),
        "{e}"
    );
    let e = neffld::container::open(&neff[..HEADER_LEN + 1], &Default::default()).unwrap_err();
    assert!(
        e.to_string().contains("but only 1 byte follows the header"),
        "{e}"
    );
}

#[test]
fn a_declared_size_is_reserved_as_the_bytes_arrive() {
    let mut h = Producer::V2_18.default_header();
    h.header_size = HEADER_LEN as u64;
    h.data_size = u64::MAX / 2;
    let mut r = io::Cursor::new(h.encode().to_vec()).chain(io::repeat(1).take(3 << 20));
    let got = read_neff_within(&mut r, u64::MAX).unwrap();
    assert_eq!(
        got.len(),
        HEADER_LEN + (3 << 20),
        "reads what arrives, no more"
    );
}

/// A declared size above the ceiling is refused before a payload byte
/// is read (2^40 bytes of `/dev/zero` grew without end).
#[test]
fn a_declared_size_above_the_ceiling_is_refused_unread() {
    let mut h = Producer::V2_18.default_header();
    h.header_size = HEADER_LEN as u64;
    h.data_size = 1 << 40;
    let mut r = Counted {
        inner: io::Cursor::new(h.encode().to_vec()).chain(io::repeat(0)),
        read: 0,
    };
    let e = read_neff_within(&mut r, MAX_STREAM_NEFF).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    assert!(e.to_string().contains("1099511627776"), "{e}");
    assert!(e.to_string().contains("NEFFLD_MAX_NEFF_SIZE"), "{e}");
    assert_eq!(r.read, HEADER_LEN as u64);
}

/// A NEFF whose header fails a gate of its own (a version, a feature or a
/// packager the runtime does not take) is refused from a stream as it is
/// from a file: its payload is read, so the gates see the same bytes (a
/// stream read only the header, and a version-253 NEFF was refused as a
/// file of nothing but a header, `NRT_INVALID` instead of
/// `NRT_UNSUPPORTED_NEFF_VERSION`).
#[test]
fn a_header_its_own_gates_refuse_is_refused_as_from_a_file() {
    let neff = NeffWriter::new(Producer::V2_18).write(&Synth::static_sunda().member_list());
    type Fault = fn(&mut NeffHeader);
    let faults: [(&str, Fault); 3] = [
        ("version", |h| h.version_major = 253),
        ("feature", |h| {
            h.version_major = 2; // majors 0 and 1 skip the trap
            h.feature_bits |= 1 << 40;
        }),
        ("packager", |h| h.pkg_version = 9),
    ];
    for (what, fault) in faults {
        let mut bad = neff.clone();
        let mut h = NeffHeader::decode(bad[..HEADER_LEN].try_into().unwrap());
        fault(&mut h);
        bad[..HEADER_LEN].copy_from_slice(&h.encode());
        let from_file = neffld::container::open(&bad, &Default::default()).unwrap_err();
        let mut r = Counted {
            inner: io::Cursor::new(bad.clone()).chain(io::repeat(7)),
            read: 0,
        };
        let got = read_neff_within(&mut r, MAX_STREAM_NEFF).unwrap();
        assert_eq!(r.read, bad.len() as u64, "{what}: the NEFF and no more");
        let from_stream = neffld::container::open(&got, &Default::default()).unwrap_err();
        assert_eq!(from_stream.to_string(), from_file.to_string(), "{what}");
        assert_eq!(from_stream.status(), from_file.status(), "{what}");
    }
}

/// A header declaring the largest sizes (up to 2^64 - 1) is a NEFF too
/// large for the ceiling, refused naming it, as one declaring 2^40 is; one
/// that is not a NEFF at all and declares as much is returned alone for its
/// gates to refuse.
#[test]
fn the_largest_declared_sizes_meet_the_ceiling() {
    for size in [u64::MAX, u64::MAX - 1023] {
        let mut h = Producer::V2_18.default_header();
        h.header_size = HEADER_LEN as u64;
        h.data_size = size;
        let mut r = io::Cursor::new(h.encode().to_vec()).chain(io::repeat(0));
        let e = read_neff_within(&mut r, MAX_STREAM_NEFF).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{size}");
        assert!(e.to_string().contains("NEFFLD_MAX_NEFF_SIZE"), "{e}");
    }
    let mut r = Counted {
        inner: io::repeat(b'y'),
        read: 0,
    };
    let got = read_neff_within(&mut r, MAX_STREAM_NEFF).unwrap();
    assert_eq!((got.len(), r.read), (HEADER_LEN, HEADER_LEN as u64));
}
