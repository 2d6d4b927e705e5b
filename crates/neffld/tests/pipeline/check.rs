//! The staged-model check (`--check`) against tampered device memory, and
//! the DGE-table rule (issue 14): a relocation that lands in a neighbouring
//! variable is found and named; one rule decides how many `dge-table`
//! variables a mode-0x20 operand may see.

use crate::common::*;
use neffld::device::Device;
use neffld::kbin::isa::{self, Addr8};
use neffld::kbin::Lowering;
use neffld::relocate::instr::OP_DMA_DIRECT;
use neffld::relocate::ipmap::SectionSpan;
use neffld::stage::validate::validate;
use neffld::stage::Placement;
use neffld::{Arch, NrtStatus};
use neffld_testkit::{stream, Synth};
use serde_json::json;

/// Loads `bytes` on a simulated device of `arch`, then hands the device,
/// the sealed kbins and the staged cores to `f`.
fn staged(
    bytes: &[u8],
    arch: Arch,
    lnc: u32,
    f: impl FnOnce(&Device, &[neffld::kbin::Kbin], &neffld::api::LoadedModel),
) {
    let (rt, _dev) = runtime(arch);
    let (_neff, parsed) = parse(bytes, arch, lnc);
    let model = rt.load(bytes, -1, 1).expect("loads");
    rt.with_model(&model, |lm| {
        f(&**rt.devices().next().unwrap(), &parsed.kbins, lm)
    })
    .unwrap();
}

/// matmul_small (dynamic DMA: `0xD4` operands, IO through the DGE table).
fn with_staged(f: impl FnOnce(&Device, &[neffld::kbin::Kbin], &neffld::api::LoadedModel)) {
    staged(&fixture_bytes("matmul_small.neff"), Arch::Cayman, 2, f)
}

/// A static-DMA NEFF (`0xC1` triggers and rings): no real fixture has one.
fn with_rings(f: impl FnOnce(&Device, &[neffld::kbin::Kbin], &neffld::api::LoadedModel)) {
    let bytes = Synth::static_sunda().write(neffld::container::writer::Producer::V2_18);
    staged(&bytes, Arch::Sunda, 1, f)
}

/// The first absolute word lowering wrote into a record of `opcode`: its
/// image and byte offset there.
fn first_abs_word(
    core: &neffld::stage::CoreImage,
    opcode: u8,
) -> (&neffld::stage::PlacedImage, u64) {
    core.engines
        .iter()
        .find_map(|e| {
            e.image
                .abs_operands
                .iter()
                .find(|&&o| e.image.bytes[(o as usize / 64) * 64] == opcode)
                .map(|&o| (e, o))
        })
        .expect("an absolute word in such a record")
}

fn fixture_bytes(name: &str) -> Vec<u8> {
    std::fs::read(format!("{}/{name}", neffld_testkit::FIXTURES)).unwrap()
}

#[test]
fn an_untouched_staged_model_passes() {
    with_staged(|dev, kbins, lm| {
        let findings = validate(dev, kbins, &lm.cores);
        assert!(findings.is_empty(), "{findings:?}");
        // The check has something to check: resolved operands and triggers.
        let direct = kbins
            .iter()
            .flat_map(|k| k.engines().iter())
            .flat_map(|e| e.relocations())
            .filter(|r| matches!(r.lowering(), Lowering::Direct { .. }))
            .count();
        assert!(direct > 0);
    });
}

/// The defect: an operand aimed at another variable's allocation
/// of the same core passed, because any live allocation did.
#[test]
fn an_operand_moved_into_a_neighbouring_allocation_is_named() {
    with_staged(|dev, kbins, lm| {
        let core = &lm.cores[0];
        let kbin = &kbins[0];
        // The first absolute ADDR8 operand of any engine: a lowered 0xD4
        // record, which carries the device opcode 0xB8.
        let (placed, off) = first_abs_word(core, OP_DMA_DIRECT);
        let old = u64::from_le_bytes(
            placed.image.bytes[off as usize..off as usize + 8]
                .try_into()
                .unwrap(),
        );
        // A neighbour: another staged variable of the core, with its own allocation.
        let (neighbour, pa) = core
            .plan
            .vars
            .iter()
            .enumerate()
            .find_map(|(i, p)| match p {
                Placement::Hbm { pa, size } if *size > 0 && !(old >= *pa && old < pa + size) => {
                    Some((i, *pa))
                }
                _ => None,
            })
            .expect("another allocation on the core");
        let name = &kbin.vars().vars[neighbour].name;
        dev.write(placed.handle, off, &pa.to_le_bytes()).unwrap();
        let findings = validate(dev, kbins, &lm.cores);
        assert_eq!(findings.len(), 1, "{findings:?}");
        let what = &findings[0].what;
        // After the runtime's preamble, before any deletion.
        let record = (off / 64) as usize - placed.image.layout.sections[1].first as usize;
        assert_eq!(findings[0].subgraph, "sg00");
        assert!(
            what.contains(&format!("{} record", placed.engine.key()))
                && what.contains(&format!("it points into {name}"))
                && what.contains(&format!("{pa:#x}")),
            "{what}"
        );
        // The named record is a 0xD4 of the NEFF stream at or after that slot.
        let named: usize = what
            .split("record ")
            .nth(1)
            .and_then(|s| s.split(' ').next())
            .and_then(|s| s.parse().ok())
            .unwrap();
        assert!(named >= record, "{what}");
        // The named variable is the one the relocation resolved to.
        let want = kbin
            .engine(placed.engine)
            .relocations()
            .iter()
            .find(|r| r.record() as usize == named)
            .map(|r| r.lowering());
        let Some(Lowering::Direct { src, dst }) = want else {
            panic!("record {named} has no 0xD4 relocation: {want:?}")
        };
        let side = if off % 64 == isa::D4_SRC as u64 {
            src
        } else {
            dst
        };
        let var = &kbin.vars().get(side.var()).unwrap().name;
        assert!(what.contains(&format!("is not {var} + ")), "{what}");
        // Put it back: clean again.
        dev.write(placed.handle, off, &old.to_le_bytes()).unwrap();
        assert!(validate(dev, kbins, &lm.cores).is_empty());
    });
}

/// A `dge-table` operand of an input or output stays as the NEFF wrote it
/// (the captures); the check holds it to that row and offset.
#[test]
fn a_dge_operand_of_an_io_tensor_changed_on_the_device_is_named() {
    with_staged(|dev, kbins, lm| {
        let (placed, off) = lm
            .cores
            .iter()
            .flat_map(|c| c.engines.iter())
            .find_map(|e| {
                e.image.io_operands.iter().find_map(|io| {
                    let at = io.image_offset as usize;
                    Addr8::decode(&e.image.bytes[at..at + 8])
                        .is_some_and(|a| a.mode == isa::ADDR8_DGE_INDEX)
                        .then_some((e, io.image_offset))
                })
            })
            .expect("matmul_small moves its IO through the dge-table");
        let at = off as usize;
        let mut word = Addr8::decode(&placed.image.bytes[at..at + 8]).unwrap();
        let old = word.encode();
        word.offset += 64;
        dev.write(placed.handle, off, &word.encode()).unwrap();
        let findings = validate(dev, kbins, &lm.cores);
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert!(
            findings[0]
                .what
                .contains(&format!("dge-table row {}", word.id)),
            "{findings:?}"
        );
        dev.write(placed.handle, off, &old).unwrap();
        assert!(validate(dev, kbins, &lm.cores).is_empty());
    });
}

#[test]
fn a_trigger_moved_to_another_block_is_named() {
    with_rings(|dev, kbins, lm| {
        let core = &lm.cores[0];
        // The first rewritten trigger (the runtime's register write 0xA5)
        // of the NEFF's records.
        let (placed, off) = core
            .engines
            .iter()
            .find_map(|e| {
                let SectionSpan {
                    first: main,
                    slots: len,
                    ..
                } = e.image.layout.sections[1];
                (main..main + len)
                    .find(|&s| e.image.bytes[s as usize * 64] == 0xA5)
                    .map(|s| (e, u64::from(s) * 64))
            })
            .expect("a rewritten trigger");
        // Its first count + 1: the count of another block.
        let at = off as usize + 32;
        let count = u64::from_le_bytes(placed.image.bytes[at..at + 8].try_into().unwrap());
        dev.write(placed.handle, at as u64, &(count + 1).to_le_bytes())
            .unwrap();
        let findings = validate(dev, kbins, &lm.cores);
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert!(findings[0].what.contains("trigger holds"), "{findings:?}");
    });
}

#[test]
fn a_descriptor_moved_out_of_its_block_variables_is_named() {
    with_rings(|dev, kbins, lm| {
        let core = &lm.cores[0];
        let ring = core.rings.first().expect("a ring");
        // The first TX descriptor's buffer pointer (bytes 8..16) gets the
        // address of the ring's own last byte: inside a live allocation,
        // in none of the block's variables.
        let (tx, _) = ring.image.descriptors();
        assert!(!tx.is_empty());
        let bad = ring.pa + 8;
        dev.write(ring.handle, 8, &bad.to_le_bytes()).unwrap();
        let findings = validate(dev, kbins, &lm.cores);
        assert_eq!(findings.len(), 1, "{findings:?}");
        let what = &findings[0].what;
        assert!(
            what.contains(&format!("ring {} block", ring.queue)) && what.contains("tx[0]"),
            "{what}"
        );
    });
}

/// The DGE-table rule is the one of stage.md §8: a mode-0x20 operand needs
/// exactly one `dge-table` variable. The parse used to take the lowest of
/// several and the staging to refuse them, so `verify` and `load`
/// disagreed; now the parse refuses, with the status the load had.
#[test]
fn two_dge_tables_fail_the_parse_with_one_rule() {
    let mut s = Synth::dynamic_cayman();
    s.edit("sg00/def.json", |d| {
        let mut second = d["var"]["DGETable0"].clone();
        let n = d["var"].as_object().unwrap().len();
        second["var_id"] = json!(n);
        d["var"]["DGETable1"] = second;
    });
    let bytes = s.write(neffld::container::writer::Producer::V2_21);
    let neff = s.open(neffld::container::writer::Producer::V2_21);
    let e = neffld::parse::parse(&neff, &neffld::parse::ParseOptions::new(Arch::Cayman, 2))
        .unwrap_err();
    assert_eq!(e.status(), NrtStatus::Invalid);
    assert!(
        e.to_string()
            .contains("the subgraph has 2 dge-table variables; ADDR8 mode 0x20 needs exactly one"),
        "{e}"
    );
    let (rt, dev) = runtime(Arch::Cayman);
    let l = rt.load(&bytes, -1, 1).unwrap_err();
    let v = neffld::verify(
        &bytes,
        &neffld::settings::Settings::neff_own(neffld::config::RuntimeConfig::default()),
    )
    .unwrap_err();
    assert_eq!(
        (l.status(), v.status()),
        (NrtStatus::Invalid, NrtStatus::Invalid)
    );
    assert_eq!(l.to_string(), v.to_string());
    assert_eq!(beyond_start(&*dev).len(), 0);
    // Without a mode-0x20 operand, a second table is no one's concern.
    let sb = Addr8 {
        offset: 0,
        id: 0,
        reserved: 0,
        mode: isa::ADDR8_STATIC_VAR,
    };
    for member in ["sg00/SP.bin", "sg00/Pool.bin"] {
        s.set(member, stream(&[isa::encode::dma_direct2d(sb, sb)]));
    }
    let neff = s.open(neffld::container::writer::Producer::V2_21);
    let e = neffld::parse::parse(&neff, &neffld::parse::ParseOptions::new(Arch::Cayman, 2));
    assert!(
        !e.as_ref()
            .is_err_and(|e| e.to_string().contains("dge-table")),
        "{e:?}"
    );
}

/// One bound for an operand: `mem_ref_to_addr(var, offset, 1)`. The build
/// used to let an operand at offset 0 of a zero-size variable through and
/// the staging refuse it, so the parse passed what every load failed.
#[test]
fn an_operand_on_a_zero_size_variable_fails_the_parse_as_the_load() {
    let mut s = Synth::dynamic_cayman();
    s.edit("sg00/def.json", |d| d["var"]["v_sg0000"]["size"] = json!(0));
    let sb = |offset| Addr8 {
        offset,
        id: 0,
        reserved: 0,
        mode: isa::ADDR8_STATIC_VAR,
    };
    let spill = Addr8 {
        offset: 0,
        id: 5,
        reserved: 0,
        mode: isa::ADDR8_STATIC_VAR,
    };
    let io = Addr8 {
        offset: 0xFC,
        id: 2,
        reserved: 0,
        mode: isa::ADDR8_DGE_INDEX,
    };
    s.set(
        "sg00/Pool.bin",
        stream(&[
            isa::encode::dma_direct2d(sb(0x400), spill),
            isa::encode::dma_direct2d(sb(0x400), io),
        ]),
    );
    let neff = s.open(neffld::container::writer::Producer::V2_21);
    let e = neffld::parse::parse(&neff, &neffld::parse::ParseOptions::new(Arch::Cayman, 2))
        .unwrap_err();
    assert_eq!(e.status(), NrtStatus::Invalid);
    assert_eq!(
        e.to_string(),
        "invalid offset in v_sg0000, 0 <= 0 (instruction 0 of sg00/Pool.bin)"
    );
    let bytes = s.write(neffld::container::writer::Producer::V2_21);
    let (rt, dev) = runtime(Arch::Cayman);
    let l = rt.load(&bytes, -1, 1).unwrap_err();
    let v = neffld::verify(
        &bytes,
        &neffld::settings::Settings::neff_own(neffld::config::RuntimeConfig::default()),
    )
    .unwrap_err();
    assert_eq!(l.to_string(), e.to_string());
    assert_eq!(v.to_string(), e.to_string());
    assert_eq!(beyond_start(&*dev).len(), 0);
}
