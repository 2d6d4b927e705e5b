//! The parse side in one call: S2 (manifests) then S3 (kbins), over a
//! container S1 already opened. Lives above both layers so that neither
//! imports the other in the wrong direction.

use thiserror::Error;

use crate::container::Neff;
use crate::kbin::collective::CollectiveInfo;
use crate::kbin::{self, Kbin, KbinError};
pub use crate::manifest::ParseOptions;
use crate::manifest::{self, kelf, neff_json, IoMaps, Manifest, ManifestError, TensorInfo};
use crate::{Arch, NrtStatus};

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ParseError {
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error(transparent)]
    Kbin(#[from] KbinError),
}

impl ParseError {
    pub fn status(&self) -> NrtStatus {
        match self {
            ParseError::Manifest(e) => e.status(),
            ParseError::Kbin(e) => e.status(),
        }
    }
}

/// A parsed model: the manifests and one kbin per subgraph. Blobs are ranges
/// into the archive of the [`Neff`] it was parsed from.
#[derive(Clone, Debug, PartialEq)]
pub struct ParsedModel {
    pub manifest: Manifest,
    pub kbins: Vec<Kbin>,
    /// [`ParsedModel::tensor_info`], made once: every load of the parse
    /// shares it.
    tensors: std::sync::Arc<[TensorInfo]>,
    /// [`ParsedModel::collectives`], made once.
    collectives: std::sync::Arc<[CollectiveInfo]>,
}

impl ParsedModel {
    pub fn io(&self) -> &IoMaps {
        self.manifest.io()
    }

    /// What `nrt_get_model_tensor_info` reports: inputs then outputs, each in name order.
    pub fn tensor_info(&self) -> std::sync::Arc<[TensorInfo]> {
        self.tensors.clone()
    }

    /// Every collective of the subgraphs, as reports list them.
    pub fn collectives(&self) -> std::sync::Arc<[CollectiveInfo]> {
        self.collectives.clone()
    }

    pub fn warnings(&self) -> &[String] {
        &self.manifest.warnings
    }
}

/// Runs S2 and S3.
pub fn parse(neff: &Neff, opts: &ParseOptions) -> Result<ParsedModel, ParseError> {
    let manifest = manifest::parse(neff, opts)?;
    let kbins = kbin::build(&manifest, neff.archive())?;
    let tensors = manifest::tensor::tensor_info(manifest.io()).into();
    let collectives = CollectiveInfo::of(&kbins).into();
    Ok(ParsedModel {
        manifest,
        kbins,
        tensors,
        collectives,
    })
}

/// The architecture the NEFF was compiled for, read through its own
/// manifest chain (`neff.json` → kelf json `target`, nothing else of the
/// kelf json: [`kelf::declared_target`]), so tools can pick a matching
/// device before the arch gate runs; `None` if the chain is broken (a parse
/// will then say why).
pub fn declared_arch(neff: &Neff) -> Option<Arch> {
    let nj = neff_json::parse(neff.archive(), &neff.header().name_str()).ok()?;
    let bytes = neff.archive().get(&nj.kelf_member)?;
    kelf::declared_target(&nj.kelf_member, bytes, Arch::Cayman)
}
