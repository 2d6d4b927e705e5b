//! S2: the manifest chain — `neff.json` → kelf json → per-subgraph `def.json`
//! → engine json and blobs (parse.md §5, §6). Knows nothing of devices.
//!
//! Manifests are deserialised into typed structs; blobs (instruction
//! streams, tables, weights) are never copied: a [`Blob`] is the byte range
//! of a member inside the archive's decoded buffer.

pub mod def;
pub mod engine;
mod engine_type;
mod error;
pub mod json;
pub mod kelf;
pub mod neff_json;
pub mod npy;
pub mod tensor;

use std::ops::Range;

pub use def::{Def, VarKind, VarOf};
pub use crate::dtype::NrtDtype;
#[cfg(any(test, feature = "testkit"))]
pub use engine::EngineType;
pub use engine::Engines;
pub use error::ManifestError;
pub use kelf::{GraphRef, Kelf};
pub use neff_json::{IoMaps, IoTensor, NeffJson};
pub use tensor::{TensorInfo, TensorUsage};

use crate::container::archive::ArchiveId;
use crate::container::{Archive, Neff};
use crate::arch::Chip;
use crate::Arch;

/// What the caller loads for. Options come from the caller (the API layer
/// reads `NEURON_RT_*`); the library core never reads the environment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseOptions {
    /// The chip the NEFF is loaded on (its architecture, and how advice
    /// names it).
    pub chip: Chip,
    /// `NEURON_RT_ALLOW_LEGACY_NEFF=1`: accept a foreign-arch NEFF and a
    /// Cayman NEFF without the EVTACCEL reservation, with a warning.
    pub allow_legacy_neff: bool,
    /// The runtime's logical-core size (`NEURON_LOGICAL_NC_CONFIG`).
    pub runtime_lnc: u32,
}

impl ParseOptions {
    pub fn new(instance_arch: Arch, runtime_lnc: u32) -> ParseOptions {
        ParseOptions {
            chip: Chip::of(instance_arch),
            allow_legacy_neff: false,
            runtime_lnc,
        }
    }
}

/// A zero-copy view of (part of) an archive member: its name and the byte
/// range inside [`Archive::decoded`] of the archive it was made from, and
/// only that one ([`ArchiveId`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Blob {
    pub member: String,
    pub range: Range<usize>,
    archive: ArchiveId,
}

impl Blob {
    /// The whole member, if the archive has it.
    pub fn of(archive: &Archive, name: &str) -> Option<Blob> {
        archive.member(name).map(|m| Blob {
            member: m.name.clone(),
            range: m.range.clone(),
            archive: archive.id(),
        })
    }

    /// The bytes `[start, end)` of this blob (clamped to it).
    pub fn sub(&self, start: usize, end: usize) -> Blob {
        let s = self.range.start.saturating_add(start).min(self.range.end);
        let e = self
            .range
            .start
            .saturating_add(end)
            .clamp(s, self.range.end);
        Blob {
            member: self.member.clone(),
            range: s..e,
            archive: self.archive,
        }
    }

    pub fn len(&self) -> usize {
        self.range.len()
    }

    #[cfg(any(test, feature = "testkit"))]
    pub fn is_empty(&self) -> bool {
        self.range.is_empty()
    }

    /// The bytes, borrowed from the archive this blob was made from.
    ///
    /// # Panics
    /// When `archive` is another one: its bytes at this range are not the
    /// member's, and no input can make that happen, only a caller's mistake.
    pub fn bytes<'a>(&self, archive: &'a Archive) -> &'a [u8] {
        assert_eq!(
            archive.id(),
            self.archive,
            "{} read through an archive it is not from",
            self.member
        );
        &archive.decoded()[self.range.clone()]
    }
}

/// One subgraph's manifests.
#[derive(Clone, Debug, PartialEq)]
pub struct Subgraph {
    pub graph: GraphRef,
    pub def: Def,
    pub engines: Engines,
}

/// The whole manifest chain of a NEFF.
#[derive(Clone, Debug, PartialEq)]
pub struct Manifest {
    pub neff_json: NeffJson,
    pub kelf: Kelf,
    pub subgraphs: Vec<Subgraph>,
    /// Every non-fatal finding, in order (also logged).
    pub warnings: Vec<String>,
}

impl Manifest {
    pub fn io(&self) -> &IoMaps {
        &self.neff_json.io
    }
}

/// The one rule on the number of subgraphs (parse.md §7.5; stage.md §5.3):
/// they fill one logical core, `nkbin == 1` (on core 0 of it) or
/// `nkbin == lnc` (one per physical core) — which also gives
/// `ceil(nkbin / lnc) == 1` and `nkbin <= cores`. Checked here, on the kelf
/// list and before any subgraph is read, so that a list of 10^5 graphs
/// costs nothing; nothing later checks it again.
pub fn check_subgraph_count(count: usize, lnc: u32) -> Result<(), ManifestError> {
    if count == 0 || (count != 1 && count as u64 != u64::from(lnc)) {
        return Err(ManifestError::SubgraphCount { count, lnc });
    }
    Ok(())
}

/// Runs S2 over an opened container.
pub fn parse(neff: &Neff, opts: &ParseOptions) -> Result<Manifest, ManifestError> {
    parse_archive(neff.archive(), &neff.header().name_str(), opts)
}

/// Runs S2 over an archive; `neff_name` only appears in messages.
pub fn parse_archive(
    archive: &Archive,
    neff_name: &str,
    opts: &ParseOptions,
) -> Result<Manifest, ManifestError> {
    let neff_json = neff_json::parse(archive, neff_name)?;
    let mut warnings = neff_json.warnings.clone();
    let kelf = kelf::parse(archive, &neff_json.kelf_member, opts)?;
    warnings.extend(kelf.warnings.iter().cloned());
    check_subgraph_count(kelf.graphs.len(), opts.runtime_lnc)?;
    let mut subgraphs = Vec::with_capacity(kelf.graphs.len());
    for graph in &kelf.graphs {
        let def = def::parse(archive, graph, kelf.target, opts.allow_legacy_neff)?;
        warnings.extend(def.warnings.iter().cloned());
        let engines = engine::parse(archive, graph, &def)?;
        warnings.extend(engines.warnings.iter().cloned());
        subgraphs.push(Subgraph {
            graph: graph.clone(),
            def,
            engines,
        });
    }
    let manifest = Manifest {
        neff_json,
        kelf,
        subgraphs,
        warnings,
    };
    tensor::cross_check(&manifest)?;
    for w in &manifest.warnings {
        tracing::warn!("{w}");
    }
    Ok(manifest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container::writer::{tar_of, TarEntry};

    fn archive(body: &[u8]) -> Archive {
        Archive::from_tar(tar_of(&[TarEntry::file("sg00/w.bin", body)])).unwrap()
    }

    /// Two archives of the same layout hold the member at the same range, so
    /// only the blob's archive id tells them apart.
    #[test]
    #[should_panic(expected = "sg00/w.bin read through an archive it is not from")]
    fn a_blob_reads_only_its_own_archive() {
        let (a, b) = (archive(b"first"), archive(b"other"));
        let blob = Blob::of(&a, "sg00/w.bin").unwrap();
        assert_eq!(blob.bytes(&a), b"first");
        assert_eq!(blob.sub(1, 3).bytes(&a), b"ir");
        assert_eq!(blob.range, Blob::of(&b, "sg00/w.bin").unwrap().range);
        let _ = blob.bytes(&b);
    }
}
