//! Instruction streams → device images (stage.md §7.2, §8.1).
//!
//! Every engine stream is a flat array of 64-byte records. Real opcodes are
//! copied verbatim. Pseudo opcodes (the host-only band `0xC1..=0xDF` and
//! the `0xA9` straggler) are lowered as the KBIN build's resolved
//! [`Relocation`]s say — lowering decides nothing and checks nothing the
//! build already checked:
//! - `0xCC` branch label: deleted;
//! - `0xD4` direct DMA: becomes the device opcode `0xB8`, and each ADDR8
//!   operand is rewritten in place to the named variable's absolute device
//!   address as the runtime writes it ([`Resolve::device_word`]; a template
//!   pointer — bit 61, var_id, offset — for an IO
//!   tensor), except that an operand the NEFF wrote as a `dge-table` row
//!   (mode `0x20`) naming an IO tensor is kept as written, which execution
//!   resolves (as the captures show);
//! - `0xC1` DMA trigger: bound to the block's place in its queue's ring —
//!   bytes 12..20 become the ring's device address, 20..24 the first
//!   descriptor, 24..28 the descriptor count, 28..32 the completion
//!   semaphore (the queue name they held is no longer needed);
//! - `0xDF` with sub-op 1 (EXIT): deleted, since the postamble terminates;
//! - anything else in the band was refused by the KBIN build.
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
use super::runtime_code::{RuntimeCode, IMAGE_ALIGN};
use super::RelocError;
use crate::fallible;
use crate::ids::VarId;
use crate::kbin::isa::{D4_DST, D4_SRC, OP_PSEUDO_DMA_DIRECT2D};
use crate::kbin::{BlockRef, Lowering, Operand, Relocation};
use crate::shared::SharedSlice;

/// The device opcode a lowered `0xD4` carries: every rewritten `0xD4` of
/// the ten captures starts with `0xB8`, its other bytes of word 0 kept.
pub const OP_DMA_DIRECT: u8 = 0xB8;

/// Where a static DMA block sits in its queue's ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TriggerBinding {
    pub ring_pa: u64,
    pub first: u32,
    pub count: u32,
    pub semaphore: u32,
}

/// Where the plan put what the relocations name.
pub trait Resolve {
    /// The target of `offset` bytes into variable `var`: absolute for a
    /// staged variable, a template for an input or output.
    fn operand(&self, var: VarId, offset: u64) -> Result<Target, RelocError>;
    /// The ring placement of a block.
    fn block(&self, at: BlockRef) -> TriggerBinding;
    /// The word an absolute operand address becomes in an instruction: the
    /// address as the runtime writes it ([`crate::device::address`]); by
    /// default unchanged.
    fn device_word(&self, pa: u64) -> u64 {
        pa
    }
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
    /// Filled by [`lower`]'s caller, from the room it lowered into.
    pub bytes: SharedSlice,
    pub layout: ImageLayout,
    pub patches: PatchList,
    pub io_operands: Vec<IoOperand>,
    /// Image offsets of every 8-byte absolute address written by lowering.
    pub abs_operands: Vec<u64>,
}

impl EngineImage {
    /// Device alignment of an image: one 32 KiB slot, whatever its size
    /// ([`IMAGE_ALIGN`]; the captures correct stage.md §6.8).
    pub fn alignment(&self) -> u64 {
        IMAGE_ALIGN
    }
}

/// Bytes of the image [`lower`] makes of a stream of `records` records
/// with `relocations` between `code`: known before any address is, so that
/// images can be placed before the rings and tables their lowering needs.
pub fn image_len(records: u64, relocations: &[Relocation], code: RuntimeCode) -> u64 {
    let deleted = relocations
        .iter()
        .filter(|r| matches!(r.lowering(), Lowering::Delete))
        .count() as u64;
    let records = records.saturating_sub(deleted);
    (u64::from(code.preamble_slots()) + records + u64::from(code.postamble_slots())) * RECORD
}

/// Lowers one engine's NEFF stream (`name` is used in error messages) by
/// its resolved `relocations` (in record order, each naming a record of this
/// stream, as the sealed kbin holds them), and assembles its image between
/// the runtime's own `code`, as it will sit at device address `base`.
///
/// The image is written into `out`, which must be exactly [`image_len`]
/// long: the caller owns the memory (the images of a core share one
/// allocation) and sets the returned record's `bytes` from it.
pub fn lower(
    name: &str,
    stream: &[u8],
    relocations: &[Relocation],
    base: u64,
    code: RuntimeCode,
    r: &dyn Resolve,
    out: &mut [u8],
) -> Result<EngineImage, RelocError> {
    let record = RECORD as usize;
    let n_records = stream.len() / record;
    assert_eq!(
        out.len() as u64,
        image_len(n_records as u64, relocations, code),
        "the room for {name}'s image"
    );
    let mut img = EngineImage::default();
    // The side lists sized once too: a Pool stream lowers thousands of
    // records, and lists grown by doubling copy and fault twice.
    let operands: usize = relocations
        .iter()
        .map(|r| match r.lowering() {
            Lowering::Delete => 0,
            Lowering::Direct { .. } => 2,
            Lowering::Trigger(_) => 1,
        })
        .sum();
    fallible::reserve(&mut img.abs_operands, operands, "an image's operand list")?;
    fallible::reserve(
        &mut img.patches.patches,
        relocations.len() + 2,
        "an image's patch list",
    )?;
    let mut w = Writer { out, at: 0 };
    let pre = code.preamble();
    for rec in &pre {
        w.put(rec);
    }
    img.patches.push(Patch {
        section: Section::Preamble,
        neff_index: 0,
        neff_count: 0,
        device_count: pre.len() as u32,
    });
    let main_start = w.at;
    let stream = &stream[..n_records * record];
    // Records no relocation names are copied as they are, a run at a time:
    // most of a stream (all of a PE stream) is such runs.
    let mut copied = 0;
    for reloc in relocations {
        let i = reloc.record() as usize;
        w.put(&stream[copied * record..i * record]);
        copied = i + 1;
        let rec = &stream[i * record..copied * record];
        let patch = |device_count| Patch {
            section: Section::Main,
            neff_index: i as u32,
            neff_count: 1,
            device_count,
        };
        let mut lowered: [u8; 64] = rec.try_into().expect("64-byte record");
        match reloc.lowering() {
            Lowering::Delete => {
                img.patches.push(patch(0));
                continue;
            }
            Lowering::Direct { src, dst } => {
                lowered[0] = OP_DMA_DIRECT;
                for (at, operand) in [(D4_SRC, src), (D4_DST, dst)] {
                    let image_offset = (w.at + at) as u64;
                    if let Some(word) = apply(name, i, &mut img, image_offset, operand, r)? {
                        lowered[at..at + 8].copy_from_slice(&word.to_le_bytes());
                    }
                }
            }
            Lowering::Trigger(at) => {
                let b = r.block(at);
                lowered[12..44].fill(0);
                lowered[12..20].copy_from_slice(&b.ring_pa.to_le_bytes());
                lowered[20..24].copy_from_slice(&b.first.to_le_bytes());
                lowered[24..28].copy_from_slice(&b.count.to_le_bytes());
                lowered[28..32].copy_from_slice(&b.semaphore.to_le_bytes());
                img.abs_operands.push((w.at + 12) as u64);
            }
        }
        w.put(&lowered);
        img.patches.push(patch(1));
    }
    w.put(&stream[copied * record..]);
    let main_len = (w.at - main_start) / record;
    let post = code.postamble(main_len as u32);
    for rec in &post {
        w.put(rec);
    }
    assert_eq!(w.at, w.out.len(), "image_len and lower disagree on {name}");
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

/// Appends to a slice sized beforehand.
struct Writer<'a> {
    out: &'a mut [u8],
    at: usize,
}

impl Writer<'_> {
    fn put(&mut self, bytes: &[u8]) {
        self.out[self.at..self.at + bytes.len()].copy_from_slice(bytes);
        self.at += bytes.len();
    }
}

/// The word an ADDR8 operand becomes, recorded as absolute or IO; `None`
/// when the operand stays as the NEFF wrote it (a `dge-table` row naming
/// an IO tensor).
fn apply(
    name: &str,
    index: usize,
    img: &mut EngineImage,
    image_offset: u64,
    operand: Operand,
    r: &dyn Resolve,
) -> Result<Option<u64>, RelocError> {
    let in_record = |detail: String| RelocError::Instruction {
        engine: name.into(),
        index: index as u64,
        opcode: OP_PSEUDO_DMA_DIRECT2D,
        detail,
    };
    Ok(
        match r
            .operand(operand.var(), operand.offset())
            .map_err(|e| in_record(e.to_string()))?
        {
            Target::Io { var, offset } => {
                img.io_operands.push(IoOperand {
                    image_offset,
                    var,
                    offset,
                });
                if operand.dge_index().is_some() {
                    // The runtime leaves a dge-table operand of an IO
                    // tensor as the NEFF wrote it (every mode 0x20 word of
                    // the ten captures): the DGE resolves it at execution.
                    None
                } else {
                    Some(template(var, offset).map_err(|e| in_record(e.to_string()))?)
                }
            }
            Target::Abs(pa) => {
                img.abs_operands.push(image_offset);
                Some(r.device_word(pa))
            }
            Target::RingPad => return Err(in_record("operand resolved to ring padding".into())),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kbin::isa::{OP_PSEUDO_BRANCH_LABEL, OP_PSEUDO_DMATRIGGER, OP_PSEUDO_INST};
    use crate::manifest::engine::EngineType;
    use crate::relocate::dma::decode_template;
    use crate::relocate::ipmap::PatchKind;
    use crate::relocate::runtime_code::CoreRole;

    /// [`lower`] of a stream for [`CODE`] against [`Fake`], into a room of
    /// its own.
    fn lower_owned(
        name: &str,
        stream: &[u8],
        relocations: &[Relocation],
        base: u64,
    ) -> Result<EngineImage, RelocError> {
        let records = (stream.len() / RECORD as usize) as u64;
        let mut room = vec![0u8; image_len(records, relocations, CODE) as usize];
        let mut img = lower(name, stream, relocations, base, CODE, &Fake, &mut room)?;
        img.bytes = room.into();
        Ok(img)
    }

    /// pe on a second core: 66 preamble and 11 postamble slots.
    const CODE: RuntimeCode = RuntimeCode {
        engine: EngineType::Pe,
        role: CoreRole::Second,
        act_tables: false,
        queues: crate::relocate::runtime_code::QueueShape::NONE,
    };
    const PRE: usize = 66;
    const POST: usize = 11;

    /// var 0 = SB at 0x5000_0000, var 4 = a weight at 0x1_0000, vars 1..3 = IO;
    /// ring 0 at 0x7000_0000 with two descriptors per block.
    struct Fake;

    impl Resolve for Fake {
        fn operand(&self, var: VarId, offset: u64) -> Result<Target, RelocError> {
            Ok(match var.0 {
                0 => Target::Abs(0x5000_0000 + offset),
                1..=3 => Target::Io { var, offset },
                4 => Target::Abs(0x1_0000 + offset),
                _ => return Err(RelocError::NotStaged(format!("var{}", var.0))),
            })
        }
        fn block(&self, at: BlockRef) -> TriggerBinding {
            TriggerBinding {
                ring_pa: 0x7000_0000 + at.ring() as u64 * 0x1000,
                first: at.block() as u32 * 2,
                count: 2,
                semaphore: 8 + at.block() as u32,
            }
        }
    }

    fn rec(op: u8) -> [u8; 64] {
        let mut r = [0u8; 64];
        r[0] = op;
        r[1] = 0x10;
        r
    }

    #[test]
    fn lowers_labels_dma_and_triggers() {
        let mut d4 = rec(crate::kbin::isa::OP_PSEUDO_DMA_DIRECT2D);
        // The destination as the NEFF wrote it: row 1 of the dge-table, +4096.
        d4[40..48].copy_from_slice(&[0x00, 0x10, 0, 0, 1, 0, 0, 0x20]);
        let mut c1 = rec(OP_PSEUDO_DMATRIGGER);
        c1[12..18].copy_from_slice(b"qSPIO0");
        c1[48] = 5;
        let stream: Vec<u8> = [rec(0xB1), rec(OP_PSEUDO_BRANCH_LABEL), d4, rec(0x01), c1].concat();
        let relocs = [
            Relocation::new(1, Lowering::Delete),
            Relocation::new(
                2,
                Lowering::Direct {
                    src: Operand::new(VarId(0), 0x37B00),
                    dst: Operand::through_dge(VarId(3), 4096, 1),
                },
            ),
            Relocation::new(4, Lowering::Trigger(BlockRef::new(0, 5))),
        ];
        let img = lower_owned("PE", &stream, &relocs, 0x8000_0000).unwrap();
        // pre + main 4 (label deleted) + post
        assert_eq!(img.bytes.len(), (PRE + 4 + POST) * 64);
        assert_eq!(
            image_len(5, &relocs, CODE),
            img.bytes.len() as u64,
            "known before lowering"
        );
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
    fn a_var_id_operand_of_an_io_tensor_becomes_its_template() {
        let relocs = [Relocation::new(
            0,
            Lowering::Direct {
                src: Operand::new(VarId(4), 8),
                dst: Operand::new(VarId(2), 64),
            },
        )];
        let img = lower_owned("SP", &rec(0xD4), &relocs, 0).unwrap();
        let d = &img.bytes[PRE * 64..(PRE + 1) * 64];
        let word = |at: usize| u64::from_le_bytes(d[at..at + 8].try_into().unwrap());
        assert_eq!(word(16), 0x1_0000 + 8);
        assert_eq!(decode_template(word(40)), Some((VarId(2), 64)));
    }

    #[test]
    fn an_unstaged_operand_names_engine_record_and_opcode() {
        let stream: Vec<u8> = [rec(0xB1), rec(0xD4)].concat();
        let relocs = [Relocation::new(
            1,
            Lowering::Direct {
                src: Operand::new(VarId(5), 0),
                dst: Operand::new(VarId(0), 0),
            },
        )];
        let e = lower_owned("Pool", &stream, &relocs, 0).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("instruction 1 (opcode 0xd4) of Pool") && msg.contains("var5"),
            "{msg}"
        );
    }

    #[test]
    fn records_without_a_relocation_are_copied_verbatim() {
        // Real opcodes, even unknown ones, are copied verbatim; EXIT is deleted.
        let mut exit = rec(OP_PSEUDO_INST);
        exit[12] = 1;
        let relocs = [Relocation::new(1, Lowering::Delete)];
        let img = lower_owned("Act", &[rec(0x47), exit].concat(), &relocs, 0).unwrap();
        assert_eq!(img.bytes.len(), (PRE + 1 + POST) * 64);
        assert_eq!(img.bytes[PRE * 64], 0x47);
    }

    #[test]
    #[should_panic(expected = "the room for PE's image")]
    fn a_room_of_the_wrong_size_is_refused() {
        let len = image_len(1, &[], CODE) as usize;
        let mut room = vec![0u8; len - 64];
        let _ = lower("PE", &rec(0x47), &[], 0, CODE, &Fake, &mut room);
    }

    #[test]
    fn an_empty_stream_is_preamble_and_postamble_only() {
        let img = lower_owned("PE", &[], &[], 0x4000).unwrap();
        assert_eq!(img.bytes.len(), (PRE + POST) * 64);
        assert_eq!(img.layout.sections[1], (Section::Main, PRE as u32, 0));
    }
}
