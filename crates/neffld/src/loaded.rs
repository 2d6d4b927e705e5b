//! What the runtime keeps of a parse and of a loaded model: the staged
//! records themselves, which the library's reports read and the front ends
//! never see ([`crate::report`] renders them).

use std::time::Duration;

use crate::cache::{HostBytes, Role};
use crate::container::Neff;
use crate::ids::{HModel, LCore};
use crate::kbin::collective::CollectiveInfo;
use crate::manifest::TensorInfo;
use crate::parse::ParsedModel;
use crate::registry::NameEntry;
use crate::stage::CoreImage;

/// Wall time of each stage of one load. A load that reused a cached parse
/// reports zero container and parse time (and its wait in `cache_wait`).
/// Relocation runs inside each core's build, so `relocate` is the summed
/// relocation time of all cores and is contained in `stage`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timings {
    /// S0: guard, preflight, LNC gate, logical-core claim.
    pub guard: Duration,
    /// S1: header gates, integrity, inflate, tar walk.
    pub container: Duration,
    /// S2+S3: manifests and KBIN build.
    pub parse: Duration,
    /// Fingerprinting the buffer and waiting for another loader's parse.
    pub cache_wait: Duration,
    /// S4 (with S5 inside): plan, per-core builds, fan-out.
    pub stage: Duration,
    /// S5: instruction lowering and ring building, summed over cores.
    pub relocate: Duration,
}

/// What a parse produces and concurrent loads of the same NEFF share.
#[derive(Debug)]
pub struct Parsed {
    pub neff: Neff,
    pub model: ParsedModel,
}

impl HostBytes for Parsed {
    /// The inflated payload: the parse borrows from it and owns little else.
    fn host_bytes(&self) -> u64 {
        self.neff.archive().decoded_len() as u64
    }
}

/// What the registry keeps for each loaded model.
#[derive(Debug)]
pub struct LoadedModel {
    pub name: String,
    pub uuid: [u8; 16],
    /// The logical core of the instance the model claims.
    pub vnc: LCore,
    /// The device (`ND n`) its cores are on.
    pub device: u32,
    pub tensors: std::sync::Arc<[TensorInfo]>,
    /// The NEFF's collectives (shared with its parse).
    pub collectives: std::sync::Arc<[CollectiveInfo]>,
    /// The rank and world of a collectives load.
    pub join: Option<crate::comm::Join>,
    pub h_model: HModel,
    /// `HloMacCount` of `hlo_stats.json` (0 when absent).
    #[cfg(any(test, feature = "testkit"))]
    pub mac_count: u64,
    /// One staged subgraph per physical core.
    pub cores: Vec<CoreImage>,
    /// Parse and staging warnings.
    pub warnings: Vec<String>,
    /// How this load met the parse cache.
    // Only the tests read it. A cfg gate would not serve: the cache's
    // roles would be left unconstructed and its rendezvous unobserved.
    #[cfg_attr(not(any(test, feature = "testkit")), allow(dead_code))]
    pub cache_role: Role,
    /// Where the load's time went.
    pub timings: Timings,
    /// The model's entry in the runtime's [`ModelNames`].
    pub(crate) _name: NameEntry,
}

