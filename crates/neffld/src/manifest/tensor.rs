//! The data behind `nrt_get_model_tensor_info`, and the cross-check of the
//! neff.json I/O sizes against the def.json I/O vars.

use crate::dtype::NrtDtype;
use super::neff_json::{IoMaps, IoTensor};
use super::{Manifest, ManifestError, VarKind, VarOf};

/// `nrt_tensor_usage_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TensorUsage {
    /// Bound before an execution.
    Input = 0,
    /// Filled by an execution.
    Output = 1,
}

impl TensorUsage {
    /// "input" or "output", as reports and Python name it.
    pub fn name(self) -> &'static str {
        match self {
            TensorUsage::Input => "input",
            TensorUsage::Output => "output",
        }
    }
}

/// One record of `nrt_tensor_info_array_t`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorInfo {
    /// The tensor's name, what a client binds it by.
    pub name: String,
    /// Input or output.
    pub usage: TensorUsage,
    /// Bytes.
    pub size: u64,
    /// Its element type.
    pub dtype: NrtDtype,
    /// Its dimensions, outermost first.
    pub shape: Vec<u32>,
}

impl TensorInfo {
    fn new(t: &IoTensor, usage: TensorUsage) -> TensorInfo {
        TensorInfo {
            name: t.name.clone(),
            usage,
            size: t.size,
            dtype: t.dtype,
            shape: t.shape.clone(),
        }
    }
}

/// All inputs in byte-wise name order, then all outputs in name order.
pub fn tensor_info(io: &IoMaps) -> Vec<TensorInfo> {
    io.inputs
        .values()
        .map(|t| TensorInfo::new(t, TensorUsage::Input))
        .chain(
            io.outputs
                .values()
                .map(|t| TensorInfo::new(t, TensorUsage::Output)),
        )
        .collect()
}

/// Every def.json `input`/`output` var that shares a name with a neff.json
/// tensor of the same direction must have the same byte size. IO binds by
/// name per subgraph (var_ids differ between subgraphs).
pub fn cross_check(m: &Manifest) -> Result<(), ManifestError> {
    for sg in &m.subgraphs {
        for (map, kind, usage) in [
            (&m.neff_json.io.inputs, VarKind::Input, "input"),
            (&m.neff_json.io.outputs, VarKind::Output, "output"),
        ] {
            for t in map.values() {
                let Some(var) = sg.def.vars.by_name(&t.name) else {
                    continue;
                };
                let var_size = match (&var.of, kind) {
                    (VarOf::Input { size }, VarKind::Input)
                    | (VarOf::Output { size }, VarKind::Output) => *size,
                    _ => continue,
                };
                if var_size != t.size {
                    return Err(ManifestError::IoSizeMismatch {
                        name: t.name.clone(),
                        usage,
                        neff_size: t.size,
                        member: sg.def.member.clone(),
                        var_size,
                    });
                }
            }
        }
    }
    Ok(())
}
