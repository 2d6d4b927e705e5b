//! The kbin's variable table (`mem_ref_set`): records indexed by [`VarId`],
//! the scratchpad extents derived from the virtual vars, and the resolution
//! of ADDR8 operands against the table.

use super::isa::{Addr8, ADDR8_DGE_INDEX, ADDR8_STATIC_VAR};
use super::reloc::Operand;
use super::KbinError;
use crate::ids::VarId;
#[cfg(any(test, feature = "testkit"))]
use crate::manifest::def::VarKind;
use crate::manifest::def::{Backing, VarOf, Vars};

/// Scratchpad need per backing area: `max(backing_variable_off + size)` over
/// the virtual vars of that area, 0 when there are none. Ranges may overlap
/// (aliasing is intentional), so this is an extent, not a sum.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScratchpadSizes {
    pub local: u64,
    pub shared: u64,
    pub sharded: u64,
    pub main: u64,
}

/// Dense var table of one subgraph.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VarTable {
    vars: Vars,
    /// The `dge-table` vars, in var_id order (looked up once: every DGE
    /// operand needs them; exactly one is allowed when one is used).
    dge: Vec<VarId>,
    /// Cross-subgraph bindings of `remote` vars, filled after all kbins exist.
    remote_bindings: Vec<(VarId, RemoteBinding)>,
}

/// The table reads as the manifest's [`Vars`] (lookup by id or name,
/// iteration); what it adds is the DGE lookup and the remote bindings.
impl std::ops::Deref for VarTable {
    type Target = Vars;

    fn deref(&self) -> &Vars {
        &self.vars
    }
}

/// Where a `remote` var points: a subgraph (relative index) and a var_id there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemoteBinding {
    pub rel_sg: u32,
    pub var_id: VarId,
}

/// The largest var_id an IO template pointer can carry (19 bits).
pub const TEMPLATE_MAX_VAR: u32 = (1 << 19) - 1;

impl VarTable {
    pub(super) fn new(vars: Vars) -> VarTable {
        let dge = vars
            .iter()
            .filter(|v| matches!(v.of, VarOf::DgeTable { .. }))
            .map(|v| v.id)
            .collect();
        VarTable {
            vars,
            dge,
            remote_bindings: Vec::new(),
        }
    }

    pub(super) fn set_remote_bindings(&mut self, b: Vec<(VarId, RemoteBinding)>) {
        self.remote_bindings = b;
    }

    /// Where each `remote` var of this subgraph points.
    pub fn remote_bindings(&self) -> &[(VarId, RemoteBinding)] {
        &self.remote_bindings
    }

    #[cfg(any(test, feature = "testkit"))]
    pub fn count(&self, kind: VarKind) -> usize {
        self.iter().filter(|v| v.of.kind() == kind).count()
    }

    /// The var_ids mode-0x20 ids index: the list of the subgraph's one
    /// `dge-table` var (stage.md §8: none or several reject a mode-0x20
    /// operand; every real subgraph has at most one).
    pub fn dge_table(&self) -> Option<&[VarId]> {
        let [one] = self.dge.as_slice() else {
            return None;
        };
        match self.get(*one).map(|v| &v.of) {
            Some(VarOf::DgeTable { items }) => Some(items),
            _ => None,
        }
    }

    pub fn scratchpad(&self) -> ScratchpadSizes {
        let mut s = ScratchpadSizes::default();
        for v in self.iter() {
            let VarOf::Virtual {
                size,
                backing_offset,
                backing,
            } = v.of
            else {
                continue;
            };
            // Overflow was rejected when the var was parsed.
            let end = backing_offset.saturating_add(size);
            let slot = match backing {
                Backing::Local => &mut s.local,
                Backing::Shared => &mut s.shared,
                Backing::Sharded => &mut s.sharded,
                Backing::Main => &mut s.main,
            };
            *slot = (*slot).max(end);
        }
        s
    }

    /// Resolves an operand of instruction `index` of stream `stream`
    /// (stage.md §8): mode 0x10 names a var_id, mode 0x20 an index into the
    /// list of the subgraph's one `dge-table` var. The var must be staged
    /// and `mem_ref_to_addr(var, offset, 1)` must hold (`offset < extent`);
    /// an input or output must fit a template pointer, since execution
    /// binds it.
    pub fn resolve_addr8(&self, a: Addr8, stream: &str, index: u64) -> Result<Operand, KbinError> {
        let var_id = match a.mode {
            ADDR8_STATIC_VAR => VarId(u32::from(a.id)),
            ADDR8_DGE_INDEX => {
                let table = self.dge_table().ok_or_else(|| KbinError::DgeTables {
                    count: self.dge.len(),
                    instr: index,
                    stream: stream.to_string(),
                })?;
                *table
                    .get(usize::from(a.id))
                    .ok_or_else(|| KbinError::Addr8DgeIndex {
                        index: a.id,
                        instr: index,
                        stream: stream.to_string(),
                        len: table.len(),
                    })?
            }
            mode => {
                return Err(KbinError::Addr8Mode {
                    mode,
                    instr: index,
                    stream: stream.to_string(),
                })
            }
        };
        let var = self.get(var_id).ok_or_else(|| KbinError::Addr8VarId {
            var_id: var_id.0,
            instr: index,
            stream: stream.to_string(),
        })?;
        let size = var.extent().ok_or_else(|| KbinError::Addr8NotStaged {
            var: var.name.clone(),
            instr: index,
            stream: stream.to_string(),
        })?;
        let offset = u64::from(a.offset);
        if offset >= size {
            return Err(KbinError::Addr8OutOfBounds {
                var: var.name.clone(),
                instr: index,
                stream: stream.to_string(),
                offset,
                size,
            });
        }
        if matches!(var.of, VarOf::Input { .. } | VarOf::Output { .. })
            && var_id.0 > TEMPLATE_MAX_VAR
        {
            return Err(KbinError::Addr8VarId {
                var_id: var_id.0,
                instr: index,
                stream: stream.to_string(),
            });
        }
        Ok(match a.mode {
            ADDR8_DGE_INDEX => Operand::through_dge(var_id, offset, a.id),
            _ => Operand::new(var_id, offset),
        })
    }
}
