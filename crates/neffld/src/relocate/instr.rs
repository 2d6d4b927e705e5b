//! Instruction streams → device images (stage.md §7.2, §8.1).
//!
//! Every engine stream is a flat array of 64-byte records. Real opcodes are
//! copied verbatim. Pseudo opcodes (the host-only band `0xC1..=0xDF` and
//! the `0xA9` straggler) are lowered:
//! - `0xCC` branch label: deleted;
//! - `0xD4` direct DMA: becomes the device opcode `0xB8`, and each ADDR8
//!   operand is rewritten in place — mode `0x10` (a var_id) to the
//!   variable's absolute device address (a template pointer — bit 61,
//!   var_id, offset — for an IO tensor), mode `0x20` (an index into the
//!   `dge-table` list) kept as written when it names an IO tensor, which
//!   execution resolves (as the captures show), else the address;
//! - `0xC1` DMA trigger: bound to the block's place in its queue's ring —
//!   bytes 12..20 become the ring's device address, 20..24 the first
//!   descriptor, 24..28 the descriptor count, 28..32 the completion
//!   semaphore (the queue name they held is no longer needed);
//! - `0xDF` with sub-op 1 (EXIT): deleted, since the postamble terminates;
//! - anything else in the band: an error naming engine, record and opcode.
//!
//! The device encodings of lowered `0xD4`/`0xC1` records are ours (the
//! reference expands them into ring descriptors whose exact form is not
//! documented); they keep the record self-describing for simulators and
//! for the staged-model validator.
//!
//! The image is `[preamble][main][postamble]`; the runtime's own preamble
//! and postamble come from [`super::runtime_code`] (slot counts as the
//! captures show them), recorded as INSERT patches.

use super::dma::{template, Target};
use super::ipmap::{ImageLayout, Patch, PatchList, Section, RECORD};
use super::runtime_code::RuntimeCode;
use super::RelocError;
use crate::fallible;
use crate::ids::VarId;
use crate::kbin::isa::{
    self, Addr8, ADDR8_DGE_INDEX, ADDR8_STATIC_VAR, D4_DST, D4_SRC, OP_PSEUDO_BRANCH_LABEL,
    OP_PSEUDO_DMATRIGGER, OP_PSEUDO_DMA_DIRECT2D,
};

pub const OP_FUNCTION_BEGIN: u8 = 0xD1;
pub const OP_FUNCTION_CALL: u8 = 0xD3;
pub const OP_PSEUDO_INST: u8 = 0xDF;
pub const OP_COMPARE_BRANCH: u8 = 0xA9;
/// The device opcode a lowered `0xD4` carries: every rewritten `0xD4` of
/// the ten captures starts with `0xB8`, its other bytes of word 0 kept.
pub const OP_DMA_DIRECT: u8 = 0xB8;

/// True for the host-only opcodes that must be lowered.
pub fn is_pseudo(op: u8) -> bool {
    (0xC1..=0xDF).contains(&op) || op == OP_COMPARE_BRANCH
}

/// Where a static DMA block sits in its queue's ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TriggerBinding {
    pub ring_pa: u64,
    pub first: u32,
    pub count: u32,
    pub semaphore: u32,
}

/// What lowering needs to know about the subgraph and its placement.
pub trait Resolve {
    /// The target of `len` bytes at `offset` of variable `id`
    /// (`mem_ref_to_addr`): absolute for staged variables, a template for
    /// inputs and outputs, an error for anything else.
    fn var(&self, id: VarId, offset: u64, len: u64) -> Result<Target, RelocError>;
    /// The `dge-table` list (exactly one such variable must exist).
    fn dge_list(&self) -> Result<&[VarId], RelocError>;
    /// The ring placement of block `id` of `queue`.
    fn trigger(&self, queue: &str, id: u32) -> Result<TriggerBinding, RelocError>;
}

/// A lowered operand that execution must resolve (an IO template).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoOperand {
    /// Byte offset of the 8-byte operand in the image.
    pub image_offset: u64,
    pub var: VarId,
    pub offset: u64,
}

/// One engine's device image and its bookkeeping.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EngineImage {
    pub bytes: Vec<u8>,
    pub layout: ImageLayout,
    pub patches: PatchList,
    pub io_operands: Vec<IoOperand>,
    /// Image offsets of every 8-byte absolute address written by lowering.
    pub abs_operands: Vec<u64>,
}

impl EngineImage {
    /// Device alignment of an image (stage.md §6.8): `max(0x8000, size)`
    /// rounded up to a power of two.
    pub fn alignment(&self) -> u64 {
        (self.bytes.len() as u64).max(0x8000).next_power_of_two()
    }
}

/// Lowers one engine's NEFF stream (`name` is used in error messages) and
/// assembles its image between the runtime's own `code`, as it will sit at
/// device address `base`.
pub fn lower(
    name: &str,
    stream: &[u8],
    base: u64,
    code: RuntimeCode,
    r: &dyn Resolve,
) -> Result<EngineImage, RelocError> {
    if !stream.len().is_multiple_of(RECORD as usize) {
        return Err(RelocError::PartialRecord {
            engine: name.into(),
            size: stream.len() as u64,
        });
    }
    let pre = code.preamble();

    let n_records = stream.len() / RECORD as usize;
    let mut img = EngineImage::default();
    fallible::reserve(
        &mut img.bytes,
        (pre.len() + n_records + code.postamble_slots() as usize) * RECORD as usize,
        "an instruction image",
    )?;
    for rec in &pre {
        img.bytes.extend_from_slice(rec);
    }
    img.patches.push(Patch {
        section: Section::Preamble,
        neff_index: 0,
        neff_count: 0,
        device_count: pre.len() as u32,
    });
    let main_start = img.bytes.len();
    for (i, rec) in stream.chunks_exact(RECORD as usize).enumerate() {
        let op = rec[0];
        if !is_pseudo(op) {
            img.bytes.extend_from_slice(rec);
            continue;
        }
        let err = |detail: String| RelocError::Instruction {
            engine: name.into(),
            index: i as u64,
            opcode: op,
            detail,
        };
        let patch = |device_count| Patch {
            section: Section::Main,
            neff_index: i as u32,
            neff_count: 1,
            device_count,
        };
        match op {
            OP_PSEUDO_BRANCH_LABEL => img.patches.push(patch(0)),
            OP_PSEUDO_INST if rec[12] == 1 => img.patches.push(patch(0)),
            OP_PSEUDO_DMA_DIRECT2D => {
                let mut out: [u8; 64] = rec.try_into().expect("64-byte record");
                out[0] = OP_DMA_DIRECT;
                for at in [D4_SRC, D4_DST] {
                    let a =
                        Addr8::decode(&rec[at..at + 8]).expect("8 bytes inside a 64-byte record");
                    let target = match a.mode {
                        ADDR8_STATIC_VAR => r.var(VarId(u32::from(a.id)), u64::from(a.offset), 1),
                        ADDR8_DGE_INDEX => {
                            let list = r.dge_list().map_err(|e| err(e.to_string()))?;
                            let var = *list.get(usize::from(a.id)).ok_or_else(|| {
                                err(format!("invalid var_id {} in instruction {i} of {name}: the dge-table has {} rows", a.id, list.len()))
                            })?;
                            r.var(var, u64::from(a.offset), 1)
                        }
                        m => return Err(err(format!("unsupported ADDR8 mode {m:#x}"))),
                    }
                    .map_err(|e| err(e.to_string()))?;
                    let image_offset = (img.bytes.len() + at) as u64;
                    let word = match target {
                        Target::Abs(pa) => {
                            img.abs_operands.push(image_offset);
                            pa
                        }
                        Target::Io { var, offset } => {
                            img.io_operands.push(IoOperand {
                                image_offset,
                                var,
                                offset,
                            });
                            if a.mode == ADDR8_DGE_INDEX {
                                // The runtime leaves a dge-table operand of an
                                // IO tensor as the NEFF wrote it (every mode
                                // 0x20 word of the ten captures): the DGE
                                // resolves it at execution.
                                continue;
                            }
                            template(var, offset).map_err(|e| err(e.to_string()))?
                        }
                        Target::RingPad => {
                            return Err(err("operand resolved to ring padding".into()))
                        }
                    };
                    out[at..at + 8].copy_from_slice(&word.to_le_bytes());
                }
                img.bytes.extend_from_slice(&out);
                img.patches.push(patch(1));
            }
            OP_PSEUDO_DMATRIGGER => {
                let t = isa::trigger(rec).expect("a 64-byte 0xC1 record");
                let b = r
                    .trigger(&t.queue, t.block_id)
                    .map_err(|e| err(e.to_string()))?;
                let mut out: [u8; 64] = rec.try_into().expect("64-byte record");
                out[12..44].fill(0);
                out[12..20].copy_from_slice(&b.ring_pa.to_le_bytes());
                out[20..24].copy_from_slice(&b.first.to_le_bytes());
                out[24..28].copy_from_slice(&b.count.to_le_bytes());
                out[28..32].copy_from_slice(&b.semaphore.to_le_bytes());
                img.abs_operands.push((img.bytes.len() + 12) as u64);
                img.bytes.extend_from_slice(&out);
                img.patches.push(patch(1));
            }
            OP_FUNCTION_BEGIN | OP_FUNCTION_CALL => {
                return Err(err(
                    "function sections are not supported (no producer emits them)".into(),
                ))
            }
            _ => return Err(err("unknown pseudo opcode".into())),
        }
    }
    let main_len = (img.bytes.len() - main_start) / RECORD as usize;
    let post = code.postamble(main_len as u32);
    for rec in &post {
        img.bytes.extend_from_slice(rec);
    }
    img.patches.push(Patch {
        section: Section::Postamble,
        neff_index: 0,
        neff_count: 0,
        device_count: post.len() as u32,
    });
    img.layout = ImageLayout {
        base,
        sections: vec![
            (Section::Preamble, 0, pre.len() as u32),
            (Section::Main, pre.len() as u32, main_len as u32),
            (
                Section::Postamble,
                (pre.len() + main_len) as u32,
                post.len() as u32,
            ),
        ],
    };
    Ok(img)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::engine::EngineType;
    use crate::relocate::ipmap::PatchKind;
    use crate::relocate::runtime_code::CoreRole;

    /// pe on a second core: 66 preamble and 11 postamble slots.
    const CODE: RuntimeCode = RuntimeCode {
        engine: EngineType::Pe,
        role: CoreRole::Second,
        act_tables: false,
    };
    const PRE: usize = 66;
    const POST: usize = 11;

    /// var 0 = SB at 0x5000_0000, var 4 = a weight at 0x1_0000, vars 1..3 = IO; dge list [3,1,2].
    struct Fake {
        dge: Vec<VarId>,
    }

    impl Resolve for Fake {
        fn var(&self, id: VarId, offset: u64, len: u64) -> Result<Target, RelocError> {
            let (size, target) = match id.0 {
                0 => (32 << 20, Target::Abs(0x5000_0000 + offset)),
                1..=3 => (1 << 20, Target::Io { var: id, offset }),
                4 => (32768, Target::Abs(0x1_0000 + offset)),
                5 => return Err(RelocError::NotStaged("DGETable0".into())),
                n => return Err(RelocError::UnknownVar(n)),
            };
            if offset + len > size {
                return Err(RelocError::OutOfBounds {
                    var: format!("var{}", id.0),
                    size,
                    offset,
                    len,
                });
            }
            Ok(target)
        }
        fn dge_list(&self) -> Result<&[VarId], RelocError> {
            Ok(&self.dge)
        }
        fn trigger(&self, queue: &str, id: u32) -> Result<TriggerBinding, RelocError> {
            if queue == "qSPIO0" {
                Ok(TriggerBinding {
                    ring_pa: 0x7000_0000,
                    first: id * 2,
                    count: 2,
                    semaphore: 8 + id,
                })
            } else {
                Err(RelocError::UnboundTrigger {
                    queue: queue.into(),
                    id,
                })
            }
        }
    }

    fn rec(op: u8) -> [u8; 64] {
        let mut r = [0u8; 64];
        r[0] = op;
        r[1] = 0x10;
        r
    }

    fn addr8(r: &mut [u8; 64], at: usize, offset: u32, id: u16, mode: u8) {
        r[at..at + 4].copy_from_slice(&offset.to_le_bytes());
        r[at + 4..at + 6].copy_from_slice(&id.to_le_bytes());
        r[at + 7] = mode;
    }

    fn fake() -> Fake {
        Fake {
            dge: vec![VarId(3), VarId(1), VarId(2)],
        }
    }

    #[test]
    fn lowers_labels_dma_and_triggers() {
        let mut d4 = rec(OP_PSEUDO_DMA_DIRECT2D);
        addr8(&mut d4, 16, 0x37B00, 0, ADDR8_STATIC_VAR); // SB
        addr8(&mut d4, 40, 4096, 0, ADDR8_DGE_INDEX); // list[0] = var 3 (output)
        let mut c1 = rec(OP_PSEUDO_DMATRIGGER);
        c1[12..18].copy_from_slice(b"qSPIO0");
        c1[48] = 5;
        let stream: Vec<u8> = [rec(0xB1), rec(OP_PSEUDO_BRANCH_LABEL), d4, rec(0x01), c1].concat();
        let img = lower("PE", &stream, 0x8000_0000, CODE, &fake()).unwrap();
        // pre + main 4 (label deleted) + post
        assert_eq!(img.bytes.len(), (PRE + 4 + POST) * 64);
        let main = &img.bytes[PRE * 64..(PRE + 4) * 64];
        assert_eq!(main[0], 0xB1);
        let d = &main[64..128];
        assert_eq!(
            u64::from_le_bytes(d[16..24].try_into().unwrap()),
            0x5000_0000 + 0x37B00
        );
        assert_eq!(d[0], OP_DMA_DIRECT, "the device opcode");
        assert_eq!(&d[1..16], &d4[1..16], "the rest of word 0 and word 1 kept");
        assert_eq!(
            &d[40..48],
            &d4[40..48],
            "a dge-table IO operand is kept as written"
        );
        assert_eq!(
            img.io_operands,
            vec![IoOperand {
                image_offset: ((PRE + 1) * 64 + 40) as u64,
                var: VarId(3),
                offset: 4096
            }]
        );
        assert_eq!(img.abs_operands.len(), 2, "one ADDR8 and one trigger");
        let t = &main[192..256];
        assert_eq!(
            u64::from_le_bytes(t[12..20].try_into().unwrap()),
            0x7000_0000
        );
        assert_eq!(u32::from_le_bytes(t[20..24].try_into().unwrap()), 10);
        assert_eq!(u32::from_le_bytes(t[28..32].try_into().unwrap()), 13);
        assert_eq!(t[48], 5, "block id kept");
        // Patch list: preamble insert, label delete, two modifies, postamble insert.
        let kinds: Vec<_> = img
            .patches
            .patches
            .iter()
            .map(|p| (p.section, p.kind()))
            .collect();
        assert_eq!(
            kinds,
            [
                (Section::Preamble, PatchKind::Insert),
                (Section::Main, PatchKind::Delete),
                (Section::Main, PatchKind::Modify),
                (Section::Main, PatchKind::Modify),
                (Section::Postamble, PatchKind::Insert)
            ]
        );
        // The MATMUL (NEFF record 3) sits at device slot 2 of MAIN.
        assert_eq!(
            img.patches
                .device_ip_to_neff(&img.layout, 0x8000_0000 + (PRE as u64 + 2) * 64),
            Ok((Section::Main, Some(3)))
        );
        assert_eq!(img.alignment(), 0x8000);
    }

    #[test]
    fn bad_operands_name_engine_record_and_opcode() {
        let cases: Vec<(u16, u8, u32, &str)> = vec![
            (9, ADDR8_STATIC_VAR, 0, "invalid var_id 9"),
            (5, ADDR8_STATIC_VAR, 0, "not staged"),
            (4, ADDR8_STATIC_VAR, 32768, "invalid offset"),
            (3, ADDR8_DGE_INDEX, 0, "dge-table has 3 rows"),
            (0, 0x28, 0, "unsupported ADDR8 mode 0x28"),
        ];
        for (id, mode, offset, want) in cases {
            let mut d4 = rec(OP_PSEUDO_DMA_DIRECT2D);
            addr8(&mut d4, 16, offset, id, mode);
            addr8(&mut d4, 40, 0, 0, ADDR8_STATIC_VAR);
            let stream: Vec<u8> = [rec(0xB1), d4].concat();
            let e = lower("Pool", &stream, 0, CODE, &fake()).unwrap_err();
            let msg = e.to_string();
            assert!(
                msg.contains("instruction 1 (opcode 0xd4) of Pool") && msg.contains(want),
                "{msg}"
            );
            assert_eq!(e.status(), crate::NrtStatus::Invalid);
        }
    }

    #[test]
    fn unknown_pseudos_unbound_triggers_and_partial_records_fail() {
        let e = lower("DVE", &[rec(0xB1), rec(0xC7)].concat(), 0, CODE, &fake()).unwrap_err();
        assert!(e.to_string().contains("unknown pseudo opcode"), "{e}");
        let mut c1 = rec(OP_PSEUDO_DMATRIGGER);
        c1[12..20].copy_from_slice(b"qUnknown");
        let e = lower("SP", &c1, 0, CODE, &fake()).unwrap_err();
        assert!(e.to_string().contains("qUnknown"), "{e}");
        let e = lower("SP", &[0u8; 70], 0, CODE, &fake()).unwrap_err();
        assert!(matches!(e, RelocError::PartialRecord { size: 70, .. }));
        // Real opcodes, even unknown ones, are copied verbatim; EXIT is deleted.
        let mut exit = rec(OP_PSEUDO_INST);
        exit[12] = 1;
        let img = lower("Act", &[rec(0x47), exit].concat(), 0, CODE, &fake()).unwrap();
        assert_eq!(img.bytes.len(), (PRE + 1 + POST) * 64);
    }

    #[test]
    fn an_empty_stream_is_preamble_and_postamble_only() {
        let img = lower("PE", &[], 0x4000, CODE, &fake()).unwrap();
        assert_eq!(img.bytes.len(), (PRE + POST) * 64);
        assert_eq!(img.layout.sections[1], (Section::Main, PRE as u32, 0));
    }
}
