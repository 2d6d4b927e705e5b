//! S1: the NEFF container — the 1024-byte header, payload integrity, and the
//! in-memory archive (gzip → tar → member table). Knows nothing of JSON.

pub mod archive;
#[cfg(feature = "libdeflate")]
pub mod fast_inflate;
pub mod gzip;
pub mod header;
pub mod integrity;
pub mod mapped;
pub mod release;
pub mod sample;
pub mod sniff;
pub mod stream;
pub mod tar;
pub mod writer;

use thiserror::Error;

pub use archive::Archive;
pub use gzip::Encoding;
#[cfg(any(test, feature = "testkit"))]
pub use gzip::STREAM_MIN;
pub use header::{NeffHeader, HEADER_LEN};
pub use integrity::{DigestForm, HashAlgorithm, Verified};
pub use mapped::MappedFile;
pub use sniff::FileKind;
pub use stream::read_neff_within;
pub use tar::{Member, MemberKind};

use crate::NrtStatus;
use release::{ReadFront, Reader};

/// Everything that can be wrong with a container. Messages keep the
/// reference runtime's wording where one is known (parse.md §9 rows 3–18).
#[derive(Clone, Debug, Error)]
pub enum ContainerError {
    /// Fewer bytes than a header: often not a NEFF at all (the kind says what it looks like).
    #[error("Invalid number of NEFF bytes received {size:#x}: the file is {}, and a NEFF is at least 1024 bytes (its header){kind}", crate::text::count(*size, "byte"))]
    TooShort {
        /// Bytes.
        size: u64,
        /// What the bytes look like instead, for the message.
        kind: FileKind,
    },
    /// The header's own size field is not below the file's size.
    #[error("Invalid NEFF file size hdr sz: {header_size:#x}, file sz: {file_size:#x}: header_size (offset 0x8) is {header_size} bytes, not less than the file's {file_size} bytes{kind}")]
    HeaderSize {
        /// The header's size field.
        header_size: u64,
        /// The file's size.
        file_size: u64,
        /// What the bytes look like instead, for the message.
        kind: FileKind,
    },
    /// The NEFF was compiled for another logical-core size than the runtime runs (`NEURON_LOGICAL_NC_CONFIG`).
    #[error("Mismatch detected between Runtime configuration and NEFF. Runtime currently configured with `NEURON_LOGICAL_NC_CONFIG={runtime_lnc}` but NEFF {name} was compiled with `--lnc={neff_lnc}`. To resolve, either recompile the NEFF with `--lnc={runtime_lnc}` or re-run with `NEURON_LOGICAL_NC_CONFIG={neff_lnc}`.")]
    LncMismatch {
        /// The name involved (the NEFF's, or the member's).
        name: String,
        /// The runtime's logical-core size.
        runtime_lnc: u32,
        /// The NEFF's declared logical-core size.
        neff_lnc: u32,
    },
    /// The NEFF's logical-core size is not one the chip takes at all.
    #[error("NEFF {name} declares logical-core size {neff_lnc} (header vnc_size {neff_lnc}), which {chip} cannot take (it takes logical-core size {}); {why}", chip.arch.lnc_sizes_text())]
    LncForeign {
        /// The name involved (the NEFF's, or the member's).
        name: String,
        /// The NEFF's declared logical-core size.
        neff_lnc: u32,
        /// The runtime's chip.
        chip: crate::arch::Chip,
        /// What to do about it.
        why: String,
    },
    /// A format version no runtime line reads (`NRT_UNSUPPORTED_NEFF_VERSION`).
    #[error("NEFF version: {major}.{minor} is not supported, accepted version range: 0.x-2.x (header offset 0x18){kind}")]
    UnsupportedVersion {
        /// Major version from the header.
        major: u64,
        /// Minor version from the header.
        minor: u64,
        /// What the bytes look like instead (a tar archive's first name
        /// reads as a version), for the message.
        kind: FileKind,
    },
    /// Feature bits of a newer compiler than the runtime line knows.
    #[error("This NEFF (version: 2.{minor}, features: {offending:#x}) has been compiled by a newer version of Neuron compiler. Features supported by this Neuron Runtime: 0x7ffffff. Please update the aws-neuronx-runtime-lib package to the latest version.")]
    UnsupportedFeatures {
        /// Minor version from the header.
        minor: u64,
        /// The feature bits not known.
        offending: u64,
    },
    /// The header's payload size is more than the bytes that follow it.
    #[error("Invalid NEFF data size({data_size:#x} vs {available:#x}): data_size (header offset 0x10) is {data_size} bytes, but only {} follow{} the header", crate::text::count(*available, "byte"), if *available == 1 { "s" } else { "" })]
    DataSize {
        /// The header's payload size.
        data_size: u64,
        /// Bytes actually there.
        available: u64,
    },
    /// A packager version other than 1 or 2.
    #[error("Unsupported NEFF packager: {pkg_version} (header offset 0x0; expected 1 or 2){kind}")]
    UnsupportedPackager {
        /// The header's packager version.
        pkg_version: u64,
        /// What the bytes look like instead, for the message.
        kind: FileKind,
    },
    /// No payload to digest or inflate.
    #[error("Empty NEFF payload cannot be verified (data_size is 0)")]
    EmptyPayload,
    /// The payload's digest is not the one the header stores (checked when asked).
    #[error("{} mismatch! header holds {stored}, payload digest is {computed} (neither plain nor word-swapped order matches)", algorithm.name())]
    HashMismatch {
        /// The digest the header names.
        algorithm: HashAlgorithm,
        /// The value stored.
        stored: String,
        /// The value computed.
        computed: String,
    },
    /// The payload does not inflate.
    #[error("failure while reading NEFF metadata: gzip member {member} at payload offset {offset:#x}: {detail}")]
    Gzip {
        /// Which gzip member (0-based).
        member: u32,
        /// Byte offset where it was found.
        offset: u64,
        /// What is wrong there.
        detail: String,
    },
    /// The payload inflates past the ceiling (a gzip bomb, or `NEFFLD_MAX_INFLATED` too low).
    #[error("Inflated NEFF payload exceeds the limit of {limit} bytes: neffld's own ceiling against decompression bombs, not the runtime's (by default 64 times the compressed payload, 256 MiB to 32 GiB; NEFFLD_MAX_INFLATED or --max-inflated raises it)")]
    InflateLimit {
        /// The ceiling.
        limit: u64,
    },
    /// A tar header's checksum is wrong.
    #[error("failure while reading NEFF metadata: tar header at offset {offset:#x} has a bad checksum (stored {stored}, computed {computed})")]
    TarChecksum {
        /// Byte offset where it was found.
        offset: u64,
        /// The value stored.
        stored: u64,
        /// The value computed.
        computed: u64,
    },
    /// The archive ends inside an entry.
    #[error("failure while reading NEFF metadata: truncated tar archive at offset {offset:#x}: {detail}")]
    TarTruncated {
        /// Byte offset where it was found.
        offset: u64,
        /// What is wrong there.
        detail: String,
    },
    /// A tar header's numeric or text field does not parse.
    #[error("failure while reading NEFF metadata: tar header at offset {offset:#x}: bad {field} field: {detail}")]
    TarField {
        /// Byte offset where it was found.
        offset: u64,
        /// The tar header field's name.
        field: &'static str,
        /// What is wrong there.
        detail: String,
    },
    /// A member's size runs past the end of the archive.
    #[error("failure while reading NEFF metadata: member {name:?} (header at offset {offset:#x}) runs past the end of the archive: size {size}, {available} bytes left")]
    MemberPastEnd {
        /// The name involved (the NEFF's, or the member's).
        name: String,
        /// Byte offset where it was found.
        offset: u64,
        /// Bytes.
        size: u64,
        /// Bytes actually there.
        available: u64,
    },
    /// A pax extended header does not parse.
    #[error("failure while reading NEFF metadata: pax header at offset {offset:#x}: {detail}")]
    BadPax {
        /// Byte offset where it was found.
        offset: u64,
        /// What is wrong there.
        detail: String,
    },
    /// A tar entry without a name.
    #[error(
        "failure while reading NEFF metadata: tar entry at offset {offset:#x} has an empty name"
    )]
    EmptyMemberName {
        /// Byte offset where it was found.
        offset: u64,
    },
    /// A tar entry kind or feature the runtime does not read (a link, a sparse file).
    #[error("failure while reading NEFF metadata: member {name:?} at offset {offset:#x}: {what} is not supported")]
    Unsupported {
        /// The name involved (the NEFF's, or the member's).
        name: String,
        /// Byte offset where it was found.
        offset: u64,
        /// What it was for, or what is not supported.
        what: String,
    },
    /// The host could not hold what the NEFF asks for (`NRT_FAIL_HOST_MEM_ALLOC`).
    #[error("fail to allocate memory({size}) for {what}")]
    OutOfMemory {
        /// What it was for, or what is not supported.
        what: String,
        /// Bytes.
        size: u64,
    },
    /// A caller handed in a container opened from other bytes than the ones it loads.
    #[error("the opened NEFF handed in beside its bytes is not theirs: its header differs")]
    NotTheseBytes,
    /// More archive entries than the ceiling (`NEFFLD_MAX_MEMBERS`).
    #[error("the NEFF payload has more than {limit} tar entries (the one at offset {offset:#x} is past the ceiling): neffld's own ceiling, not the runtime's; NEFFLD_MAX_MEMBERS raises it")]
    TooManyMembers {
        /// The ceiling.
        limit: u64,
        /// Byte offset where it was found.
        offset: u64,
    },
}

impl ContainerError {
    /// The `NRT_STATUS` the reference runtime returns for this failure.
    pub fn status(&self) -> NrtStatus {
        match self {
            ContainerError::UnsupportedVersion { .. }
            | ContainerError::UnsupportedFeatures { .. }
            | ContainerError::UnsupportedPackager { .. } => NrtStatus::UnsupportedNeffVersion,
            // The host ran out, as for every size a NEFF chooses
            // (`crate::fallible`).
            ContainerError::OutOfMemory { .. } => NrtStatus::FailHostMemAlloc,
            _ => NrtStatus::Invalid,
        }
    }

    /// The file's bytes contradict themselves: a header whose payload is
    /// cut short or empty, a digest, gzip stream or tar archive that does
    /// not check. Nothing about where or how it is loaded changes that (a
    /// plan says so instead of advising), where a size the chip does not
    /// take, a newer format or one of neffld's ceilings is not damage.
    pub fn damaged(&self) -> bool {
        matches!(
            self,
            ContainerError::DataSize { .. }
                | ContainerError::EmptyPayload
                | ContainerError::HashMismatch { .. }
                | ContainerError::Gzip { .. }
                | ContainerError::TarChecksum { .. }
                | ContainerError::TarTruncated { .. }
                | ContainerError::TarField { .. }
                | ContainerError::MemberPastEnd { .. }
                | ContainerError::BadPax { .. }
                | ContainerError::EmptyMemberName { .. }
        )
    }
}

/// How to open a container.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenOptions {
    /// Check the payload digest (`NEURON_RT_VALIDATE_HASH`; off by default,
    /// as in the reference runtime).
    pub verify_hash: bool,
    /// Compare the digest beside the decode even when `verify_hash` is off,
    /// for a report: the finding is kept in [`Neff::compared`], and a
    /// mismatch is not an error.
    pub compare_hash: bool,
    /// Ceiling on the decoded payload; `None` = [`archive::default_inflate_limit`].
    pub inflate_limit: Option<u64>,
    /// Ceiling on the tar's entries; `None` = [`archive::DEFAULT_MAX_MEMBERS`].
    pub max_members: Option<u64>,
}

/// A container that passed the S1 gates: the header, what integrity found,
/// and the archive. Only [`open`] and [`open_mapped`] make one, so holding a
/// `Neff` is the proof that its gates ran.
#[derive(Clone, Debug)]
pub struct Neff {
    header: NeffHeader,
    verified: Option<Verified>,
    compared: Option<Result<Verified, ContainerError>>,
    archive: Archive,
}

impl Neff {
    /// The header, as its gates read it.
    pub fn header(&self) -> &NeffHeader {
        &self.header
    }

    /// `Some` when the digest was required and matched.
    pub fn verified(&self) -> Option<Verified> {
        self.verified
    }

    /// What the digest comparison found when it was asked for
    /// ([`OpenOptions::compare_hash`]) but not required: a mismatch is a
    /// finding here, not an error.
    pub fn compared(&self) -> Option<&Result<Verified, ContainerError>> {
        self.compared.as_ref()
    }

    /// The digest comparison, whichever way it was made: required, or for a
    /// report. `None` when neither was asked for.
    pub fn digest(&self) -> Option<Result<Verified, ContainerError>> {
        match (self.verified, &self.compared) {
            (Some(v), _) => Some(Ok(v)),
            (None, c) => c.clone(),
        }
    }

    /// The payload's members, inflated once and borrowed from there.
    pub fn archive(&self) -> &Archive {
        &self.archive
    }

    /// A container whose gates did not run: a header and an archive put
    /// together by hand, for the fuzzers and tests that feed the manifest
    /// layer without compressing a payload each time.
    #[cfg(feature = "testkit")]
    pub fn unchecked(header: NeffHeader, archive: Archive) -> Neff {
        Neff {
            header,
            verified: None,
            compared: None,
            archive,
        }
    }

    /// This container, held to the gates `opts` asks for on `bytes`: a
    /// caller that hands an opened container in beside its bytes
    /// ([`crate::api::Runtime::load_opened`]) may have opened it with other
    /// options, or from other bytes. Its header must be the bytes' own; a
    /// digest the options require and the open did not is checked now; the
    /// inflated payload must fit the options' ceilings.
    pub(crate) fn held_to(mut self, bytes: &[u8], opts: &OpenOptions) -> Result<Neff, ContainerError> {
        let window = NeffHeader::parse(bytes)
            .ok()
            .filter(|h| *h == self.header)
            .and_then(|h| payload_window(bytes, &h))
            .ok_or(ContainerError::NotTheseBytes)?;
        if opts.verify_hash && self.verified.is_none() {
            let digest = match self.compared.take() {
                Some(c) => c,
                None => integrity::verify(self.header.pkg_version, &self.header.hash, window),
            };
            self.verified = Some(digest?);
        }
        let limit = opts
            .inflate_limit
            .unwrap_or_else(|| archive::default_inflate_limit(window.len() as u64));
        if self.archive.decoded_len() as u64 > limit {
            return Err(ContainerError::InflateLimit { limit });
        }
        let max_members = opts.max_members.unwrap_or(archive::DEFAULT_MAX_MEMBERS);
        if self.archive.len() as u64 > max_members {
            return Err(ContainerError::TooManyMembers {
                limit: max_members,
                offset: 0,
            });
        }
        Ok(self)
    }
}

/// Runs every S1 gate in the reference order (preflight, version, feature
/// trap, data size, packager, integrity), then decodes the payload window.
pub fn open(bytes: &[u8], opts: &OpenOptions) -> Result<Neff, ContainerError> {
    open_releasing(bytes, opts, None)
}

/// As [`open`], for a mapped file whose pages are released as the decoder
/// and the digest pass them: a payload of [`STREAM_MIN`](gzip::STREAM_MIN) bytes or more is
/// inflated as a stream, so the compressed window does not stay resident
/// next to the inflated one. The bytes read are the same, and so are the
/// result and every error.
pub fn open_mapped(file: &MappedFile, opts: &OpenOptions) -> Result<Neff, ContainerError> {
    let release = |window_end: usize| file.release_below(HEADER_LEN + window_end);
    open_releasing(file.bytes(), opts, Some(&release))
}

fn open_releasing(
    bytes: &[u8],
    opts: &OpenOptions,
    release: Option<release::Release<'_>>,
) -> Result<Neff, ContainerError> {
    let header = NeffHeader::parse(bytes)?;
    header.validate(bytes.len() as u64)?;
    // validate() proved data_size <= len - 0x400, so this cannot overflow.
    let window = &bytes[HEADER_LEN..HEADER_LEN + header.data_size as usize];
    let limit = opts
        .inflate_limit
        .unwrap_or_else(|| archive::default_inflate_limit(window.len() as u64));
    let max_members = opts.max_members.unwrap_or(archive::DEFAULT_MAX_MEMBERS);
    let hashed = opts.verify_hash || opts.compare_hash;
    let front = release.map(|r| ReadFront::new(r, window.len(), hashed));
    let front = front.as_ref();
    let decode = || Archive::decode_with_progress(window, limit, max_members, front);
    let (digest, archive) = if hashed {
        let passed = |at: usize| {
            if let Some(f) = front {
                f.passed(Reader::Hash, at);
            }
        };
        let (digest, archive) = hash_beside(
            decode,
            || integrity::verify_with_progress(header.pkg_version, &header.hash, window, &passed),
            window.len(),
        );
        (Some(digest), archive)
    } else {
        (None, decode())
    };
    // The hash gate comes first (gate 2e): a bad digest is the error even
    // when the decode failed too, and no member has been looked at yet.
    let (verified, compared) = match digest {
        Some(digest) if opts.verify_hash => (Some(digest?), None),
        digest => (None, digest),
    };
    Ok(Neff {
        header,
        verified,
        compared,
        archive: archive?,
    })
}

/// Payloads at least this large are hashed on a second thread while the
/// first inflates: the digest (MD5 at about 0.6 GB/s) and the inflate each
/// take milliseconds there, against about 60 µs to start a thread.
const HASH_BESIDE_MIN: usize = 256 << 10;

/// Runs `decode` and `hash` side by side on two cores when the payload is
/// large enough and a second core exists; one after the other otherwise.
/// Either way both results come back and the caller orders them.
fn hash_beside<A, H: Send>(
    decode: impl FnOnce() -> A,
    hash: impl FnOnce() -> H + Send,
    window_len: usize,
) -> (H, A) {
    let two_cores = std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
    if window_len < HASH_BESIDE_MIN || !two_cores {
        let h = hash();
        return (h, decode());
    }
    // The hash moves to the thread through this cell, so that if no thread
    // can be started it is still here to run inline.
    let job = std::sync::Mutex::new(Some(hash));
    let take = || job.lock().unwrap_or_else(|p| p.into_inner()).take();
    std::thread::scope(|s| {
        let spawned = std::thread::Builder::new()
            .name("neffld-hash".into())
            .spawn_scoped(s, || take().map(|f| f()));
        match spawned {
            Ok(handle) => {
                let archive = decode();
                let h = handle
                    .join()
                    .unwrap_or_else(|p| std::panic::resume_unwind(p))
                    .expect("the hash thread ran the hash");
                (h, archive)
            }
            Err(_) => {
                let h = take().expect("the hash did not run")();
                (h, decode())
            }
        }
    })
}

/// The payload window of a buffer whose header already passed `validate`.
pub fn payload_window<'a>(bytes: &'a [u8], header: &NeffHeader) -> Option<&'a [u8]> {
    let end = HEADER_LEN.checked_add(usize::try_from(header.data_size).ok()?)?;
    bytes.get(HEADER_LEN..end)
}
