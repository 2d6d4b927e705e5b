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
//! - `0xC1` DMA trigger: becomes the runtime's register write `0xA5` that
//!   starts the block on every ring of its queue ([`regs::trigger`]: the
//!   queue's index, the core's DMA window, the block's per-ring counts, as
//!   every captured line writes it);
//! - the collectives band: one record each where the pseudo was
//!   ([`super::collective`]: the doorbell that starts a collective, the
//!   rank-id load, the global-id move or store), a PTC2's extension
//!   deleted; each is marked approximate, the runtime's addresses and
//!   opcodes there not being public;
//! - `0xDF` with sub-op 1 (EXIT): deleted, since the postamble terminates;
//! - anything else in the band was refused by the KBIN build.
//!
//! The image is `[preamble][main][postamble]`; the runtime's own preamble
//! and postamble come from the load's runtime line ([`crate::line`]),
//! recorded as INSERT patches, and the image says which of their slots are
//! filler rather than the runtime's bytes, and which triggers carry counts
//! no rule covers ([`EngineImage::filler`], [`EngineImage::approximate`]).

use std::ops::Range;

use super::collective as cc;
use super::dma::{template, Target};
use super::ipmap::{ImageLayout, Patch, PatchList, Section, SectionSpan, RECORD};
use super::RelocError;
use crate::fallible;
use crate::ids::VarId;
use crate::kbin::isa::{D4_DST, D4_SRC, OP_PSEUDO_DMA_DIRECT2D};
use crate::kbin::collective::{GidDest, OP_GID_LOAD};
use crate::kbin::{BlockRef, CcLowering, Lowering, Operand, Relocation};
#[cfg(any(test, feature = "testkit"))]
use crate::line::IMAGE_ALIGN;
use crate::line::{regs, RingBases, RuntimeCode, Trigger};
use crate::shared::SharedSlice;

/// The device opcode a lowered `0xD4` carries: every rewritten `0xD4` of
/// the ten captures starts with `0xB8`, its other bytes of word 0 kept.
pub const OP_DMA_DIRECT: u8 = 0xB8;

/// Where the plan put what the relocations name.
pub trait Resolve {
    /// The target of `offset` bytes into variable `var`: absolute for a
    /// staged variable, a template for an input or output.
    fn operand(&self, var: VarId, offset: u64) -> Result<Target, RelocError>;
    /// What the trigger of a block writes (its queue and counts, sealed
    /// in the kbin).
    fn trigger(&self, at: BlockRef) -> Trigger;
    /// Where the rings the runtime's preamble points at landed.
    fn rings(&self) -> &RingBases;
    /// The word an absolute operand address becomes in an instruction: the
    /// address as the runtime writes it ([`crate::device::address`]); by
    /// default unchanged.
    fn device_word(&self, pa: u64) -> u64 {
        pa
    }
    /// The global device id a `0xDC` load writes: the one
    /// `nrt_load_collectives` was given, 0 for a plain load.
    fn global_id(&self) -> u32 {
        0
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
    /// Filled by [`lower`]'s caller, from the buffer it lowered into.
    pub bytes: SharedSlice,
    pub layout: ImageLayout,
    pub patches: PatchList,
    pub io_operands: Vec<IoOperand>,
    /// Image offsets of every 8-byte absolute address written by lowering.
    pub abs_operands: Vec<u64>,
    /// Slots of the runtime's code (image slot ranges) that are filler:
    /// not the runtime's bytes, which are unknown for the load's line.
    pub filler: Vec<Range<u32>>,
    /// NEFF records (indexes) whose rewrite no rule covers — triggers of
    /// transposes (their counts), the collectives band (the doorbell's
    /// address, the loads' opcodes): the best-founded value, not surely the
    /// runtime's.
    pub approximate: Vec<u32>,
}

impl EngineImage {
    /// Device alignment of an image: one 32 KiB slot, whatever its size
    /// ([`IMAGE_ALIGN`]; the captures correct stage.md §6.8).
    #[cfg(any(test, feature = "testkit"))]
    pub fn alignment(&self) -> u64 {
        IMAGE_ALIGN
    }
}

/// Bytes of the image [`lower`] makes of a stream of `records` records
/// with `relocations` between `code`: known before any address is, so that
/// images can be placed before the rings and tables their lowering needs.
pub fn image_len(records: u64, relocations: &[Relocation], code: &RuntimeCode) -> u64 {
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
/// the runtime's own `code` (its blocks pointing at the rings `r` knows), as
/// it will sit at device address `base`.
///
/// The image is written into `out`, which must be exactly [`image_len`]
/// long: the caller owns the memory (the images of a core share one
/// allocation) and sets the returned record's `bytes` from it.
pub fn lower(
    name: &str,
    stream: &[u8],
    relocations: &[Relocation],
    base: u64,
    code: &RuntimeCode,
    r: &dyn Resolve,
    out: &mut [u8],
) -> Result<EngineImage, RelocError> {
    let record = RECORD as usize;
    let n_records = stream.len() / record;
    assert_eq!(
        out.len() as u64,
        image_len(n_records as u64, relocations, code),
        "the buffer for {name}'s image"
    );
    let mut img = EngineImage::default();
    // The side lists sized once too: a Pool stream lowers thousands of
    // records, and lists grown by doubling copy and fault twice.
    let operands: usize = relocations
        .iter()
        .map(|r| match r.lowering() {
            Lowering::Direct { .. } => 2,
            Lowering::Collective(CcLowering::GlobalId {
                dest: GidDest::Memory(_),
                ..
            }) => 1,
            _ => 0,
        })
        .sum();
    fallible::reserve(&mut img.abs_operands, operands, "an image's operand list")?;
    fallible::reserve(
        &mut img.patches.patches,
        relocations.len() + 2,
        "an image's patch list",
    )?;
    let mut w = Writer { out, at: 0 };
    let pre = code.preamble(r.rings());
    for rec in &pre.records {
        w.put(rec);
    }
    img.filler.extend(pre.filler.iter().cloned());
    let pre = pre.records;
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
                    if let Some(word) =
                        apply(name, i, OP_PSEUDO_DMA_DIRECT2D, &mut img, image_offset, operand, r)?
                    {
                        lowered[at..at + 8].copy_from_slice(&word.to_le_bytes());
                    }
                }
            }
            Lowering::Trigger(at) => {
                let t = r.trigger(at);
                lowered = regs::trigger(&lowered, &code.window, &t);
                if !t.counts.ruled {
                    img.approximate.push(i as u32);
                }
            }
            Lowering::Collective(l) => {
                let image_offset = (w.at + cc::GID_MEMORY_WORD) as u64;
                lowered = collective(name, i, &mut img, image_offset, l, r)?;
                img.approximate.push(i as u32);
            }
        }
        w.put(&lowered);
        img.patches.push(patch(1));
    }
    w.put(&stream[copied * record..]);
    let main_len = (w.at - main_start) / record;
    let post = code.postamble(main_len as u32);
    for rec in &post.records {
        w.put(rec);
    }
    let post_start = (pre.len() + main_len) as u32;
    img.filler.extend(
        post.filler
            .iter()
            .map(|f| f.start + post_start..f.end + post_start),
    );
    let post = post.records;
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
            SectionSpan::new(Section::Preamble, 0, pre.len() as u32),
            SectionSpan::new(Section::Main, pre.len() as u32, main_len as u32),
            SectionSpan::new(Section::Postamble,
                (pre.len() + main_len) as u32,
                post.len() as u32,
            ),
        ],
    };
    Ok(img)
}

/// The record a collectives pseudo becomes (its memory operand, for a
/// global id stored, at `image_offset`).
fn collective(
    name: &str,
    index: usize,
    img: &mut EngineImage,
    image_offset: u64,
    l: CcLowering,
    r: &dyn Resolve,
) -> Result<[u8; 64], RelocError> {
    if let Some(record) = cc::fixed(&l) {
        return Ok(record);
    }
    let CcLowering::GlobalId { events, dest } = l else {
        unreachable!("every other lowering is fixed")
    };
    Ok(match dest {
        GidDest::Register(reg) => cc::gid_to_register(&events, reg, r.global_id()),
        GidDest::Memory(operand) => {
            let word = apply(name, index, OP_GID_LOAD, img, image_offset, operand, r)?
                .expect("a variable operand is rewritten");
            cc::gid_to_memory(&events, word, r.global_id())
        }
    })
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
    opcode: u8,
    img: &mut EngineImage,
    image_offset: u64,
    operand: Operand,
    r: &dyn Resolve,
) -> Result<Option<u64>, RelocError> {
    let in_record = |detail: String| RelocError::Instruction {
        engine: name.into(),
        index: index as u64,
        opcode,
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
    use crate::kbin::RingCounts;
    use crate::line::{Captured, CoreRole, DmaWindow, QueueShape};
    use crate::manifest::engine::EngineType;
    use crate::relocate::dma::decode_template;
    use crate::relocate::ipmap::PatchKind;

    /// [`lower`] of a stream for [`code`] against [`Fake`], into a buffer of
    /// its own.
    fn lower_owned(
        name: &str,
        stream: &[u8],
        relocations: &[Relocation],
        base: u64,
    ) -> Result<EngineImage, RelocError> {
        let records = (stream.len() / RECORD as usize) as u64;
        let code = code();
        let mut out = vec![0u8; image_len(records, relocations, &code) as usize];
        let mut img = lower(name, stream, relocations, base, &code, &Fake, &mut out)?;
        img.bytes = out.into();
        Ok(img)
    }

    /// pe on a second trn2 core under 2.30: 66 preamble and 11 postamble
    /// slots.
    fn code() -> RuntimeCode {
        RuntimeCode {
            line: Captured::V2_30,
            engine: EngineType::Pe,
            role: CoreRole::Second,
            act_tables: false,
            dve_tables: true,
            queues: Vec::new(),
            dynamic: QueueShape::NONE,
            window: DmaWindow::of(
                &crate::device::Geometry::for_arch(crate::Arch::Cayman),
                crate::ids::PCore(5),
            ),
        }
    }
    const PRE: usize = 66;
    const POST: usize = 11;

    /// var 0 = SB at 0x5000_0000, var 4 = a weight at 0x1_0000, vars 1..3 = IO;
    /// ring `r` is queue `r + 3`, an IO queue, whose block `b` counts
    /// `b + 2` per ring on M2S and 3 on S2M (a transpose from block 7 on).
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
        fn rings(&self) -> &RingBases {
            static NONE: RingBases = RingBases {
                queues: Vec::new(),
                act_table: None,
                dve_table: None,
            };
            &NONE
        }
        fn trigger(&self, at: BlockRef) -> Trigger {
            Trigger {
                q_idx: at.ring() as u32 + 3,
                data: false,
                counts: RingCounts {
                    m2s: at.block() as u64 + 2,
                    s2m: 3,
                    ruled: at.block() < 7,
                },
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
            image_len(5, &relocs, &code()),
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
        assert_eq!(
            img.abs_operands.len(),
            1,
            "one ADDR8 (a trigger holds registers)"
        );
        // The trigger: queue 3 of core 5's window 0x801003080000, an IO
        // queue, so S2M (3) then M2S (7), its header kept, its block id gone.
        let t = &main[192..256];
        let word = |w: usize| u64::from_le_bytes(t[w * 8..w * 8 + 8].try_into().unwrap());
        assert_eq!(t[0], 0xA5);
        assert_eq!(&t[1..12], &c1[1..12]);
        assert_eq!(&t[12..16], &[4, 4, 0, 0]);
        assert_eq!(word(2), 0x8010_030a_4038);
        assert_eq!(word(3), 0x8010_0308_4038);
        assert_eq!((word(4), word(5), word(6), word(7)), (3, 7, 0, 0));
        assert!(img.approximate.is_empty());
        assert!(img.filler.is_empty(), "2.30's code is the runtime's bytes");
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
    fn a_trigger_without_a_rule_marks_its_record_approximate() {
        let mut c1 = rec(OP_PSEUDO_DMATRIGGER);
        c1[12..18].copy_from_slice(b"qSPIO0");
        let stream: Vec<u8> = [rec(0xB1), c1, c1].concat();
        let relocs = [
            Relocation::new(1, Lowering::Trigger(BlockRef::new(0, 1))),
            Relocation::new(2, Lowering::Trigger(BlockRef::new(0, 7))),
        ];
        let img = lower_owned("SP", &stream, &relocs, 0).unwrap();
        assert_eq!(img.approximate, vec![2], "only the transpose's record");
        let t = &img.bytes[(PRE + 2) * 64..(PRE + 3) * 64];
        assert_eq!(t[0], 0xA5, "rewritten all the same");
        assert_eq!(u64::from_le_bytes(t[40..48].try_into().unwrap()), 9);
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
    #[should_panic(expected = "the buffer for PE's image")]
    fn a_buffer_of_the_wrong_size_is_refused() {
        let code = code();
        let len = image_len(1, &[], &code) as usize;
        let mut out = vec![0u8; len - 64];
        let _ = lower("PE", &rec(0x47), &[], 0, &code, &Fake, &mut out);
    }

    #[test]
    fn an_empty_stream_is_preamble_and_postamble_only() {
        let img = lower_owned("PE", &[], &[], 0x4000).unwrap();
        assert_eq!(img.bytes.len(), (PRE + POST) * 64);
        assert_eq!(
            img.layout.sections[1],
            SectionSpan::new(Section::Main, PRE as u32, 0)
        );
    }
}
