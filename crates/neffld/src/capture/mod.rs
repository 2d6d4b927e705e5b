//! Profiler captures (NTFF): what the real runtime put on a real device.
//!
//! A capture is the second witness beside the specs (docs/reference/capture.md): per
//! subgraph, the physical core it ran on, every engine's instruction image
//! with its device address, and the runtime's memory accounting. This module
//! reads captures of NTFF versions 4, 5 and 6 ([`read`]) and writes them
//! ([`writer`]); what a load staged is put in the same terms, and held
//! against a capture, by the report layer ([`crate::report::staged`],
//! [`crate::report::compare`]).
//!
//! It depends on nothing of the pipeline: the wire format and its records.

mod ntff;
// The protobuf wire format: this module's own, and the project's tests'
// (the `testkit` feature); what users read is a [`Capture`].
#[cfg(feature = "testkit")]
#[allow(missing_docs)]
pub mod wire;
#[cfg(not(feature = "testkit"))]
mod wire;
pub mod writer;

use std::borrow::Cow;
use std::fmt;

use thiserror::Error;

use crate::manifest::engine::EngineType;
use crate::{Arch, NrtStatus};

pub use ntff::read;
pub use wire::WireError;

/// What bytes that are not a capture look like, as a noun phrase: a NEFF
/// (a capture and its NEFF given the other way round), else what the
/// NEFF reader's sniffing recognises (JSON, text, gzip, ...).
pub(crate) fn what_it_is(bytes: &[u8]) -> Option<&'static str> {
    use crate::container::{NeffHeader, HEADER_LEN};
    let neff = bytes
        .get(..HEADER_LEN)
        .and_then(|h| h.try_into().ok())
        .map(NeffHeader::decode)
        .is_some_and(|h| matches!(h.pkg_version, 1 | 2) && h.header_size == HEADER_LEN as u64);
    if neff {
        return Some("a NEFF");
    }
    crate::container::sniff::FileKind::of(bytes).noun()
}

fn not_a_capture(what: &Option<&'static str>) -> String {
    match what {
        Some("a NEFF") => {
            "; this is a NEFF, not a capture (give the NEFF first, then its capture)".into()
        }
        Some(w) => format!("; this is {w}, not a capture (a profiler capture is an .ntff file)"),
        None => String::new(),
    }
}

/// Where the metadata message starts in every version.
pub(crate) const METADATA_OFFSET: usize = 0x80;
/// The NTFF versions this reader knows.
pub(crate) const VERSIONS: [u8; 3] = [4, 5, 6];

/// Why a capture could not be read. Every variant names where.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CaptureError {
    /// Fewer bytes than the fixed header: not a capture, or cut short.
    #[error("capture is {len} bytes, shorter than the {METADATA_OFFSET:#x}-byte header")]
    TooShort {
        /// The file's length.
        len: usize,
    },
    /// A version byte this reader does not know.
    #[error("NTFF version {version} is not supported (expected 4, 5 or 6){}", not_a_capture(.what))]
    UnsupportedVersion {
        /// The version byte.
        version: u8,
        /// What the bytes look like when they are plainly not a capture (a
        /// NEFF given in its place, the profiler's JSON report).
        what: Option<&'static str>,
    },
    #[error(
        "metadata message of {len} bytes at 0x80 runs past the end of the {file_len}-byte capture"
    )]
    /// The metadata message's length runs past the file.
    MetadataOverrun {
        /// Its declared length.
        len: u64,
        /// The file's length.
        file_len: usize,
    },
    /// A protobuf field that does not decode.
    #[error("{path}: {source}")]
    Wire {
        /// The field's path in the message.
        path: String,
        /// What is wrong with its encoding.
        #[source]
        source: WireError,
    },
    /// A field of the wrong wire type.
    #[error("{path} at offset {at:#x}: expected {expected}")]
    FieldType {
        /// The field's path in the message.
        path: String,
        /// Its byte offset in the file.
        at: usize,
        /// The wire type the field must have.
        expected: &'static str,
    },
    /// An engine index that is none of the five engines.
    #[error("{path} at offset {at:#x}: engine index {value} is not 0..=4")]
    BadEngine {
        /// The field's path in the message.
        path: String,
        /// Its byte offset in the file.
        at: usize,
        /// The index found.
        value: u64,
    },
    /// An image whose bytes lie outside the data area.
    #[error("{path}: image of {size} bytes at data offset {offset} runs past the {data_len}-byte data area")]
    ImageOutOfBounds {
        /// The image's path in the message.
        path: String,
        /// Its offset in the data area.
        offset: u64,
        /// Its size.
        size: u64,
        /// The data area's size.
        data_len: usize,
    },
    /// An image with no bytes anywhere.
    #[error("{path}: image has neither inline bytes (field 3) nor a data-area size (field 8)")]
    ImageMissing {
        /// The image's path in the message.
        path: String,
    },
    /// A capture that this writer cannot express in the version asked for.
    #[error("cannot write version {version}: {why}")]
    Unwritable {
        /// The version asked for.
        version: u8,
        /// What does not fit it.
        why: String,
    },
}

impl CaptureError {
    /// A bad capture is bad input.
    pub fn status(&self) -> NrtStatus {
        NrtStatus::Invalid
    }
}

/// A runtime, driver or collectives version (fields 1, 2, 3, 5).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Version {
    /// Major version.
    pub major: u64,
    /// Minor version: with the major, what picks neffld's runtime line.
    pub minor: u64,
    /// Patch version.
    pub patch: u64,
    /// The build's git hash, when recorded.
    pub git_hash: Option<String>,
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// The NEFF uuid as far as the capture knows it. Field 2 is written as a C
/// string, so a uuid with a zero byte is cut there; only field 4.5 (v6)
/// carries all 16 bytes for sure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CaptureUuid {
    /// All 16 bytes (field 4.5 of v6, or a C string without a zero byte).
    Full([u8; 16]),
    /// The bytes before the first zero: the uuid's first bytes, not all.
    Prefix(Vec<u8>),
}

impl CaptureUuid {
    /// True when `uuid` is consistent with what the capture recorded.
    pub fn matches(&self, uuid: &[u8; 16]) -> bool {
        match self {
            CaptureUuid::Full(u) => u == uuid,
            CaptureUuid::Prefix(p) => uuid.starts_with(p) && uuid.get(p.len()) == Some(&0),
        }
    }

    /// The whole uuid, when the capture has all of it.
    pub fn full(&self) -> Option<&[u8; 16]> {
        match self {
            CaptureUuid::Full(u) => Some(u),
            CaptureUuid::Prefix(_) => None,
        }
    }
}

/// One engine's instruction image as the runtime loaded it.
#[derive(Clone, PartialEq, Eq)]
pub struct Image<'a> {
    /// The engine whose stream this is.
    pub engine: EngineType,
    /// The device address, tag bits included, as the runtime wrote it.
    pub address: u64,
    /// The image as loaded: the NEFF's records after the runtime's rewriting.
    pub bytes: Cow<'a, [u8]>,
}

/// Images are kilobytes of records: debug output names their size only.
impl fmt::Debug for Image<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Image")
            .field("engine", &self.engine)
            .field("address", &format_args!("{:#x}", self.address))
            .field("bytes", &format_args!("[{} bytes]", self.bytes.len()))
            .finish()
    }
}

/// One row of the runtime's memory accounting for a core.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemRow {
    /// Field 1 when present (v4 rows carry only ids; v5+ rows only names).
    pub id: Option<u64>,
    /// The runtime's own name (`pe`, `act table`, …): field 3, or the name at
    /// `id` in the runtime's order.
    pub name: String,
    /// Bytes charged.
    pub bytes: u64,
}

impl MemRow {
    /// The name the profiler shows (`Tensor Instructions`, `Scalar Table`, …);
    /// the runtime's name when it is not in the list.
    pub fn usage_type(&self) -> &str {
        usage_type(&self.name).unwrap_or(&self.name)
    }
}

/// The runtime's memory rows in its own order, with the profiler's names.
pub const MEMORY_ROWS: [(&str, &str); 22] = [
    ("generic", "Generic"),
    ("pe", "Tensor Instructions"),
    ("act", "Scalar Instructions"),
    ("pool", "GpSimd Instructions"),
    ("io", "IO"),
    ("spill", "DRAM Spill"),
    ("weight", "Weights"),
    ("profiler buffers", "Profiler Buffers"),
    ("act table", "Scalar Table"),
    ("dve", "Vector Instructions"),
    ("sp", "Sync Instructions"),
    ("shared scratchpad", "Shared Scratchpad"),
    ("tensor", "Tensors"),
    ("ucode", "Ucode lib"),
    ("pool stdio", "GpSimd STDIO"),
    ("collectives", "Collectives"),
    ("scratchpad", "Scratchpad"),
    ("xt cc", "XT CC (unused)"),
    ("dma rings runtime", "DMA Rings Runtime"),
    ("dma rings spill", "DMA Rings Spill"),
    ("dma rings io", "DMA Rings IO"),
    ("dma rings collectives", "DMA Rings Collectives"),
];

/// Rows in the oldest runtimes (2.23): one `dma rings` row at id 18.
pub(crate) const OLD_ROW_COUNT: usize = 19;
/// The single DMA row of [`OLD_ROW_COUNT`]-row captures.
pub(crate) const OLD_DMA_ROW: (&str, &str) = ("dma rings", "DMA Rings");

/// The profiler's name for a runtime row name.
pub fn usage_type(name: &str) -> Option<&'static str> {
    MEMORY_ROWS
        .iter()
        .chain(std::iter::once(&OLD_DMA_ROW))
        .find(|(n, _)| *n == name)
        .map(|(_, u)| *u)
}

/// The runtime's name of row `id` in a capture with `rows` rows.
pub fn row_name(id: u64, rows: usize) -> Option<&'static str> {
    if rows == OLD_ROW_COUNT && id == 18 {
        return Some(OLD_DMA_ROW.0);
    }
    MEMORY_ROWS.get(usize::try_from(id).ok()?).map(|(n, _)| *n)
}

/// One subgraph as it ran on one physical core.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subgraph<'a> {
    /// `sg00`, `sg01`, …
    pub name: String,
    /// The device index (`nd`).
    pub device: u64,
    /// The physical core (`nc`).
    pub pcore: u64,
    /// Every engine's instruction image.
    pub images: Vec<Image<'a>>,
    /// The runtime's memory accounting for this core, row by row.
    pub memory: Vec<MemRow>,
    /// How long the subgraph ran, in picoseconds, when recorded.
    pub duration_ps: Option<u64>,
}

impl<'a> Subgraph<'a> {
    /// The image of `engine`, if captured.
    pub fn image(&self, engine: EngineType) -> Option<&Image<'a>> {
        self.images.iter().find(|i| i.engine == engine)
    }

    /// The row the runtime calls `name`, if present.
    pub fn row(&self, name: &str) -> Option<&MemRow> {
        self.memory.iter().find(|r| r.name == name)
    }
}

/// A whole capture. Image bytes borrow from the file when read; owned ones
/// are built for writing (or by [`Capture::into_owned`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capture<'a> {
    /// The NTFF version byte (4, 5 or 6).
    pub version: u8,
    /// Field 1: the NEFF's file name as the runtime saw it (v4: `file.neff`).
    pub neff_name: String,
    /// The NEFF's uuid, as far as the capture holds it.
    pub uuid: CaptureUuid,
    /// Field 5 as written: 1 trn1, 2 trn2.
    pub arch_code: u64,
    /// The runtime that loaded it: what picks the line to compare under.
    pub runtime: Option<Version>,
    /// The driver's version.
    pub driver: Option<Version>,
    /// The collectives library's version.
    pub collectives: Option<Version>,
    /// The instance type (`trn1.2xlarge`), when recorded.
    pub instance_type: Option<String>,
    /// Field 17 (v6).
    pub instance_id: Option<String>,
    /// Field 7, Unix seconds (v4).
    pub capture_time: Option<u64>,
    /// What ran, one entry per subgraph.
    pub subgraphs: Vec<Subgraph<'a>>,
}

impl Capture<'_> {
    /// The architecture, when field 5 names one this crate knows.
    pub fn arch(&self) -> Option<Arch> {
        match self.arch_code {
            1 => Some(Arch::Sunda),
            2 => Some(Arch::Cayman),
            _ => None,
        }
    }

    /// The code field 5 uses for `arch`.
    pub fn arch_code_of(arch: Arch) -> u64 {
        match arch {
            Arch::Sunda => 1,
            Arch::Cayman => 2,
            Arch::Mariana => 3,
        }
    }

    /// Detaches the capture from the bytes it was read from.
    pub fn into_owned(self) -> Capture<'static> {
        Capture {
            version: self.version,
            neff_name: self.neff_name,
            uuid: self.uuid,
            arch_code: self.arch_code,
            runtime: self.runtime,
            driver: self.driver,
            collectives: self.collectives,
            instance_type: self.instance_type,
            instance_id: self.instance_id,
            capture_time: self.capture_time,
            subgraphs: self
                .subgraphs
                .into_iter()
                .map(|s| Subgraph {
                    name: s.name,
                    device: s.device,
                    pcore: s.pcore,
                    images: s
                        .images
                        .into_iter()
                        .map(|i| Image {
                            engine: i.engine,
                            address: i.address,
                            bytes: Cow::Owned(i.bytes.into_owned()),
                        })
                        .collect(),
                    memory: s.memory,
                    duration_ps: s.duration_ps,
                })
                .collect(),
        }
    }
}
