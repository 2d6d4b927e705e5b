//! The staged-model validator: every address the load baked into device
//! memory must point somewhere legitimate.
//!
//! For each core image: every absolute address written into an instruction
//! image (lowered ADDR8 operands, trigger ring addresses) and every DMA
//! descriptor pointer must fall inside a live allocation of that core or
//! inside its state-buffer aperture, and every template pointer must name an
//! input or output variable of the subgraph, at an offset inside it.

use crate::device::{Device, LiveAlloc};
use crate::ids::{PCore, VarId};
use crate::kbin::Kbin;
use crate::manifest::def::VarKind;
use crate::relocate::dma::decode_template;

use super::core::CoreImage;
use super::plan::SB_BYTES;

/// One problem found in a staged model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub subgraph: String,
    pub what: String,
}

struct Bounds {
    allocs: Vec<(u64, u64)>,
    sb: (u64, u64),
}

impl Bounds {
    fn of(dev: &dyn Device, live: &[LiveAlloc], core: PCore) -> Bounds {
        let mut allocs: Vec<(u64, u64)> = live
            .iter()
            .filter(|a| a.core == core)
            .map(|a| (a.pa.0, a.pa.0 + a.size.max(1)))
            .collect();
        allocs.sort_unstable();
        let sb = dev
            .sb_base(core)
            .map(|p| (p.0, p.0 + SB_BYTES))
            .unwrap_or((0, 0));
        Bounds { allocs, sb }
    }

    fn contains(&self, addr: u64) -> bool {
        if addr >= self.sb.0 && addr < self.sb.1 {
            return true;
        }
        let i = self.allocs.partition_point(|&(start, _)| start <= addr);
        i > 0 && addr < self.allocs[i - 1].1
    }
}

fn check_template(kbin: &Kbin, ptr: u64, findings: &mut Vec<Finding>, where_: &str) {
    if let Some((var, offset)) = decode_template(ptr) {
        check_io(kbin, var, offset, findings, where_);
    }
}

/// An operand bound at execution must name an input or output of the
/// subgraph, at an offset inside it.
fn check_io(kbin: &Kbin, var: VarId, offset: u64, findings: &mut Vec<Finding>, where_: &str) {
    let ok = kbin.vars.get(var).is_some_and(|v| {
        matches!(v.kind, VarKind::Input | VarKind::Output) && offset <= v.size.unwrap_or(0)
    });
    if !ok {
        findings.push(Finding {
            subgraph: kbin.name.clone(),
            what: format!("{where_}: template names var {} offset {offset}, not an input/output of the subgraph", var.0),
        });
    }
}

/// Checks every core image of a load against the device's live allocations.
pub fn validate(dev: &dyn Device, kbins: &[Kbin], images: &[CoreImage]) -> Vec<Finding> {
    let live = dev.live_allocations();
    let mut findings = Vec::new();
    for (kbin, img) in kbins.iter().zip(images) {
        let bounds = Bounds::of(dev, &live, img.pcore());
        let mut bad = |what: String| {
            findings.push(Finding {
                subgraph: img.subgraph.clone(),
                what,
            })
        };
        for e in &img.engines {
            for &off in &e.image.abs_operands {
                let o = off as usize;
                let addr = u64::from_le_bytes(e.image.bytes[o..o + 8].try_into().expect("8 bytes"));
                if !bounds.contains(addr) {
                    bad(format!("{} image offset {off:#x}: address {addr:#x} is outside every allocation of {}", e.engine.key(), img.pcore()));
                }
            }
        }
        for r in &img.rings {
            let (tx, rx) = r.image.descriptors();
            for (side, descs) in [("tx", tx), ("rx", rx)] {
                for (i, d) in descs.iter().enumerate() {
                    if decode_template(d.buf_ptr).is_none() && !bounds.contains(d.buf_ptr) {
                        bad(format!(
                            "ring {} {side}[{i}]: address {:#x} is outside every allocation of {}",
                            r.queue,
                            d.buf_ptr,
                            img.pcore()
                        ));
                    }
                }
            }
        }
        for e in &img.engines {
            for io in &e.image.io_operands {
                check_io(
                    kbin,
                    io.var,
                    io.offset,
                    &mut findings,
                    &format!("{} image offset {:#x}", e.engine.key(), io.image_offset),
                );
            }
        }
        for r in &img.rings {
            let (tx, rx) = r.image.descriptors();
            for d in tx.iter().chain(&rx) {
                check_template(kbin, d.buf_ptr, &mut findings, &format!("ring {}", r.queue));
            }
        }
    }
    findings
}
