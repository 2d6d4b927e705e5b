//! A NEFF's weights (its `file` variables) as the bytes a load copies to
//! the device, for a client that wants to read them without a device.

use crate::api::LoadError;
use crate::config::RuntimeConfig;
use crate::container::{Archive, Neff};
use crate::manifest::def::VarOf;
use crate::manifest::Blob;
use crate::parse;

/// One weight. It keeps the archive its bytes are in (a shared buffer, not
/// a copy), so its bytes are always its own NEFF's.
#[derive(Clone, Debug)]
pub struct Weight {
    archive: Archive,
    blob: Blob,
    /// The variable name.
    pub name: String,
    /// The subgraph that declares it (the first, when several share it).
    pub subgraph: String,
    /// The archive member it is read from.
    pub file_name: String,
    /// The `.npy` descr (`<f2`); `None` for a raw member.
    pub npy_descr: Option<String>,
    /// The dtype `def.json` gives the variable.
    pub dtype: Option<String>,
    /// The `.npy` shape; a raw member is one dimension of its bytes.
    pub shape: Vec<u64>,
}

impl Weight {
    /// Exactly the bytes the load copies to the device.
    pub fn bytes(&self) -> &[u8] {
        self.blob.bytes(&self.archive)
    }
}

/// Every weight of `neff` once, by first declaration, as a load under
/// `config` reads the manifests.
pub fn weights(neff: &Neff, config: &RuntimeConfig) -> Result<Vec<Weight>, LoadError> {
    let model = parse::parse(neff, &config.parse_options()).map_err(LoadError::pipeline)?;
    let mut out: Vec<Weight> = Vec::new();
    for kbin in &model.kbins {
        for var in kbin.vars().iter() {
            let VarOf::File { size, weight: w } = &var.of else {
                continue;
            };
            if out.iter().any(|o| o.name == var.name) {
                continue;
            }
            // Exactly `size` bytes go to the device (the parse refused
            // shorter payloads).
            let blob = w.payload.sub(0, *size as usize);
            let len = blob.len() as u64;
            out.push(Weight {
                archive: neff.archive().clone(),
                name: var.name.clone(),
                subgraph: kbin.name().to_string(),
                file_name: w.file_name.clone(),
                npy_descr: w.npy_descr.clone(),
                dtype: var.dtype.clone(),
                shape: w.npy_shape.clone().unwrap_or_else(|| vec![len]),
                blob,
            });
        }
    }
    Ok(out)
}
