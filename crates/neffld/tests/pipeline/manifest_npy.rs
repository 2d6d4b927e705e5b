//! `.npy` weight members (`manifest::npy`): both header versions, the
//! dictionary's disagreements, and the headers refused.

use neffld::manifest::npy::{descr_width, parse};
use neffld_testkit::npy_v1_with_header as npy_v1;

#[test]
fn v1_header_and_dict() {
    let b = npy_v1(
        "{'descr': '<f2', 'fortran_order': False, 'shape': (2, 2, 1, 1), }",
        &[0u8; 8],
    );
    let n = parse("w.npy", &b).unwrap();
    assert_eq!(n.data_offset, 128);
    assert_eq!(n.payload.len(), 8);
    assert_eq!(n.descr.as_deref(), Some("<f2"));
    assert_eq!(n.fortran_order, Some(false));
    assert_eq!(n.shape, Some(vec![2, 2, 1, 1]));
    assert!(n.warnings.is_empty(), "{:?}", n.warnings);
}

#[test]
fn v2_header_uses_u32_length() {
    let dict = "{'descr': '|i1', 'fortran_order': True, 'shape': (3,), }\n";
    let mut b = b"\x93NUMPY\x02\x00".to_vec();
    b.extend_from_slice(&(dict.len() as u32).to_le_bytes());
    b.extend_from_slice(dict.as_bytes());
    b.extend_from_slice(&[1, 2, 3]);
    let n = parse("w.npy", &b).unwrap();
    assert_eq!(n.payload, &[1, 2, 3]);
    assert_eq!(n.version, (2, 0));
    assert_eq!(n.warnings.len(), 1, "fortran order warns: {:?}", n.warnings);
}

#[test]
fn dict_disagreement_warns_and_void_descr_has_a_width() {
    let b = npy_v1(
        "{'descr': '<V2', 'fortran_order': False, 'shape': (4,), }",
        &[0; 6],
    );
    let n = parse("w.npy", &b).unwrap();
    assert_eq!(n.warnings.len(), 1);
    assert_eq!(descr_width("<V2"), Some(2));
    assert_eq!(descr_width("|i1"), Some(1));
    assert_eq!(descr_width("<f4"), Some(4));
}

#[test]
fn bad_headers_reject() {
    let e = parse("w.npy", b"\x93NU").unwrap_err();
    assert!(e.to_string().starts_with("NUMPY w.npy bad header"), "{e}");
    let e = parse("w.npy", b"PK\x03\x04xxxxxxxxxx").unwrap_err();
    assert!(e.to_string().contains("bad header 4b50 != 0x4e93"), "{e}");
    let e = parse("w.npy", b"\x93NUMPY\x01\x00\xff\x00abc").unwrap_err();
    assert!(e.to_string().contains("runs past"), "{e}");
}
