//! The staged-model check (`--check`, `NEFFLD_CHECK`): every address a load
//! baked into device memory is where the NEFF says it must be.
//!
//! The expectations come from the sealed [`Kbin`] — its resolved
//! relocations and its rings — and from the memory plan, never from the
//! bookkeeping the patcher kept while it wrote, and the words checked are
//! read back from the device (from the image the build wrote when the
//! device keeps no bytes). So a relocation that lands anywhere but where it
//! should — in a neighbouring variable, another ring, a stale address — is
//! found, whichever code wrote it:
//! * every `0xD4` operand is the address of the variable its relocation
//!   names, at the named offset, in the runtime's form, inside that variable's allocation (or, for
//!   an input or output, the template naming that variable and offset — or,
//!   when the NEFF named it by a `dge-table` row, that row and offset as
//!   the NEFF wrote them, which the runtime leaves for execution);
//! * every `0xC1` trigger became the register write that starts its own
//!   block: its queue's registers in the core's DMA window, and the
//!   block's sealed per-ring counts;
//! * every descriptor of a block points into a variable one of the block's
//!   descriptors names on that side (or the ring's own padding slot), and
//!   every template in a ring names an input or output of the subgraph.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::device::address::{device_address, simulated_address};
use crate::device::{Device, Geometry, LiveAlloc, MemHandle};
use crate::fallible;
use crate::ids::VarId;
use crate::kbin::isa::{Addr8, ADDR8_DGE_INDEX, D4_DST, D4_SRC};
use crate::kbin::collective::GidDest;
use crate::kbin::{BlockRef, CcLowering, EngineProgram, Kbin, Lowering, Operand};
use crate::line::{regs, DmaWindow, Record};
use crate::manifest::def::VarOf;
use crate::relocate::collective as cc;
use crate::relocate::dma::{decode_template, Descriptor, DESC_BYTES};
use crate::relocate::ipmap::Section;

use super::core::{CoreImage, PlacedImage, PlacedRing};
use super::plan::{CorePlan, Placement};

/// One problem found in a staged model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The subgraph it is in.
    pub subgraph: String,
    /// What is wrong, and where.
    pub what: String,
}

/// Bytes of a staged object as the device holds them; the build's own
/// bytes when the device keeps none, or when the host cannot hold a second
/// copy to read them into (a ring may be hundreds of megabytes).
fn device_bytes<'w>(dev: &Device, handle: MemHandle, written: &'w [u8]) -> Cow<'w, [u8]> {
    let Ok(mut buf) = fallible::with_capacity(written.len(), "a staged object read back") else {
        return Cow::Borrowed(written);
    };
    buf.resize(written.len(), 0);
    match dev.read(handle, 0, &mut buf) {
        Ok(()) => Cow::Owned(buf),
        Err(_) => Cow::Borrowed(written),
    }
}

fn word(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

/// What the check of one subgraph on its core knows.
struct Core<'a> {
    geometry: &'a Geometry,
    kbin: &'a Kbin,
    plan: &'a CorePlan,
    img: &'a CoreImage,
    live: Vec<&'a LiveAlloc>,
    by_handle: HashMap<MemHandle, &'a LiveAlloc>,
    findings: Vec<Finding>,
}

impl<'a> Core<'a> {
    fn bad(&mut self, what: String) {
        self.findings.push(Finding {
            subgraph: self.kbin.name().to_string(),
            what,
        });
    }

    fn var_name(&self, var: VarId) -> String {
        self.kbin
            .vars()
            .get(var)
            .map_or_else(|| format!("var {}", var.0), |v| v.name.clone())
    }

    /// The device bytes a staged variable spans: its placement and the
    /// extent the sealed record bounds every reference by. `None` for an
    /// input, an output or a host-only variable.
    fn span(&self, var: VarId) -> Option<(u64, u64)> {
        let extent = self.kbin.vars().get(var)?.extent()?;
        match self.plan.vars.get(var.0 as usize)? {
            Placement::StateBuffer { pa }
            | Placement::Hbm { pa, .. }
            | Placement::Scratchpad { pa, .. } => Some((*pa, pa.checked_add(extent)?)),
            Placement::Io | Placement::Host => None,
        }
    }

    /// Which variable of the subgraph, or which live allocation of the
    /// core, holds `addr` (for messages).
    fn whose(&self, addr: u64) -> String {
        let vars = self.kbin.vars();
        if let Some(v) = vars.iter().find(|v| {
            self.span(v.id)
                .is_some_and(|(s, e)| addr >= s && addr < e.max(s + 1))
        }) {
            return format!("it points into {}", v.name);
        }
        match self
            .live
            .iter()
            .find(|a| addr >= a.pa.0 && addr < a.pa.0 + a.size.max(1))
        {
            Some(a) => format!("it points into allocation {} ({})", a.handle, a.hint),
            None => "it points into no allocation of the core".into(),
        }
    }

    /// The variable's own allocation must be live and hold all of it.
    fn check_allocation(&mut self, var: VarId) {
        let Some((start, end)) = self.span(var) else {
            return;
        };
        let Some(&(_, handle)) = self.plan.var_allocs.iter().find(|(id, _)| *id == var) else {
            return; // state buffer and shared scratchpad pages: no allocation of its own
        };
        let held = self
            .by_handle
            .get(&handle)
            .is_some_and(|a| start >= a.pa.0 && end <= a.pa.0 + a.size);
        if !held {
            let name = self.var_name(var);
            self.bad(format!(
                "{name} at {start:#x}..{end:#x} is not inside its live allocation {handle}"
            ));
        }
    }

    /// One ADDR8 operand against the variable its relocation names.
    fn check_operand(&mut self, at: &str, got: u64, want: Operand) {
        let name = self.var_name(want.var());
        let is_io = self
            .kbin
            .vars()
            .get(want.var())
            .is_some_and(|v| matches!(v.of, VarOf::Input { .. } | VarOf::Output { .. }));
        if let (true, Some(row)) = (is_io, want.dge_index()) {
            let kept = Addr8::decode(&got.to_le_bytes()).is_some_and(|a| {
                a.mode == ADDR8_DGE_INDEX && a.id == row && u64::from(a.offset) == want.offset()
            });
            if !kept {
                self.bad(format!(
                    "{at}: {got:#x} is not dge-table row {row} + {:#x} ({name}) as written",
                    want.offset()
                ));
            }
            return;
        }
        if is_io {
            if decode_template(got) != Some((want.var(), want.offset())) {
                self.bad(format!(
                    "{at}: {got:#x} is not the template of {name} + {:#x}",
                    want.offset()
                ));
            }
            return;
        }
        let Some((start, end)) = self.span(want.var()) else {
            self.bad(format!("{at}: {name} is not staged"));
            return;
        };
        // Instruction operands hold the runtime's form of the address.
        let expected = start.checked_add(want.offset());
        let device = expected.map(|e| device_address(self.geometry, e));
        let sim = simulated_address(self.geometry, self.img.pcore(), got).unwrap_or(got);
        if device != Some(got) || sim >= end {
            let whose = self.whose(sim);
            self.bad(format!(
                "{at}: address {got:#x} is not {name} + {:#x} ({}); {whose}",
                want.offset(),
                device.map_or("overflows".into(), |e| format!("{e:#x}"))
            ));
        }
    }

    fn check_trigger(&mut self, at: &str, record: &[u8], block: BlockRef) {
        let Ok(got) = <Record>::try_from(record) else {
            self.bad(format!("{at}: outside the image"));
            return;
        };
        let window = DmaWindow::of(self.geometry, self.img.pcore());
        let want = regs::trigger(&got, &window, &super::core::trigger(self.kbin, block));
        if got != want {
            self.bad(format!(
                "{at}: trigger holds {:x?}, but block {} of ring {} is started by {:x?}",
                &got[..48],
                block.block(),
                block.ring(),
                &want[..48]
            ));
        }
    }

    /// A collectives record: the doorbell or the rank-id load the sealed
    /// lowering names, or a global id stored where its operand says.
    fn check_collective(&mut self, at: &str, record: &[u8], l: CcLowering) {
        let Some(want) = cc::fixed(&l) else {
            if record.first() != Some(&cc::OP_MOVE32) {
                self.bad(format!("{at}: the global id's record is not a move"));
            } else if let CcLowering::GlobalId {
                dest: GidDest::Memory(operand),
                ..
            } = l
            {
                match word(record, cc::GID_MEMORY_WORD) {
                    Some(got) => self.check_operand(at, got, operand),
                    None => self.bad(format!("{at}: outside the image")),
                }
            }
            return;
        };
        if record != want {
            self.bad(format!(
                "{at}: holds {:x?}, the lowering names {:x?}",
                &record[..40.min(record.len())],
                &want[..40]
            ));
        }
    }

    fn check_engine(&mut self, dev: &Device, program: &EngineProgram, placed: &PlacedImage) {
        let bytes = device_bytes(dev, placed.handle, &placed.image.bytes);
        let main = placed
            .image
            .layout
            .span(Section::Main)
            .map_or(0, |s| s.first as usize);
        let engine = program.ty().key();
        let mut deleted = 0usize;
        for r in program.relocations() {
            let slot = main + r.record() as usize - deleted;
            let at = |what: &str| format!("{engine} record {} {what}", r.record());
            let record = bytes.get(slot * 64..slot * 64 + 64).unwrap_or_default();
            match r.lowering() {
                Lowering::Delete => deleted += 1,
                Lowering::Direct { src, dst } => {
                    for (off, side, want) in [(D4_SRC, "source", src), (D4_DST, "destination", dst)]
                    {
                        match word(record, off) {
                            Some(got) => self.check_operand(&at(side), got, want),
                            None => self.bad(format!("{}: outside the image", at(side))),
                        }
                    }
                }
                Lowering::Trigger(block) => self.check_trigger(&at("trigger"), record, block),
                Lowering::Collective(l) => self.check_collective(&at("collective"), record, l),
            }
        }
    }

    /// A descriptor of block `block` on one side: inside a variable the
    /// block names on that side, or the ring's own padding slot.
    fn check_descriptor(&mut self, at: &str, d: &Descriptor, ring_pa: u64, vars: &[VarId]) {
        let ptr = d.buf_ptr;
        if ptr == ring_pa {
            return;
        }
        if let Some((var, offset)) = decode_template(ptr) {
            let ok = vars.contains(&var)
                && self.kbin.vars().get(var).is_some_and(|v| {
                    matches!(v.of, VarOf::Input { .. } | VarOf::Output { .. })
                        && v.extent().is_some_and(|e| offset < e)
                });
            if !ok {
                self.bad(format!(
                    "{at}: template names var {} offset {offset:#x}, not an input/output the block moves",
                    var.0
                ));
            }
            return;
        }
        let inside = vars
            .iter()
            .any(|&v| self.span(v).is_some_and(|(s, e)| ptr >= s && ptr < e));
        if !inside {
            let names: Vec<String> = vars.iter().map(|&v| self.var_name(v)).collect();
            let whose = self.whose(ptr);
            self.bad(format!(
                "{at}: address {ptr:#x} is in none of {}; {whose}",
                names.join(", ")
            ));
        }
    }

    fn check_ring(&mut self, dev: &Device, placed: &PlacedRing) {
        let Some(ring) = self
            .kbin
            .dma_rings()
            .iter()
            .find(|r| r.queue().name == placed.queue)
        else {
            self.bad(format!(
                "ring {} is not a queue of the subgraph",
                placed.queue
            ));
            return;
        };
        // Descriptors are read in place: a ring may hold millions.
        let bytes = device_bytes(dev, placed.handle, &placed.image.bytes);
        let capacity = placed.image.capacity;
        let descriptor = |half: usize, i: u32| {
            let at = (half + i as usize) * DESC_BYTES as usize;
            let b: &[u8; 16] = bytes.get(at..at + 16)?.try_into().ok()?;
            (i < capacity as u32).then(|| Descriptor::from_bytes(b))
        };
        for (block, &(id, first, count)) in ring.blocks().iter().zip(&placed.image.blocks) {
            let from: Vec<VarId> = block.descs.iter().map(|d| d.from.var_id).collect();
            let to: Vec<VarId> = block.descs.iter().map(|d| d.to.var_id).collect();
            for (side, half, vars) in [("tx", 0, &from), ("rx", capacity, &to)] {
                for i in first..first.saturating_add(count) {
                    let Some(d) = descriptor(half, i) else {
                        self.bad(format!(
                            "ring {} block {id}: {side}[{i}] is missing",
                            placed.queue
                        ));
                        continue;
                    };
                    let at = format!("ring {} block {id} {side}[{i}]", placed.queue);
                    self.check_descriptor(&at, &d, placed.pa, vars);
                }
            }
        }
    }
}

/// Checks every core image of a load against its sealed kbin and plan.
pub fn validate(dev: &Device, kbins: &[Kbin], images: &[CoreImage]) -> Vec<Finding> {
    let live = dev.live_allocations();
    let mut findings = Vec::new();
    for (kbin, img) in kbins.iter().zip(images) {
        let on_core: Vec<&LiveAlloc> = live.iter().filter(|a| a.core == img.pcore()).collect();
        let mut core = Core {
            geometry: dev.geometry(),
            kbin,
            plan: &img.plan,
            img,
            by_handle: on_core.iter().map(|a| (a.handle, *a)).collect(),
            live: on_core,
            findings: Vec::new(),
        };
        for (var, _) in &img.plan.var_allocs {
            core.check_allocation(*var);
        }
        for program in kbin.engines() {
            match img.engines.iter().find(|e| e.engine == program.ty()) {
                Some(placed) => core.check_engine(dev, program, placed),
                None => core.bad(format!("{} has no staged image", program.ty().key())),
            }
        }
        for ring in &img.rings {
            core.check_ring(dev, ring);
        }
        findings.append(&mut core.findings);
    }
    findings
}
