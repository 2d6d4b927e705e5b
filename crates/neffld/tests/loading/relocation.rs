//! Relocation acceptance (stage.md §8): what lowering did to every engine
//! stream of every fixture, and the device-IP ↔ NEFF-IP map as a property.

use crate::common::*;
use neffld::container::writer::Producer;
use neffld::kbin::isa::{self, Addr8};
use neffld::relocate::ipmap::{
    ImageLayout, IpMapError, Patch, PatchKind, PatchList, Section, SectionSpan, RECORD,
};
use neffld::Arch;
use neffld_testkit::Synth;
use proptest::prelude::*;

/// What one engine stream became.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Counts {
    records: u64,
    slots: u64,
    insert: u64,
    modify: u64,
    delete: u64,
    abs: u64,
    io: u64,
    d4: u64,
    c1: u64,
    labels: u64,
    dge_operands: u64,
    static_operands: u64,
}

fn count_stream(stream: &[u8], c: &mut Counts) {
    for rec in stream.chunks_exact(64) {
        match rec[0] {
            isa::OP_PSEUDO_DMA_DIRECT2D => {
                c.d4 += 1;
                for at in [isa::D4_SRC, isa::D4_DST] {
                    match Addr8::decode(&rec[at..at + 8]).unwrap().mode {
                        isa::ADDR8_DGE_INDEX => c.dge_operands += 1,
                        isa::ADDR8_STATIC_VAR => c.static_operands += 1,
                        m => panic!("mode {m:#x}"),
                    }
                }
            }
            isa::OP_PSEUDO_DMATRIGGER => c.c1 += 1,
            isa::OP_PSEUDO_BRANCH_LABEL => c.labels += 1,
            _ => {}
        }
    }
}

/// Prints, per fixture, core and engine: NEFF records in, device slots out,
/// patches by kind, absolute operands, IO templates and ring descriptors;
/// and checks the accounting identities on every stream.
#[test]
fn relocation_counts_per_core_and_engine() {
    let mut neffs: Vec<(String, Vec<u8>, Arch)> = all_fixtures()
        .into_iter()
        .map(|(n, b)| (n, b, Arch::Cayman))
        .collect();
    neffs.push((
        "static_sunda (writer-built, trn1)".into(),
        Synth::static_sunda().write(Producer::V2_18),
        Arch::Sunda,
    ));
    for (name, bytes, arch) in neffs {
        let (rt, _dev) = runtime(arch);
        let lnc = if arch == Arch::Sunda { 1 } else { 2 };
        let (neff, parsed) = parse(&bytes, arch, lnc);
        let m = rt.load(&bytes, 0, 1).unwrap();
        println!("\n{name}");
        println!(
            "  {:<5} {:<4} {:>7} {:>6} {:>4} {:>4} {:>4} {:>4} {:>4}",
            "core", "eng", "records", "slots", "ins", "mod", "del", "abs", "io"
        );
        let per_core = rt
            .with_model(&m, |lm| {
                let mut out = Vec::new();
                for (core, kbin) in lm.cores.iter().zip(&parsed.kbins) {
                    let mut engines = Vec::new();
                    for e in &core.engines {
                        let prog = kbin.engine(e.engine);
                        let stream = prog
                            .instr()
                            .as_ref()
                            .map(|b| b.bytes(neff.archive()))
                            .unwrap_or(&[]);
                        let mut c = Counts {
                            records: prog.ninstr(),
                            slots: e.image.bytes.len() as u64 / RECORD,
                            abs: e.image.abs_operands.len() as u64,
                            io: e.image.io_operands.len() as u64,
                            ..Counts::default()
                        };
                        assert_eq!(stream.len() as u64, 64 * prog.ninstr(), "{name}");
                        count_stream(stream, &mut c);
                        let mut main_delta: i64 = 0;
                        for p in &e.image.patches.patches {
                            let k = match p.kind() {
                                PatchKind::Insert => &mut c.insert,
                                PatchKind::Modify => &mut c.modify,
                                PatchKind::Delete => &mut c.delete,
                            };
                            *k += 1;
                            main_delta += i64::from(p.device_count) - i64::from(p.neff_count);
                        }
                        // Slots = records + what the patches added minus what they removed.
                        assert_eq!(
                            c.slots as i64,
                            c.records as i64 + main_delta,
                            "{name} {} {:?}",
                            core.subgraph,
                            e.engine
                        );
                        // Labels vanish; every 0xD4 and 0xC1 is rewritten in place.
                        assert_eq!(
                            c.delete, c.labels,
                            "{name} {} {:?}",
                            core.subgraph, e.engine
                        );
                        assert_eq!(
                            c.modify,
                            c.d4 + c.c1,
                            "{name} {} {:?}",
                            core.subgraph,
                            e.engine
                        );
                        // Preamble and postamble are the two inserts of every image.
                        assert_eq!(c.insert, 2, "{name}");
                        // Mode 0x20 operands stay templates; mode 0x10 ones are
                        // absolute (triggers hold registers, not memory).
                        assert_eq!(
                            c.io, c.dge_operands,
                            "{name} {} {:?}",
                            core.subgraph, e.engine
                        );
                        assert_eq!(
                            c.abs,
                            c.static_operands,
                            "{name} {} {:?}",
                            core.subgraph,
                            e.engine
                        );
                        engines.push((e.engine, c));
                    }
                    let descs: u64 = core
                        .rings
                        .iter()
                        .flat_map(|r| r.image.blocks.iter().map(|b| u64::from(b.2)))
                        .sum();
                    let slots: usize = core.rings.iter().map(|r| r.image.capacity).sum();
                    for (ty, c) in &engines {
                        println!(
                            "  {:<5} {:<4} {:>7} {:>6} {:>4} {:>4} {:>4} {:>4} {:>4}",
                            core.subgraph,
                            ty.key(),
                            c.records,
                            c.slots,
                            c.insert,
                            c.modify,
                            c.delete,
                            c.abs,
                            c.io,
                        );
                    }
                    println!(
                        "  {:<5} rings: {} queues, {descs} descriptor pairs emitted, {slots} ring slots per side",
                        core.subgraph,
                        core.rings.len()
                    );
                    out.push((core.subgraph.clone(), engines, descs));
                }
                out
            })
            .unwrap();
        if name == "matmul_small.neff" {
            let (_, engines, descs) = &per_core[0];
            let pool = engines.iter().find(|(t, _)| t.key() == "pool").unwrap().1;
            assert_eq!(pool.d4, 4, "four 0xD4 records in sg00 Pool");
            assert_eq!(pool.modify, 4, "lowered in place");
            assert_eq!(pool.delete, 1, "the label is deleted");
            assert_eq!(
                pool.slots,
                pool.records - 1 + 62 + 11,
                "minus the label, plus the runtime's 62 + 11 slots on a first core"
            );
            assert_eq!(*descs, 0, "dynamic DMA: no static ring descriptors");
            let pe = engines.iter().find(|(t, _)| t.key() == "pe").unwrap().1;
            assert_eq!(pe.slots, 67 + 11 + 11);
            let io: u64 = engines.iter().map(|(_, c)| c.io).sum();
            assert!(io > 0, "x, y and output0 are bound per execution");
        }
        if arch == Arch::Sunda {
            let (_, engines, descs) = &per_core[0];
            let sp = engines.iter().find(|(t, _)| t.key() == "sp").unwrap().1;
            assert_eq!(
                (sp.c1, sp.modify, sp.abs),
                (3, 3, 0),
                "three triggers rewritten, holding registers, not addresses"
            );
            let pool = engines.iter().find(|(t, _)| t.key() == "pool").unwrap().1;
            assert_eq!((pool.c1, pool.delete), (2, 0));
            // Five blocks, one descriptor pair per innermost run: 128 rows
            // for each of the two IO blocks and the weight, one for each spill.
            assert_eq!(*descs, 3 * 128 + 2);
        }
        rt.unload(&m).unwrap();
    }
}

fn section_patch(neff_index: u32, neff_count: u32, device_count: u32) -> Patch {
    Patch {
        section: Section::Main,
        neff_index,
        neff_count,
        device_count,
    }
}

/// A well-formed MAIN patch list over a stream of `n` records, as lowering
/// produces it: in stream order, each record deleted, rewritten into 1..=4
/// slots or kept, with inserts between records; plus a reference model of
/// the device image (`Some(neff index)` per slot, `None` for a synthesized one).
fn arb_patches() -> impl Strategy<Value = (u64, PatchList, Vec<Option<u64>>)> {
    (0u32..60).prop_flat_map(|n| {
        (
            Just(n),
            proptest::collection::vec((0u8..6, 1u32..5, 0u32..3), n as usize + 1),
        )
            .prop_map(|(n, ops)| {
                let mut list = PatchList::default();
                let mut model = Vec::new();
                for (i, &(op, count, ins)) in ops.iter().enumerate() {
                    let i = i as u32;
                    if ins > 0 && op % 2 == 0 {
                        list.push(section_patch(i, 0, ins));
                        model.extend(std::iter::repeat_n(None, ins as usize));
                    }
                    if i == n {
                        break;
                    }
                    match op {
                        0 => list.push(section_patch(i, 1, 0)),
                        1 => {
                            list.push(section_patch(i, 1, count));
                            model.extend(std::iter::repeat_n(Some(u64::from(i)), count as usize));
                        }
                        _ => model.push(Some(u64::from(i))),
                    }
                }
                (u64::from(n), list, model)
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The forward and backward maps agree with the reference model and
    /// with each other, and the errors fire exactly outside MAIN.
    #[test]
    fn ip_map_round_trips_and_bounds(
        (n, list, model) in arb_patches(),
        pre in 0u32..4,
        post in 0u32..4,
        base_slot in 0u64..(1 << 40),
        probe in 0u64..4096,
    ) {
        // Slot maps.
        for (slot, want) in model.iter().enumerate() {
            let got = list.device_to_neff(Section::Main, slot as u64);
            // A multi-slot rewrite maps each of its slots to the record.
            prop_assert_eq!(got, *want, "slot {}", slot);
        }
        for i in 0..n {
            let first = model.iter().position(|m| *m == Some(i));
            let fwd = list.neff_to_device(Section::Main, i);
            prop_assert_eq!(fwd, first.map(|s| s as u64), "record {}", i);
            if let Some(d) = fwd {
                prop_assert_eq!(list.device_to_neff(Section::Main, d), Some(i));
            }
        }
        // Device IPs through a layout: [pre | main | post].
        let main_len = model.len() as u32;
        let base = base_slot * RECORD;
        let layout = ImageLayout {
            base,
            sections: vec![
                SectionSpan::new(Section::Preamble, 0, pre),
                SectionSpan::new(Section::Main, pre, main_len),
                SectionSpan::new(Section::Postamble, pre + main_len, post),
            ],
        };
        let main_lo = base + u64::from(pre) * RECORD;
        let main_hi = main_lo + u64::from(main_len) * RECORD;
        for i in 0..n {
            let ip = list.neff_to_device_ip(&layout, Section::Main, i).unwrap();
            if let Some(ip) = ip {
                prop_assert!(ip >= main_lo && ip < main_hi);
                // Every byte of the record maps back to it.
                for off in [0, 1, 63] {
                    prop_assert_eq!(
                        list.device_ip_to_neff(&layout, ip + off),
                        Ok((Section::Main, Some(i)))
                    );
                }
            }
        }
        // Any IP: inside MAIN maps as the model says; outside is out of bounds.
        let span = u64::from(pre + main_len + post) * RECORD;
        let ip = base.saturating_sub(128) + probe % (span + 256);
        let got = list.device_ip_to_neff(&layout, ip);
        if ip >= main_lo && ip < main_hi {
            let slot = ((ip - main_lo) / RECORD) as usize;
            prop_assert_eq!(got, Ok((Section::Main, model[slot])));
        } else {
            prop_assert_eq!(got, Err(IpMapError::OutOfBounds(ip)));
        }
        // Without a MAIN section: bounds first (nothing is in bounds), and a
        // FUNCTION address, which needs the MAIN replay, names the missing section.
        let no_main = ImageLayout {
            base,
            sections: vec![SectionSpan::new(Section::Preamble, 0, pre), SectionSpan::new(Section::Postamble, pre, post)],
        };
        prop_assert_eq!(list.device_ip_to_neff(&no_main, ip), Err(IpMapError::OutOfBounds(ip)));
        let function_only = ImageLayout {
            base,
            sections: vec![SectionSpan::new(Section::Preamble, 0, pre), SectionSpan::new(Section::Function, pre, 4)],
        };
        let fip = base + u64::from(pre) * RECORD + probe % (4 * RECORD);
        prop_assert_eq!(
            list.device_ip_to_neff(&function_only, fip),
            Err(IpMapError::NoSection(Section::Main as u32))
        );
        prop_assert_eq!(
            list.neff_to_device_ip(&no_main, Section::Main, 0),
            Err(IpMapError::NoSection(Section::Main as u32))
        );
        prop_assert_eq!(
            list.neff_to_device_ip(&layout, Section::Function, 0),
            Err(IpMapError::NoSection(Section::Function as u32))
        );
    }
}

/// The two messages, as the reference prints them.
#[test]
fn ip_map_error_messages() {
    assert_eq!(
        IpMapError::OutOfBounds(0x1234).to_string(),
        "device_ip 0x1234 is out of bounds of main and function buffer"
    );
    assert_eq!(
        IpMapError::NoSection(3).to_string(),
        "Failed to find section 3 in the patch list"
    );
}

/// Addresses at the top of the address space do not overflow.
#[test]
fn ip_map_near_the_top_of_the_address_space() {
    let mut list = PatchList::default();
    list.push(section_patch(1, 1, 0));
    let base = u64::MAX - 63 - 10 * RECORD;
    let layout = ImageLayout {
        base,
        sections: vec![SectionSpan::new(Section::Main, 0, 10)],
    };
    assert_eq!(
        list.device_ip_to_neff(&layout, base),
        Ok((Section::Main, Some(0)))
    );
    assert_eq!(
        list.device_ip_to_neff(&layout, base + RECORD),
        Ok((Section::Main, Some(2)))
    );
    assert_eq!(
        list.device_ip_to_neff(&layout, u64::MAX),
        Err(IpMapError::OutOfBounds(u64::MAX))
    );
    assert_eq!(
        list.neff_to_device_ip(&layout, Section::Main, 2),
        Ok(Some(base + RECORD))
    );
    // Past the end of the address space there is no device address.
    let far = ImageLayout {
        base: u64::MAX - 63,
        sections: vec![SectionSpan::new(Section::Main, 0, 4)],
    };
    assert_eq!(
        list.neff_to_device_ip(&far, Section::Main, 3),
        Err(IpMapError::OutOfBounds(u64::MAX))
    );
    assert_eq!(
        list.neff_to_device_ip(&far, Section::Main, 1),
        Ok(None),
        "deleted"
    );
}
