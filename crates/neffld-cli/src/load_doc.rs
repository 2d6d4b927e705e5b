//! The document of `neffld load` (docs/cli.md): typed, serialised for
//! `--json`, and read field by field by the human report (`load_cmd`) and
//! the HTML map (`map`), which therefore both import it and not each other.

use neffld::report::staged::StagedRing;
use neffld::report::{Collective, EngineType, StagedView};
use neffld::LineProvenance;
use serde::Serialize;

use crate::memory::MemoryDoc;
use crate::report::{ErrorObject, Stamp};

/// One variable where the load put it.
#[derive(Serialize)]
pub struct VariableDoc {
    pub var_id: u32,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub placement: &'static str,
    pub address: Option<u64>,
    pub size: Option<u64>,
}

/// What relocation did to one image's records.
#[derive(Serialize)]
pub struct PatchesDoc {
    pub insert: u32,
    pub modify: u32,
    pub delete: u32,
}

/// One engine's instruction image.
#[derive(Serialize)]
pub struct ImageDoc {
    pub engine: &'static str,
    pub address: u64,
    pub bytes: usize,
    pub neff_records: u32,
    pub device_slots: u64,
    pub patches: PatchesDoc,
    pub absolute_operands: u32,
    pub io_templates: u32,
    pub exact: bool,
    pub filler_slots: u32,
    pub approximate_records: usize,
}

/// One table copied to the device.
#[derive(Serialize)]
pub struct TableDoc {
    pub table: String,
    pub address: u64,
    pub bytes: u64,
}

/// One memory row of a core, as the load's runtime lists it.
#[derive(Serialize)]
pub struct RowDoc {
    pub usage_type: String,
    pub bytes: u64,
    pub runtime: u64,
    pub model: u64,
}

/// Everything the report shows about one physical core.
#[derive(Serialize)]
pub struct CoreDoc {
    pub pcore: u32,
    pub hbm: u32,
    pub subgraph: String,
    pub scratchpad_pages: u32,
    pub instructions: u64,
    pub descriptors: u64,
    pub templates: u64,
    pub variables: Vec<VariableDoc>,
    pub images: Vec<ImageDoc>,
    pub rings: Vec<StagedRing>,
    pub tables: Vec<TableDoc>,
    pub memory_rows: Vec<RowDoc>,
}

/// The loaded model.
#[derive(Serialize)]
pub struct ModelDoc {
    pub name: String,
    pub uuid: String,
    /// The logical core as the runtime numbers it: among the visible ones.
    pub vnc: u32,
    /// The same core as the device numbers it (`vnc` unless
    /// `NEURON_RT_VISIBLE_CORES` starts past 0).
    pub instance_vnc: u32,
    pub pcores: Vec<u32>,
}

/// Each stage's time, in microseconds.
#[derive(Serialize)]
pub struct TimingsDoc {
    pub guard: u64,
    pub container: u64,
    pub parse: u64,
    pub cache_wait: u64,
    pub stage: u64,
    pub relocate: u64,
    pub unload: u64,
    pub total: u64,
}

/// What the load does not hold: its input and output tensors, bound at
/// execute, measured as `plan` charges them after a load.
#[derive(Serialize)]
pub struct IoDoc {
    /// Input and output tensors with bytes.
    pub count: usize,
    /// Their sizes summed.
    pub bytes: u64,
    /// Whether they fit beside the load.
    pub fits: bool,
    /// Each HBM the load uses, with them allocated (empty when they do
    /// not fit).
    pub hbm: Vec<IoHbmDoc>,
    /// The refusal, when they do not fit.
    pub error: Option<ErrorObject>,
}

/// One HBM with the load and its input and output tensors.
#[derive(Serialize)]
pub struct IoHbmDoc {
    pub device: u32,
    pub hbm: u32,
    pub used: u64,
    pub free: u64,
}

/// One IO tensor as `nrt_get_model_tensor_info` reports it.
#[derive(Serialize)]
pub struct TensorDoc {
    pub name: String,
    pub usage: &'static str,
    pub size: u64,
    pub dtype: &'static str,
    pub dtype_code: u32,
    pub shape: Vec<u32>,
}

/// One collective of the loaded NEFF, and where the record it became
/// (its doorbell) sits on the device.
#[derive(Serialize)]
pub struct CollectiveDoc {
    #[serde(flatten)]
    pub collective: Collective,
    /// The device address of its lowered record, as the runtime writes
    /// addresses.
    pub record_address: Option<u64>,
}

/// The collectives of a load, each with the address of its record in the
/// staged image of its subgraph's core.
pub fn collective_docs(list: &[Collective], view: &StagedView) -> Vec<CollectiveDoc> {
    list.iter()
        .map(|c| {
            let engine = EngineType::from_key(c.engine);
            let record_address = view
                .cores
                .iter()
                .find(|core| core.subgraph == c.subgraph)
                .and_then(|core| core.image(engine?))
                .and_then(|img| img.record_address(c.index));
            CollectiveDoc {
                collective: c.clone(),
                record_address,
            }
        })
        .collect()
}

/// The document of `neffld load` (docs/cli.md): what the load ran on, what
/// it placed (when it loaded) and the memory, loaded or not.
#[derive(Serialize)]
pub struct LoadDoc {
    pub file: String,
    pub size: usize,
    pub device: &'static str,
    pub arch: &'static str,
    pub runtime: String,
    pub runtime_provenance: LineProvenance,
    /// What the runtime takes at start beyond its line's carried captured
    /// rows, and why ([`neffld::config::RuntimeConfig::start_notes`]).
    pub notes: Vec<String>,
    pub checked: bool,
    pub device_cores: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub h_nn: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timings_us: Option<TimingsDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tensors: Option<Vec<TensorDoc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub io_tensors: Option<IoDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cores: Option<Vec<CoreDoc>>,
    /// The NEFF's collectives (when it loaded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collectives: Option<Vec<CollectiveDoc>>,
    /// What the memory report leaves out for them, when there are any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collectives_memory: Option<String>,
    pub memory: MemoryDoc,
    #[serde(flatten)]
    pub stamp: Stamp,
}

impl LoadDoc {
    /// The cores the load placed (none when it failed).
    pub fn cores(&self) -> &[CoreDoc] {
        self.cores.as_deref().unwrap_or_default()
    }
}

/// Everything the report shows about each core: the library's staged view.
pub fn core_docs(view: &StagedView) -> Vec<CoreDoc> {
    view.cores
        .iter()
        .map(|c| CoreDoc {
            pcore: c.pcore,
            hbm: c.hbm,
            subgraph: c.subgraph.clone(),
            scratchpad_pages: c.scratchpad_pages,
            instructions: c.instruction_slots(),
            descriptors: c.descriptors(),
            templates: c.io_templates(),
            variables: c
                .variables
                .iter()
                .map(|v| VariableDoc {
                    var_id: v.var_id,
                    name: v.name.clone(),
                    kind: v.kind,
                    placement: v.placement,
                    address: v.address,
                    size: v.size,
                })
                .collect(),
            images: c
                .images
                .iter()
                .map(|i| ImageDoc {
                    engine: i.engine.key(),
                    address: i.address,
                    bytes: i.bytes.len(),
                    neff_records: i.neff_records(),
                    device_slots: i.slots(),
                    patches: PatchesDoc {
                        insert: i.patches.insert,
                        modify: i.patches.modify,
                        delete: i.patches.delete,
                    },
                    absolute_operands: i.absolute_operands,
                    io_templates: i.io_templates,
                    exact: i.exact(),
                    filler_slots: i.filler_slots(),
                    approximate_records: i.approximate.len(),
                })
                .collect(),
            rings: c.rings.clone(),
            tables: c
                .tables
                .iter()
                .map(|t| TableDoc {
                    table: t.what.clone(),
                    address: t.address,
                    bytes: t.bytes,
                })
                .collect(),
            memory_rows: c
                .memory
                .iter()
                .map(|r| RowDoc {
                    usage_type: r.usage_type.clone(),
                    bytes: r.bytes,
                    runtime: r.runtime,
                    model: r.model,
                })
                .collect(),
        })
        .collect()
}
