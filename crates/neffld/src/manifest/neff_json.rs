//! Tier 1: `neff.json` (fallback `kelp.json`) → the I/O maps and the name of
//! the kelf member (parse.md §5.1).

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Deserialize;

use crate::dtype::NrtDtype;
use super::json::{self, brief, RawValue};
use super::ManifestError;
use crate::container::Archive;

/// At most this many dimensions fit the runtime's `io_node_info_t`.
pub const MAX_IO_DIMS: usize = 32;

/// One input or output tensor as neff.json declares it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IoTensor {
    /// The tensor's name.
    pub name: String,
    /// The `dltype` string as written.
    pub dtype_name: String,
    /// The runtime's type for it (`Unknown` for a name it does not know).
    pub dtype: NrtDtype,
    /// Its dimensions, outermost first.
    pub shape: Vec<u32>,
    /// `product(shape) × elem_size`, bytes.
    pub size: u64,
}

/// The I/O maps: keyed by name (byte order, the order
/// `nrt_get_model_tensor_info` reports) plus the declaration order tooling
/// wants (`arg_nodes` for inputs, `heads` for outputs, duplicates dropped).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IoMaps {
    pub inputs: BTreeMap<String, IoTensor>,
    pub outputs: BTreeMap<String, IoTensor>,
    pub input_order: Vec<String>,
    pub output_order: Vec<String>,
}

/// What tier 1 yields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NeffJson {
    /// `neff.json` or `kelp.json`.
    pub member: String,
    pub io: IoMaps,
    /// The member named by the `__kelf` node's `attrs.kelf`.
    pub kelf_member: String,
    /// Non-fatal findings (unknown dtype, differing duplicate outputs).
    pub warnings: Vec<String>,
}

#[derive(Deserialize)]
struct RawNeffJson<'a> {
    #[serde(borrow)]
    nodes: Option<Vec<RawNode<'a>>>,
    arg_nodes: Option<Vec<u64>>,
    heads: Option<Vec<Vec<u64>>>,
    node_row_ptr: Option<Vec<u64>>,
    #[serde(borrow)]
    attrs: Option<RawAttrs<'a>>,
}

#[derive(Deserialize)]
struct RawNode<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    output_names: Option<Vec<Cow<'a, str>>>,
    #[serde(borrow, default)]
    attrs: Option<RawNodeAttrs<'a>>,
}

#[derive(Deserialize)]
struct RawNodeAttrs<'a> {
    #[serde(borrow)]
    func_name: Option<&'a RawValue>,
    #[serde(borrow)]
    kelf: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct RawAttrs<'a> {
    #[serde(borrow)]
    dltype: Option<&'a RawValue>,
    #[serde(borrow)]
    shape: Option<&'a RawValue>,
}

/// Finds and parses tier 1.
pub fn parse(archive: &Archive, neff_name: &str) -> Result<NeffJson, ManifestError> {
    let (member, bytes) = ["neff.json", "kelp.json"]
        .iter()
        .find_map(|m| archive.get(m).map(|b| (*m, b)))
        .ok_or_else(|| ManifestError::NeffJsonMissing {
            name: neff_name.to_string(),
        })?;
    parse_bytes(member, bytes)
}

/// Parses the body of a tier-1 member.
pub fn parse_bytes(member: &str, bytes: &[u8]) -> Result<NeffJson, ManifestError> {
    let raw: RawNeffJson = json::parse(member, bytes)?;
    let missing = |key| ManifestError::NeffJsonMissingField {
        member: member.to_string(),
        key,
    };
    let nodes = raw.nodes.ok_or_else(|| missing("nodes"))?;
    let arg_nodes = raw.arg_nodes.ok_or_else(|| missing("arg_nodes"))?;
    let heads = raw.heads.ok_or_else(|| missing("heads"))?;
    let row_ptr = raw.node_row_ptr.ok_or_else(|| missing("node_row_ptr"))?;
    let attrs = raw.attrs.ok_or_else(|| missing("attrs"))?;
    let (Some(dltype), Some(shape)) = (attrs.dltype, attrs.shape) else {
        return Err(ManifestError::MissingDltypeOrShape {
            member: member.to_string(),
        });
    };
    let dltypes = attr_list(member, "dltype", dltype)?;
    let shapes = attr_list(member, "shape", shape)?;

    let mut warnings = Vec::new();
    let mut io = IoMaps::default();
    let node_at = |index: u64| -> Result<&RawNode, ManifestError> {
        usize::try_from(index)
            .ok()
            .and_then(|i| nodes.get(i))
            .ok_or(ManifestError::NodeIndexOutOfBounds {
                member: member.to_string(),
                index,
                what: "nodes",
                len: nodes.len(),
            })
    };
    let row_at = |index: u64| -> Result<u64, ManifestError> {
        usize::try_from(index)
            .ok()
            .and_then(|i| row_ptr.get(i).copied())
            .ok_or(ManifestError::NodeIndexOutOfBounds {
                member: member.to_string(),
                index,
                what: "node_row_ptr",
                len: row_ptr.len(),
            })
    };

    for &idx in &arg_nodes {
        let node = node_at(idx)?;
        let eid = row_at(idx)?;
        let name = node.name.as_deref().unwrap_or_default().to_string();
        let t = tensor(member, &name, eid, &dltypes, &shapes, &mut warnings)?;
        insert(&mut io.inputs, &mut io.input_order, t, &mut warnings);
    }

    for (hi, head) in heads.iter().enumerate() {
        let invalid = |detail: String| ManifestError::InvalidHead {
            member: member.to_string(),
            index: hi,
            detail,
        };
        let (&node_id, &out_idx) = match head.as_slice() {
            [n, o, ..] => (n, o),
            _ => {
                return Err(invalid(format!(
                    "expected [node_id, out_idx, version], found {} element(s)",
                    head.len()
                )))
            }
        };
        let node = usize::try_from(node_id)
            .ok()
            .and_then(|i| nodes.get(i))
            .ok_or(ManifestError::OutputNodeOutOfBounds {
                member: member.to_string(),
                node: node_id,
                len: nodes.len(),
            })?;
        let names = node.output_names.as_deref().unwrap_or_default();
        let name = usize::try_from(out_idx)
            .ok()
            .and_then(|i| names.get(i))
            .ok_or_else(|| {
                invalid(format!(
                    "out_idx {out_idx} but node {node_id} has {} output_names",
                    names.len()
                ))
            })?
            .to_string();
        let eid = row_at(node_id)?
            .checked_add(out_idx)
            .ok_or_else(|| invalid("entry id overflows".into()))?;
        let t = tensor(member, &name, eid, &dltypes, &shapes, &mut warnings)?;
        insert(&mut io.outputs, &mut io.output_order, t, &mut warnings);
    }

    let kelf_member = find_kelf(member, &nodes)?;
    Ok(NeffJson {
        member: member.to_string(),
        io,
        kelf_member,
        warnings,
    })
}

/// `["list_str", [...]]` → the inner list, each element as its text.
fn attr_list<'v>(
    member: &str,
    what: &'static str,
    v: &'v RawValue,
) -> Result<Vec<&'v RawValue>, ManifestError> {
    json::elements(v)
        .and_then(|outer| outer.get(1).copied())
        .and_then(json::elements)
        .ok_or_else(|| ManifestError::InvalidAttrFormat {
            member: member.to_string(),
            what,
            found: brief(v),
        })
}

fn tensor(
    member: &str,
    name: &str,
    eid: u64,
    dltypes: &[&RawValue],
    shapes: &[&RawValue],
    warnings: &mut Vec<String>,
) -> Result<IoTensor, ManifestError> {
    let oob = |len: usize| ManifestError::EidOutOfBounds {
        member: member.to_string(),
        eid,
        len,
    };
    let i = usize::try_from(eid).map_err(|_| oob(dltypes.len()))?;
    let dt = dltypes.get(i).ok_or_else(|| oob(dltypes.len()))?;
    let sh = shapes.get(i).ok_or_else(|| oob(shapes.len()))?;
    let invalid = |detail: String| ManifestError::InvalidShape {
        name: name.to_string(),
        detail,
    };
    let dtype_name = json::string(dt).map_err(|found| ManifestError::InvalidAttrFormat {
        member: member.to_string(),
        what: "dltype",
        found,
    })?;
    let dtype = NrtDtype::from_io_str(&dtype_name).unwrap_or_else(|| {
        warnings.push(format!(
            "Unknown dtype: {dtype_name}, defaulting to UNKNOWN (tensor {name})"
        ));
        NrtDtype::Unknown
    });
    let dims = json::elements(sh).ok_or_else(|| {
        invalid(format!(
            "expected an array of dimensions, found {}",
            brief(sh)
        ))
    })?;
    if dims.len() > MAX_IO_DIMS {
        return Err(ManifestError::TooManyDims {
            name: name.to_string(),
            ndim: dims.len(),
        });
    }
    let mut shape = Vec::with_capacity(dims.len());
    let mut elems: u64 = 1;
    for d in dims {
        let v = json::as_u64(d)
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| {
                invalid(format!(
                    "dimension {} is not an integer in 0..=4294967295",
                    brief(d)
                ))
            })?;
        shape.push(v);
        elems = elems
            .checked_mul(u64::from(v))
            .ok_or_else(|| invalid("element count overflows u64".into()))?;
    }
    let size = elems
        .checked_mul(dtype.elem_size())
        .ok_or_else(|| invalid("byte size overflows u64".into()))?;
    Ok(IoTensor {
        name: name.to_string(),
        dtype_name,
        dtype,
        shape,
        size,
    })
}

/// Duplicate names collapse: the first entry wins; a differing later one is
/// a warning (real files list one output per physical core under one name).
fn insert(
    map: &mut BTreeMap<String, IoTensor>,
    order: &mut Vec<String>,
    t: IoTensor,
    warnings: &mut Vec<String>,
) {
    match map.get(&t.name) {
        Some(first) => {
            if first.dtype_name != t.dtype_name || first.shape != t.shape {
                warnings.push(format!(
                    "tensor {} is declared twice with different dtype/shape ({} {:?} vs {} {:?}); keeping the first",
                    t.name, first.dtype_name, first.shape, t.dtype_name, t.shape
                ));
            }
        }
        None => {
            order.push(t.name.clone());
            map.insert(t.name.clone(), t);
        }
    }
}

fn find_kelf(member: &str, nodes: &[RawNode]) -> Result<String, ManifestError> {
    let node = nodes
        .iter()
        .find(|n| {
            n.attrs
                .as_ref()
                .and_then(|a| a.func_name)
                .and_then(json::as_string)
                .as_deref()
                == Some("__kelf")
        })
        .ok_or_else(|| ManifestError::NoKelfNode {
            member: member.to_string(),
        })?;
    let node_name = node.name.as_deref().unwrap_or_default().to_string();
    match node.attrs.as_ref().and_then(|a| a.kelf).map(json::string) {
        None => Err(ManifestError::KelfAttrMissing {
            member: member.to_string(),
            node: node_name,
        }),
        Some(Ok(s)) => {
            tracing::debug!("Found KELF node: {s}");
            Ok(s)
        }
        Some(Err(found)) => Err(ManifestError::KelfAttrNotString {
            member: member.to_string(),
            node: node_name,
            found,
        }),
    }
}
