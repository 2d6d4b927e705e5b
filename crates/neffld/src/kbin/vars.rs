//! The kbin's variable table (`mem_ref_set`): records indexed by [`VarId`],
//! the scratchpad extents derived from the virtual vars, and the resolution
//! of ADDR8 operands against the table.

use super::isa::{Addr8, ADDR8_DGE_INDEX, ADDR8_STATIC_VAR};
use super::KbinError;
use crate::ids::VarId;
use crate::manifest::def::{Backing, Var, VarKind, Vars};

/// The state-buffer window every architecture exposes (stage.md §6.1); the
/// `state-buffer` var has no `size` of its own.
pub const SB_WINDOW: u64 = 32 << 20;

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
    /// The `dge-table` var (looked up once: every DGE operand needs it).
    dge: Option<VarId>,
    /// Cross-subgraph bindings of `remote` vars, filled after all kbins exist.
    pub remote_bindings: Vec<(VarId, RemoteBinding)>,
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

/// What an ADDR8 operand refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Addr8Target {
    pub var: VarId,
    pub offset: u32,
}

impl VarTable {
    pub fn new(vars: Vars) -> VarTable {
        let dge = vars
            .iter()
            .find(|v| v.kind == VarKind::DgeTable)
            .map(|v| v.id);
        VarTable {
            vars,
            dge,
            remote_bindings: Vec::new(),
        }
    }

    pub fn count(&self, kind: VarKind) -> usize {
        self.iter().filter(|v| v.kind == kind).count()
    }

    /// The size a placement sees: the SB window for the state buffer,
    /// otherwise the declared size (0 if none).
    pub fn extent(&self, v: &Var) -> u64 {
        if v.kind == VarKind::StateBuffer {
            SB_WINDOW
        } else {
            v.size.unwrap_or(0)
        }
    }

    /// The DGE table mode-0x20 ids index: the `dge-table` var with the lowest
    /// var_id (every real subgraph has at most one; our decision for more).
    pub fn dge_table(&self) -> Option<&Var> {
        self.dge.and_then(|id| self.get(id))
    }

    pub fn scratchpad(&self) -> ScratchpadSizes {
        let mut s = ScratchpadSizes::default();
        for v in self.iter().filter(|v| v.kind == VarKind::Virtual) {
            // Overflow was rejected when the var was parsed.
            let end = v
                .backing_offset
                .unwrap_or(0)
                .saturating_add(v.size.unwrap_or(0));
            let slot = match v.backing.unwrap_or(Backing::Local) {
                Backing::Local => &mut s.local,
                Backing::Shared => &mut s.shared,
                Backing::Sharded => &mut s.sharded,
                Backing::Main => &mut s.main,
            };
            *slot = (*slot).max(end);
        }
        s
    }

    /// Resolves an operand of instruction `index` of stream `stream`:
    /// mode 0x10 names a var_id, mode 0x20 an index into the DGE list; the
    /// offset must lie inside the target.
    pub fn resolve_addr8(
        &self,
        a: Addr8,
        stream: &str,
        index: u64,
    ) -> Result<Addr8Target, KbinError> {
        let var_id = match a.mode {
            ADDR8_STATIC_VAR => VarId(u32::from(a.id)),
            ADDR8_DGE_INDEX => {
                let list = self
                    .dge_table()
                    .map(|v| v.list.as_slice())
                    .unwrap_or_default();
                *list
                    .get(usize::from(a.id))
                    .ok_or_else(|| KbinError::Addr8DgeIndex {
                        index: a.id,
                        instr: index,
                        stream: stream.to_string(),
                        len: list.len(),
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
        let size = self.extent(var);
        let offset = u64::from(a.offset);
        // A zero-size var is addressable only at offset 0 (stage.md §6.2).
        if offset >= size && !(offset == 0 && size == 0) {
            return Err(KbinError::Addr8OutOfBounds {
                var: var.name.clone(),
                instr: index,
                stream: stream.to_string(),
                offset,
                size,
            });
        }
        Ok(Addr8Target {
            var: var_id,
            offset: a.offset,
        })
    }
}
