//! Payload integrity: MD5 (pkg 2) or SHA-256 (pkg 1) over the whole
//! `data_size` window, padding included.
//!
//! Real producers disagree on byte order: the 2.0.99229 compiler stores the
//! digest plainly, 2.18 and later store it with each 4-byte word reversed
//! (a `uint32[4]` digest memcpy'd on a little-endian host). Both forms are
//! accepted and the caller is told which one matched. Verification is
//! corruption detection, not authentication, and runs only on request.

use md5::{Digest, Md5};
use sha2::Sha256;

use super::ContainerError;

/// Which algorithm the package version selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HashAlgorithm {
    /// MD5, packager version 2.
    Md5,
    /// SHA-256, packager version 1.
    Sha256,
}

impl HashAlgorithm {
    /// pkg 1 → SHA-256, anything else (2) → MD5.
    pub fn for_pkg_version(pkg_version: u64) -> HashAlgorithm {
        if pkg_version == 1 {
            HashAlgorithm::Sha256
        } else {
            HashAlgorithm::Md5
        }
    }

    /// Bytes of the header hash field that are compared.
    pub fn digest_len(self) -> usize {
        match self {
            HashAlgorithm::Md5 => 16,
            HashAlgorithm::Sha256 => 32,
        }
    }

    /// Its name in messages (`MD5`, `SHA256`).
    pub fn name(self) -> &'static str {
        match self {
            HashAlgorithm::Md5 => "MD5",
            HashAlgorithm::Sha256 => "SHA256",
        }
    }
}

/// The byte order in which a digest is stored in the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DigestForm {
    /// The digest bytes as the algorithm defines them (2.0.99229 producer).
    Plain,
    /// Each 4-byte word byte-reversed (2.18 and later producers).
    WordSwapped,
}

impl DigestForm {
    /// Its name in reports (`plain`, `word-swapped`).
    pub fn name(self) -> &'static str {
        match self {
            DigestForm::Plain => "plain",
            DigestForm::WordSwapped => "word-swapped",
        }
    }
}

/// What verification found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verified {
    /// The digest compared.
    pub algorithm: HashAlgorithm,
    /// The byte order it matched in.
    pub form: DigestForm,
}

/// The digest of `payload` with the algorithm of `algorithm`, in plain order,
/// zero-extended to the 32-byte header field.
pub fn digest(algorithm: HashAlgorithm, payload: &[u8]) -> [u8; 32] {
    digest_with_progress(algorithm, payload, &|_| {})
}

/// Bytes hashed between two reports of progress: large enough that the
/// reports cost nothing, small enough that the pages behind the hash can be
/// released while it runs.
const HASH_CHUNK: usize = 4 << 20;

/// As [`digest`], telling `passed` each offset below which it has hashed
/// every byte (so a caller can release those pages of the payload).
pub fn digest_with_progress(
    algorithm: HashAlgorithm,
    payload: &[u8],
    passed: &dyn Fn(usize),
) -> [u8; 32] {
    fn run<D: Digest>(payload: &[u8], passed: &dyn Fn(usize), out: &mut [u8]) {
        let mut h = D::new();
        let mut at = 0;
        for chunk in payload.chunks(HASH_CHUNK) {
            h.update(chunk);
            at += chunk.len();
            passed(at);
        }
        out.copy_from_slice(&h.finalize());
    }
    let mut out = [0u8; 32];
    match algorithm {
        HashAlgorithm::Md5 => run::<Md5>(payload, passed, &mut out[..16]),
        HashAlgorithm::Sha256 => run::<Sha256>(payload, passed, &mut out),
    }
    out
}

/// Reverses the bytes inside each 4-byte word of the first `len` bytes.
pub fn word_swap(d: &[u8; 32], len: usize) -> [u8; 32] {
    let mut out = *d;
    for w in out[..len].chunks_exact_mut(4) {
        w.reverse();
    }
    out
}

/// The header hash field a producer of the given form writes for `payload`.
pub fn stored_digest(pkg_version: u64, payload: &[u8], form: DigestForm) -> [u8; 32] {
    let alg = HashAlgorithm::for_pkg_version(pkg_version);
    let d = digest(alg, payload);
    match form {
        DigestForm::Plain => d,
        DigestForm::WordSwapped => word_swap(&d, alg.digest_len()),
    }
}

/// Checks the header hash against the payload window (gate 2e).
///
/// The reference runtime asserts (aborts) on an empty window; here it is an
/// ordinary `NRT_INVALID` error.
pub fn verify(
    pkg_version: u64,
    stored: &[u8; 32],
    payload: &[u8],
) -> Result<Verified, ContainerError> {
    verify_with_progress(pkg_version, stored, payload, &|_| {})
}

/// As [`verify`], telling `passed` how far the digest has read the payload.
pub fn verify_with_progress(
    pkg_version: u64,
    stored: &[u8; 32],
    payload: &[u8],
    passed: &dyn Fn(usize),
) -> Result<Verified, ContainerError> {
    if payload.is_empty() {
        return Err(ContainerError::EmptyPayload);
    }
    let algorithm = HashAlgorithm::for_pkg_version(pkg_version);
    let n = algorithm.digest_len();
    let plain = digest_with_progress(algorithm, payload, passed);
    let form = if stored[..n] == plain[..n] {
        DigestForm::Plain
    } else if stored[..n] == word_swap(&plain, n)[..n] {
        DigestForm::WordSwapped
    } else {
        return Err(ContainerError::HashMismatch {
            algorithm,
            stored: hex(&stored[..n]),
            computed: hex(&plain[..n]),
        });
    };
    tracing::debug!(
        algorithm = algorithm.name(),
        form = form.name(),
        "NEFF hash verified"
    );
    Ok(Verified { algorithm, form })
}

pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NrtStatus;

    #[test]
    fn word_swap_matches_the_documented_example() {
        // parse.md §3, matmul_small: md5 ef e9 b3 bc | 98 16 30 77 ... stored bc b3 e9 ef | 77 30 16 98 ...
        let mut d = [0u8; 32];
        d[..8].copy_from_slice(&[0xef, 0xe9, 0xb3, 0xbc, 0x98, 0x16, 0x30, 0x77]);
        let s = word_swap(&d, 16);
        assert_eq!(&s[..8], &[0xbc, 0xb3, 0xe9, 0xef, 0x77, 0x30, 0x16, 0x98]);
        assert_eq!(&s[16..], &[0u8; 16]);
    }

    #[test]
    fn both_forms_verify_and_report_which() {
        for pkg in [1u64, 2] {
            for form in [DigestForm::Plain, DigestForm::WordSwapped] {
                let payload = b"some payload bytes".repeat(7);
                let stored = stored_digest(pkg, &payload, form);
                let v = verify(pkg, &stored, &payload).unwrap();
                assert_eq!(v.form, form);
                assert_eq!(v.algorithm, HashAlgorithm::for_pkg_version(pkg));
            }
        }
    }

    #[test]
    fn md5_ignores_bytes_16_to_32_but_sha_does_not() {
        let payload = b"abc";
        let mut stored = stored_digest(2, payload, DigestForm::Plain);
        stored[20..].fill(b'0');
        verify(2, &stored, payload).unwrap();
        let mut stored = stored_digest(1, payload, DigestForm::Plain);
        stored[31] ^= 1;
        let e = verify(1, &stored, payload).unwrap_err();
        assert_eq!(e.status(), NrtStatus::Invalid);
        assert!(e.to_string().starts_with("SHA256 mismatch!"), "{e}");
    }

    #[test]
    fn the_chunked_digest_is_the_digest_and_reports_every_chunk() {
        let payload: Vec<u8> = (0..HASH_CHUNK * 2 + 77).map(|i| (i % 253) as u8).collect();
        for alg in [HashAlgorithm::Md5, HashAlgorithm::Sha256] {
            let seen = std::sync::Mutex::new(Vec::new());
            let d = digest_with_progress(alg, &payload, &|p| seen.lock().unwrap().push(p));
            let whole = match alg {
                HashAlgorithm::Md5 => Md5::digest(&payload).to_vec(),
                HashAlgorithm::Sha256 => Sha256::digest(&payload).to_vec(),
            };
            assert_eq!(&d[..alg.digest_len()], &whole[..]);
            let n = payload.len();
            assert_eq!(*seen.lock().unwrap(), [HASH_CHUNK, 2 * HASH_CHUNK, n]);
        }
    }

    #[test]
    fn mismatch_and_empty_are_invalid() {
        let stored = stored_digest(2, b"abc", DigestForm::Plain);
        let e = verify(2, &stored, b"abd").unwrap_err();
        assert!(e.to_string().starts_with("MD5 mismatch!"), "{e}");
        assert_eq!(e.status(), NrtStatus::Invalid);
        let e = verify(2, &stored, b"").unwrap_err();
        assert!(matches!(e, ContainerError::EmptyPayload));
        assert_eq!(e.status(), NrtStatus::Invalid);
    }
}
