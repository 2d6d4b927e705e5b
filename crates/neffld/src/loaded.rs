//! What the runtime keeps of a parse and of a loaded model: the staged
//! records themselves, which the library's reports read and the front ends
//! never see ([`crate::report`] renders them).

use crate::api::Timings;
use crate::cache::{Role, HostBytes};
use crate::container::Neff;
use crate::ids::{HModel, LCore};
use crate::manifest::TensorInfo;
use crate::parse::ParsedModel;
use crate::registry::NameEntry;
use crate::stage::CoreImage;

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
    pub tensors: Vec<TensorInfo>,
    pub gid: Option<u32>,
    pub h_model: HModel,
    /// `HloMacCount` of `hlo_stats.json` (0 when absent).
    pub mac_count: u64,
    /// One staged subgraph per physical core.
    pub cores: Vec<CoreImage>,
    /// Parse and staging warnings.
    pub warnings: Vec<String>,
    /// How this load met the parse cache.
    pub cache_role: Role,
    /// Where the load's time went.
    pub timings: Timings,
    /// Per-model parameters from the configuration (`kbl_model_param_t`).
    pub exec_timeout_s: u32,
    /// The model's entry in the runtime's [`ModelNames`].
    pub(crate) _name: NameEntry,
}

