//! `container::open_mapped` on a payload above the streaming threshold:
//! the same archive, verdict and errors as `container::open` on the same
//! bytes read into memory, with the mapped window released behind the
//! decoder and the digest (measured as the mapping's own resident size).

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::OnceLock;

use neffld::api::Runtime;
use neffld::config::{DeviceKind, Loader, RuntimeConfig, Topology};
use neffld::container::mapped::RELEASE_ALIGN;
use neffld::container::{self, MappedFile, Neff, OpenOptions, STREAM_MIN};
use neffld::Arch;
use neffld_testkit::{lnc_writer, noise, npy_v1, Synth};

/// Weights of barely compressible bytes, so the payload window is larger
/// than the streaming threshold.
fn weights() -> &'static Vec<u8> {
    static W: OnceLock<Vec<u8>> = OnceLock::new();
    W.get_or_init(|| {
        let per = (STREAM_MIN + (8 << 20)) as usize;
        npy_v1("<f4", &[per as u64 / 4], &noise(per))
    })
}

/// The NEFF with those weights: its tar, and the writer that wraps payloads.
fn neff() -> &'static Vec<u8> {
    static N: OnceLock<Vec<u8>> = OnceLock::new();
    N.get_or_init(|| {
        let mut synth = Synth::cayman_weights(1, 4);
        synth.set("sg00/value_sg0000_w_CRSM.npy", weights().clone());
        lnc_writer(1).write(&synth.member_list())
    })
}

/// A file holding `bytes`, removed on drop.
struct TempNeff(PathBuf);

impl TempNeff {
    fn new(tag: &str, bytes: &[u8]) -> TempNeff {
        let p =
            std::env::temp_dir().join(format!("neffld-mapped-{}-{tag}.neff", std::process::id()));
        File::create(&p).unwrap().write_all(bytes).unwrap();
        TempNeff(p)
    }

    fn map(&self) -> MappedFile {
        MappedFile::map(&File::open(&self.0).unwrap()).unwrap()
    }
}

impl Drop for TempNeff {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn opts(verify_hash: bool) -> OpenOptions {
    OpenOptions {
        verify_hash,
        ..OpenOptions::default()
    }
}

/// The digest compared for a report only, not required.
const COMPARE: OpenOptions = OpenOptions {
    verify_hash: false,
    compare_hash: true,
    inflate_limit: None,
    max_members: None,
};

/// Everything a caller sees of an open: the decoded bytes, the account of
/// the window, the verdict; or the error's text and status.
fn seen(r: Result<Neff, container::ContainerError>) -> Result<(Vec<u8>, String), String> {
    r.map(|n| {
        let account = format!(
            "{:?} {:?} {:?} {:?} {:?}",
            n.archive().encoding(),
            n.verified(),
            n.compared(),
            n.archive().warnings(),
            n.archive().members()
        );
        (n.archive().decoded().to_vec(), account)
    })
    .map_err(|e| format!("{e} [{:?}]", e.status()))
}

#[test]
fn a_large_payload_decodes_the_same_and_is_released() {
    let bytes = neff();
    assert!((bytes.len() - 1024) as u64 >= STREAM_MIN, "{}", bytes.len());
    let file = TempNeff::new("good", bytes);
    for o in [opts(false), opts(true), COMPARE] {
        let expected = seen(container::open(bytes, &o));
        let map = file.map();
        let got = container::open_mapped(&map, &o);
        let resident = map.resident_bytes().unwrap();
        let got = seen(got);
        assert!(expected.is_ok());
        assert!(got == expected, "{o:?}: the archives differ");
        // Only the blocks of the cache key's 64 sampled pieces (at most two
        // each) and the partial last block stay: the window is over 64 MiB.
        let bound = 130 * RELEASE_ALIGN as u64;
        assert!(resident <= bound, "{o:?}: {resident} bytes still resident");
    }
    let compared = container::open_mapped(&file.map(), &COMPARE).unwrap();
    assert!(compared.verified().is_none());
    assert_eq!(
        *compared.compared().unwrap().as_ref().unwrap(),
        container::open(bytes, &opts(true))
            .unwrap()
            .verified()
            .unwrap(),
        "the digest compared for a report is the one the gate finds"
    );
    // A one-shot load of the opened file reads only pages that were kept
    // (the header, the cache key's sample): nothing faults back.
    let map = file.map();
    let n = container::open_mapped(&map, &opts(false)).unwrap();
    let before = map.resident_bytes().unwrap();
    let config = RuntimeConfig {
        topology: Topology {
            arch: Arch::Cayman,
            lnc: Some(1),
            ..Default::default()
        },
        loader: Loader {
            device: DeviceKind::Null,
            one_load_at_a_time: true,
            ..Default::default()
        },
        ..Default::default()
    };
    let rt = Runtime::new(config).unwrap();
    let model = rt.load_opened(map.bytes(), n, None).unwrap();
    assert_eq!(map.resident_bytes(), Some(before));
    rt.unload(&model).unwrap();
    // The members are the writer's: the weights read back whole.
    let map = file.map();
    let n = container::open_mapped(&map, &opts(true)).unwrap();
    assert!(n.archive().get("sg00/value_sg0000_w_CRSM.npy") == Some(&weights()[..]));
}

/// A damaged payload fails the same way mapped or read; with the hash
/// required, the digest mismatch is the error even though the payload
/// would not inflate either (gate 2e comes before any member is used).
#[test]
fn damage_gives_the_same_errors_and_the_hash_fails_first() {
    let bytes = neff();
    let mut damaged = bytes.clone();
    let mid = 1024 + (bytes.len() - 1024) / 2;
    for b in &mut damaged[mid..mid + 64] {
        *b ^= 0xA5;
    }
    // The payload cut short behind a consistent header (hash recomputed).
    let window = &bytes[1024..];
    let cut = lnc_writer(1).finish(window[..window.len() / 2 + 3].to_vec());
    let mut garbage_after = bytes.clone();
    let last = garbage_after.len() - 1;
    garbage_after[last] = 7;
    for (tag, b) in [
        ("damaged", &damaged),
        ("cut", &cut),
        ("garbage", &garbage_after),
    ] {
        let file = TempNeff::new(tag, b);
        for o in [opts(false), opts(true), COMPARE] {
            let expected = seen(container::open(b, &o));
            let got = seen(container::open_mapped(&file.map(), &o));
            assert!(
                got == expected,
                "{tag}, {o:?}: {:?} against {:?}",
                got.as_ref().err(),
                expected.as_ref().err()
            );
        }
    }
    let file = TempNeff::new("damaged-hash", &damaged);
    let e = container::open_mapped(&file.map(), &opts(true)).unwrap_err();
    assert!(e.to_string().starts_with("MD5 mismatch!"), "{e}");
    let e = container::open_mapped(&file.map(), &opts(false)).unwrap_err();
    assert!(
        matches!(e, container::ContainerError::Gzip { member: 1, .. }),
        "{e}"
    );
    let file = TempNeff::new("cut-ok", &cut);
    let e = container::open_mapped(&file.map(), &opts(true)).unwrap_err();
    assert!(e.to_string().contains("truncated gzip input"), "{e}");
}
