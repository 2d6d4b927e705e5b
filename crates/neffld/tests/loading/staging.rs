//! Staging acceptance (stage.md §5, §6, §7): where subgraphs land, what is
//! readable at the addresses the model record holds, and the core-count
//! rejects.

use crate::common::*;
use neffld::container::writer::Producer;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use neffld::device::{Device, Geometry, Observer, SimDevice, Write};
use neffld::ids::{HModel, PCore, Pa};
use neffld::manifest::def::VarOf;
use neffld::stage::{
    self, Cores, Placement, ScratchpadMode, StageError, StageOptions, DEFAULT_FANOUT_MIN_BYTES,
};
use neffld::{Arch, NrtStatus};
use neffld_testkit::{lnc_writer, Synth};

/// Every fixture loads on trn2 logical cores 0, 1 and 3 at once; subgraph
/// `i` of logical core `L` is on physical core `2L + i`, and every HBM
/// placement is on the HBM channel of logical core `L`.
#[test]
fn every_fixture_stages_subgraph_i_on_physical_core_2l_plus_i() {
    let geometry = Geometry::for_arch(Arch::Cayman);
    for (name, bytes) in all_fixtures() {
        let (rt, dev) = runtime(Arch::Cayman);
        let (_neff, parsed) = parse(&bytes, Arch::Cayman, 2);
        let mut models = Vec::new();
        for vnc in [0u32, 1, 3] {
            let m = rt
                .load(&bytes, Some(vnc))
                .unwrap_or_else(|e| panic!("{name} on vnc {vnc}: {e} [{}]", e.status()));
            assert_eq!(m.vnc, vnc, "{name}");
            rt.with_model(&m, |lm| {
                assert_eq!(lm.cores.len(), parsed.kbins.len(), "{name}");
                let channel = geometry.hbm_of(PCore(2 * vnc)).unwrap();
                let lo = geometry.channel_base(channel).unwrap().0;
                let hi = lo + geometry.hbm_bytes_per_channel();
                for (i, core) in lm.cores.iter().enumerate() {
                    assert_eq!(core.pcore(), PCore(2 * vnc + i as u32), "{name} sg {i}");
                    assert_eq!(core.subgraph, parsed.kbins[i].name(), "{name} sg {i}");
                    for (id, p) in core.plan.vars.iter().enumerate() {
                        if let Placement::Hbm { pa, .. } | Placement::Scratchpad { pa, .. } = *p {
                            assert!(
                                (lo..hi).contains(&pa),
                                "{name} vnc {vnc} sg {i} var {id} at {pa:#x} is not on HBM {channel}"
                            );
                        }
                    }
                    for e in &core.engines {
                        assert!((lo..hi).contains(&e.pa), "{name}: image off HBM {channel}");
                    }
                    for r in &core.rings {
                        assert!((lo..hi).contains(&r.pa), "{name}: ring off HBM {channel}");
                    }
                }
            })
            .unwrap();
            models.push(m);
        }
        assert_eq!(rt.loaded_models(), 3);
        for m in &models {
            rt.unload(m).unwrap();
        }
        assert_eq!(
            beyond_start(&*dev).len(),
            0,
            "{name}: {:?}",
            dev.live_allocations()
        );
    }
}

/// A writer-built trn1 NEFF on each trn1 logical core: LNC 1, so logical
/// core `L` is physical core `L`, on HBM `L`.
#[test]
fn a_writer_built_trn1_neff_stages_on_each_trn1_core() {
    let (rt, dev) = runtime(Arch::Sunda);
    let bytes = Synth::static_sunda().write(Producer::V2_18);
    let a = rt.load(&bytes, Some(0)).unwrap();
    let b = rt.load(&bytes, Some(1)).unwrap();
    for (m, core) in [(&a, 0u32), (&b, 1)] {
        rt.with_model(m, |lm| {
            assert_eq!(lm.cores.len(), 1);
            assert_eq!(lm.cores[0].pcore(), PCore(core));
            assert_eq!(lm.cores[0].subgraph, "sg00");
        })
        .unwrap();
    }
    assert!(neffld::report::MemoryStats::of_vnc(&rt, 0).unwrap().used > 0);
    assert!(neffld::report::MemoryStats::of_vnc(&rt, 1).unwrap().used > 0);
    rt.unload(&a).unwrap();
    rt.unload(&b).unwrap();
    assert_eq!(beyond_start(&*dev).len(), 0);
}

/// A one-subgraph trn2 NEFF on an LNC-2 core uses only its first physical core.
#[test]
fn a_one_subgraph_neff_on_an_lnc2_core_uses_tpbs_0_only() {
    let (rt, dev) = runtime(Arch::Cayman);
    let bytes = write_with_lnc(&Synth::dynamic_cayman_n(1), 2, true);
    let m = rt.load(&bytes, Some(2)).unwrap();
    rt.with_model(&m, |lm| {
        assert_eq!(lm.cores.len(), 1);
        assert_eq!(lm.cores[0].pcore(), PCore(4));
    })
    .unwrap();
    assert!(beyond_start(&*dev).iter().all(|a| a.core == PCore(4)));
    rt.unload(&m).unwrap();
}

/// A trn2 NEFF that does not declare its LNC, on trn1: refused with status 2
/// by the arch gate (the LNC gate does not apply), nothing allocated.
#[test]
fn a_trn2_neff_on_trn1_fails_with_invalid() {
    let (rt, dev) = runtime(Arch::Sunda);
    let bytes = write_with_lnc(&Synth::dynamic_cayman(), 2, false);
    let e = rt.load(&bytes, None).unwrap_err();
    assert_eq!(e.status(), NrtStatus::Invalid, "{e}");
    assert_eq!(e.status().code(), 2);
    assert!(
        e.to_string()
            .contains("different arch is not allowed, NEFF arch: v3, instance arch: v2"),
        "{e}"
    );
    assert_eq!(beyond_start(&*dev).len(), 0);
    assert_eq!(rt.loaded_models(), 0);
    // The claim was released: both trn1 cores are still free.
    let ok = Synth::static_sunda().write(Producer::V2_18);
    let a = rt.load(&ok, None).unwrap();
    let b = rt.load(&ok, None).unwrap();
    assert_eq!((a.vnc, b.vnc), (0, 1));
}

/// More subgraphs than the logical core has physical cores. Through the
/// runtime the parse-side count check refuses it first (status 2); the
/// stage-time check of §5.3 gives the reference message when reached.
#[test]
fn more_subgraphs_than_physical_cores_fails_with_invalid() {
    // Two subgraphs on a custom one-core trn2 device (LNC 1).
    let geometry = Geometry::custom(Arch::Cayman, 1, 1, 1 << 30).unwrap();
    let (rt, dev) = runtime_on(geometry, Some(1));
    let bytes = write_with_lnc(&Synth::dynamic_cayman(), 2, false);
    let e = rt.load(&bytes, None).unwrap_err();
    assert_eq!(e.status(), NrtStatus::Invalid, "{e}");
    assert!(e.to_string().contains("2 subgraphs"), "{e}");
    assert_eq!(beyond_start(&*dev).len(), 0);
    // Declared LNC 2 on an LNC-1 runtime: the LNC gate.
    let declared = write_with_lnc(&Synth::dynamic_cayman(), 2, true);
    let e = rt.load(&declared, None).unwrap_err();
    assert_eq!(e.status(), NrtStatus::Invalid, "{e}");

    // The staging check itself: two kbins, one physical core.
    let (neff, parsed) = parse(&bytes, Arch::Cayman, 2);
    let cores = Arc::new(Cores::new(1, ScratchpadMode::default()));
    let e = stage::stage(
        rt.devices().next().unwrap(),
        &cores,
        &parsed.kbins,
        neff.archive(),
        &[PCore(0)],
        HModel(1),
        StageOptions {
            arch: Arch::Cayman,
            line: neffld::line::Captured::V2_30,
            fanout_min_bytes: 0,
            global_id: 0,
        },
    )
    .unwrap_err();
    assert_eq!(
        e,
        StageError::InsufficientCores {
            required: 2,
            available: 1
        }
    );
    assert_eq!(
        e.to_string(),
        "Insufficient number of pncs, required 2, available 1"
    );
    assert_eq!(e.status(), NrtStatus::Invalid);
    assert_eq!(
        beyond_start(rt.devices().next().unwrap()).len(),
        0,
        "rejected before any allocation"
    );
    // Two subgraphs for a logical core of four: neither 1 nor the core
    // size. The one subgraph-count rule is the parse's, so no runtime of
    // LNC 4 gets as far as staging them.
    let e = neffld::parse::parse(&neff, &neffld::parse::ParseOptions::new(Arch::Cayman, 4))
        .unwrap_err();
    assert_eq!(e.status(), NrtStatus::Invalid, "{e}");
    assert_eq!(
        e.to_string(),
        "NEFF has 2 subgraphs, which do not fit one logical core of size 4"
    );
}

/// Read-back: every `file` var's bytes at its placement equal its `.npy`
/// payload; every engine image, ring and table is at the address its record
/// holds, and the image is the record's bytes.
#[test]
fn every_fixture_reads_back_weights_images_and_rings() {
    for (name, bytes) in all_fixtures() {
        let (rt, dev) = runtime(Arch::Cayman);
        let (neff, parsed) = parse(&bytes, Arch::Cayman, 2);
        let m = rt.load(&bytes, Some(1)).unwrap();
        let (mut files, mut images, mut rings) = (0, 0, 0);
        rt.with_model(&m, |lm| {
            for (core, kbin) in lm.cores.iter().zip(&parsed.kbins) {
                for var in kbin.vars().iter() {
                    let VarOf::File { size, ref weight } = var.of else {
                        continue;
                    };
                    let payload = weight.payload.bytes(neff.archive());
                    let Placement::Hbm { pa, size: placed } = core.plan.vars[var.id.0 as usize]
                    else {
                        panic!(
                            "{name}: {} is {:?}",
                            var.name, core.plan.vars[var.id.0 as usize]
                        )
                    };
                    assert_eq!(placed, size, "{name}: {}", var.name);
                    if let Some(a) = var.alignment {
                        assert_eq!(pa % a, 0, "{name}: {} alignment", var.name);
                    }
                    let mut got = vec![0u8; size as usize];
                    dev.read_pa(Pa(pa), &mut got).unwrap();
                    assert_eq!(
                        got.len().min(payload.len()),
                        size as usize,
                        "{name}: {} payload shorter than its size",
                        var.name
                    );
                    assert!(
                        got == payload[..size as usize],
                        "{name}: {} differs from its .npy payload",
                        var.name
                    );
                    files += 1;
                }
                for e in &core.engines {
                    assert_eq!(e.image.layout.base, e.pa, "{name}: layout base");
                    let mut got = vec![0u8; e.image.bytes.len()];
                    dev.read_pa(Pa(e.pa), &mut got).unwrap();
                    assert!(got[..] == e.image.bytes[..], "{name}: {:?} image", e.engine);
                    assert_eq!(e.pa % e.image.alignment(), 0, "{name}: image alignment");
                    images += 1;
                }
                for r in &core.rings {
                    let mut got = vec![0u8; r.image.bytes.len()];
                    dev.read_pa(Pa(r.pa), &mut got).unwrap();
                    assert!(got[..] == r.image.bytes[..], "{name}: ring {}", r.queue);
                    rings += 1;
                }
                for t in &core.tables {
                    let mut got = vec![0u8; t.len as usize];
                    dev.read_pa(Pa(t.pa), &mut got)
                        .unwrap_or_else(|e| panic!("{name}: table {}: {e}", t.what));
                }
            }
        })
        .unwrap();
        assert!(
            files > 0 && images > 0,
            "{name}: {files} weights, {images} images"
        );
        println!("{name}: {files} weights, {images} images, {rings} rings read back");
        rt.unload(&m).unwrap();
        assert_eq!(beyond_start(&*dev).len(), 0);
    }
}

/// Notes which threads wrote.
#[derive(Default)]
struct Writers(Mutex<BTreeSet<String>>);

impl Observer for Writers {
    fn writing(&self, _: &Write<'_>) {
        let id = format!("{:?}", std::thread::current().id());
        self.0.lock().unwrap().insert(id);
    }
}

/// What staging left on a device: every allocation by core, usage, size and
/// name, sorted (threaded builds on cores that share an HBM channel
/// interleave their allocations, so build addresses vary from run to run).
type Staged = Vec<(PCore, String, u64, String)>;

/// Stages `bytes` on logical core 0 of a trn2 device with the given fan-out
/// threshold; returns what it allocated, the per-core plans, and how many
/// threads wrote.
fn stage_with(bytes: &[u8], fanout_min_bytes: u64) -> (Staged, Vec<Vec<Placement>>, usize) {
    let (neff, parsed) = parse(bytes, Arch::Cayman, 2);
    let dev: Arc<Device> = Arc::new(SimDevice::new(Geometry::for_arch(Arch::Cayman)));
    let writers = Arc::new(Writers::default());
    dev.observe(writers.clone());
    let cores = Arc::new(Cores::new(8, ScratchpadMode::default()));
    let pcores: Vec<PCore> = (0..parsed.kbins.len() as u32).map(PCore).collect();
    let images = stage::stage(
        &dev,
        &cores,
        &parsed.kbins,
        neff.archive(),
        &pcores,
        HModel(1),
        StageOptions {
            arch: Arch::Cayman,
            line: neffld::line::Captured::V2_30,
            fanout_min_bytes,
            global_id: 0,
        },
    )
    .unwrap();
    let mut staged: Staged = dev
        .live_allocations()
        .into_iter()
        .map(|a| (a.core, format!("{:?}", a.usage), a.size, a.hint))
        .collect();
    staged.sort();
    let plans = images.iter().map(|i| i.plan.vars.clone()).collect();
    let writers = writers.0.lock().unwrap().len();
    (staged, plans, writers)
}

/// Below the fan-out threshold the core builds run on the caller's thread,
/// at or above it on one thread each; either way the plan (every variable's
/// address) is the same and the same allocations are made.
#[test]
fn builds_fan_out_only_above_the_threshold_and_stage_alike_either_way() {
    let mut multi = 0;
    for (name, bytes) in all_fixtures() {
        let (_, parsed) = parse(&bytes, Arch::Cayman, 2);
        let n = parsed.kbins.len();
        let bulk = stage::bulk_bytes(&parsed.kbins);
        assert!(
            bulk > 0 && bulk < DEFAULT_FANOUT_MIN_BYTES,
            "{name}: {bulk}"
        );
        let (threaded, threaded_plans, writers) = stage_with(&bytes, 0);
        let (inline, inline_plans, one) = stage_with(&bytes, DEFAULT_FANOUT_MIN_BYTES);
        assert_eq!(one, 1, "{name}: below the threshold one thread writes");
        if n > 1 {
            multi += 1;
            assert!(
                writers >= n,
                "{name}: {writers} threads wrote for {n} builds"
            );
        }
        assert_eq!(threaded, inline, "{name}: the modes allocated differently");
        assert_eq!(threaded_plans, inline_plans, "{name}: the plans differ");
    }
    assert!(multi > 0, "some fixture has several subgraphs");

    // 8 subgraphs of 2 MiB of weights reach the default threshold.
    let big = lnc_writer(8).write(&Synth::cayman_weights(8, 2 << 20).member_list());
    let (_, parsed) = parse(&big, Arch::Cayman, 8);
    assert!(stage::bulk_bytes(&parsed.kbins) >= DEFAULT_FANOUT_MIN_BYTES);
}

/// A weight large enough to be most of its payload is kept by reference to
/// the inflated payload rather than copied: it reads back as its `.npy`
/// payload, a write to it afterwards lands, and an unload frees every
/// allocation.
#[test]
fn a_large_weight_reads_back_from_the_payload_the_device_keeps() {
    let size = neffld::stage::core::WEIGHT_BY_REFERENCE_MIN as u64 + (1 << 20);
    let bytes = lnc_writer(1).write(&Synth::cayman_weights(1, size).member_list());
    let (neff, parsed) = parse(&bytes, Arch::Cayman, 1);
    let (rt, dev) = runtime_on(Geometry::for_arch(Arch::Cayman), Some(1));
    let pages_before = dev.stored_pages();
    let m = rt.load(&bytes, Some(0)).unwrap();
    let kbin = &parsed.kbins[0];
    let (var, weight) = kbin
        .vars()
        .iter()
        .find_map(|v| match &v.of {
            VarOf::File { size: s, weight } if *s == size => Some((v, weight)),
            _ => None,
        })
        .expect("the large weight");
    let payload = weight.payload.bytes(neff.archive());
    let (pa, handle) = rt
        .with_model(&m, |lm| {
            let plan = &lm.cores[0].plan;
            let Placement::Hbm { pa, .. } = plan.vars[var.id.0 as usize] else {
                panic!("{:?}", plan.vars[var.id.0 as usize])
            };
            let handle = plan
                .var_allocs
                .iter()
                .find(|(id, _)| *id == var.id)
                .unwrap()
                .1;
            (pa, handle)
        })
        .unwrap();
    let mut got = vec![0u8; size as usize];
    dev.read_pa(Pa(pa), &mut got).unwrap();
    assert!(got == payload[..size as usize], "the weight reads back");
    assert!(
        dev.stored_pages() - pages_before >= (size as usize).div_ceil(4096),
        "the weight's pages are held"
    );
    // The images and rings are held by reference too; the weight's pages
    // are among the shared ones until a write copies them out.
    let shared = dev.shared_pages();
    assert!(
        shared >= (size as usize).div_ceil(4096),
        "held by reference, not copied"
    );
    // A later write (as a tensor copy would be) changes the device's bytes.
    dev.write(handle, 4096, &[0xA5; 8]).unwrap();
    dev.read_pa(Pa(pa), &mut got).unwrap();
    assert_eq!(got[4096..4104], [0xA5; 8]);
    assert!(got[..4096] == payload[..4096] && got[4104..] == payload[4104..size as usize]);
    assert_eq!(
        shared - dev.shared_pages(),
        (size as usize).div_ceil(4096),
        "copied out by the write"
    );
    rt.unload(&m).unwrap();
    assert_eq!(beyond_start(&*dev).len(), 0);
}
