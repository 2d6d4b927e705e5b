//! The whole pipeline (S0–S5) on the real fixtures and on writer-built NEFFs:
//! loads land where they should, pass the staged-model validator, and leave
//! nothing behind when unloaded or when they fail.

use std::sync::Arc;

use neffld::api::{Runtime, TensorUsage};
use neffld::comm::Join;
use neffld::config::{Libnrt, Loader, RuntimeConfig, Topology};
use neffld::container::writer::Producer;
use neffld::container::{self, OpenOptions};
use neffld::device::{FaultPlan, Geometry, SimDevice};
use neffld::ids::VarId;
use neffld::parse::ParseOptions;
use neffld::relocate::dma::decode_template;
use neffld::stage::Placement;
use neffld::{Arch, NrtStatus};
use neffld_testkit::beyond_start;
use neffld_testkit::{fixture, real_fixtures, Synth};

fn runtime(arch: Arch) -> (Runtime, Arc<SimDevice>) {
    let dev = Arc::new(SimDevice::new(Geometry::for_arch(arch)));
    let cfg = RuntimeConfig {
        topology: Topology {
            arch,
            ..Default::default()
        },
        loader: Loader {
            check: true,
            ..Default::default()
        },
        ..Default::default()
    };
    (Runtime::with_device(cfg, dev.clone()).unwrap(), dev)
}

#[test]
fn every_fixture_loads_validates_and_unloads_cleanly() {
    let (rt, dev) = runtime(Arch::Cayman);
    for (name, bytes) in real_fixtures() {
        let m = rt
            .load(&bytes, None)
            .unwrap_or_else(|e| panic!("{name}: {e} [{}]", e.status()));
        let cores = rt
            .with_model(&m, |lm| {
                lm.cores.iter().map(|c| c.pcore().0).collect::<Vec<_>>()
            })
            .unwrap();
        assert_eq!(cores, vec![0, 1], "{name}: LNC 2 on logical core 0");
        assert!(!beyond_start(&*dev).is_empty());
        rt.unload(&m).unwrap();
        assert_eq!(
            beyond_start(&*dev).len(),
            0,
            "{name}: {:?}",
            dev.live_allocations()
        );
        assert_eq!(rt.loaded_models(), 0);
    }
}

#[test]
fn matmul_small_tensor_info_is_what_nkipy_binds() {
    let (rt, _dev) = runtime(Arch::Cayman);
    let m = rt.load(&fixture("matmul_small.neff"), None).unwrap();
    let t = rt.tensor_info(&m).unwrap();
    let summary: Vec<(&str, TensorUsage, u64, u32, Vec<u32>)> = t
        .iter()
        .map(|t| {
            (
                t.name.as_str(),
                t.usage,
                t.size,
                t.dtype.code(),
                t.shape.clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("x", TensorUsage::Input, 65536, 7, vec![128, 256]),
            ("y", TensorUsage::Input, 65536, 7, vec![256, 128]),
            ("output0", TensorUsage::Output, 32768, 7, vec![128, 128]),
        ]
    );
    assert_eq!(m.name, "file.neff");
    rt.with_model(&m, |lm| assert_eq!(lm.mac_count, 4_194_304))
        .unwrap();
    rt.unload(&m).unwrap();
}

#[test]
fn weights_and_images_are_readable_at_their_device_addresses() {
    let (rt, dev) = runtime(Arch::Cayman);
    let bytes = fixture("matmul_small.neff");
    let m = rt.load(&bytes, None).unwrap();
    rt.with_model(&m, |lm| {
        for (k, core) in lm.cores.iter().enumerate() {
            // var 4 is the fp16 identity constant: 1.0 (0x3C00) on the diagonal.
            let Placement::Hbm { pa, size } = core.plan.vars[4] else {
                panic!("{:?}", core.plan.vars[4])
            };
            assert_eq!(size, 32768);
            assert_eq!(pa % 32768, 0, "the var's alignment");
            let mut w = vec![0u8; 32768];
            dev.read_pa(neffld::ids::Pa(pa), &mut w).unwrap();
            for i in 0..128usize {
                let at = (i * 128 + i) * 2;
                assert_eq!(&w[at..at + 2], &[0x00, 0x3C], "diagonal {i}");
            }
            assert_eq!(
                core.plan.vars[1],
                Placement::Io,
                "inputs are not allocated at load"
            );
            // Instruction images: the PE image holds the runtime's preamble
            // (67 slots on a first core, 66 on a second), the 11 records
            // (label deleted) and its 11-slot postamble.
            let pe = &core.engines[0];
            let pre = if k == 0 { 67 } else { 66 };
            assert_eq!(pe.image.bytes.len(), (pre + 11 + 11) * 64);
            let mut img = vec![0u8; pe.image.bytes.len()];
            dev.read_pa(neffld::ids::Pa(pe.pa), &mut img).unwrap();
            assert_eq!(img[..], pe.image.bytes[..]);
            assert_eq!(pe.pa % 0x8000, 0);
        }
    })
    .unwrap();
    rt.unload(&m).unwrap();
}

#[test]
fn matmul_large_stages_its_scratchpad_without_allocating_the_4gib_input() {
    let (rt, dev) = runtime(Arch::Cayman);
    let m = rt.load(&fixture("matmul_large.neff"), None).unwrap();
    rt.with_model(&m, |lm| {
        for core in &lm.cores {
            let scratch = core
                .plan
                .vars
                .iter()
                .filter(|p| matches!(p, Placement::Scratchpad { .. }))
                .count();
            assert_eq!(scratch, 16, "16 virtual spill vars in shared pages");
            assert_eq!(
                core.plan.scratch_pages(),
                1,
                "8 MiB fits one 64 MiB page of the contiguous region (the newest line)"
            );
        }
    })
    .unwrap();
    assert!(
        dev.stored_pages() < 4096,
        "host memory stays small: {} pages",
        dev.stored_pages()
    );
    let stats = neffld::report::MemoryStats::of_vnc(&rt, 0).unwrap();
    assert!(
        stats.used >= 2 * (64 << 20) && stats.used < 2 * (512 << 20),
        "two 64 MiB scratchpad pages charged, one per core: {stats:?}"
    );
    rt.unload(&m).unwrap();
    assert_eq!(beyond_start(&*dev).len(), 0);
}

#[test]
fn every_injected_allocation_or_write_failure_rolls_back_completely() {
    let (rt, dev) = runtime(Arch::Cayman);
    let bytes = fixture("matmul_small.neff");
    // Count the operations of one clean load.
    let m = rt.load(&bytes, None).unwrap();
    let allocs = beyond_start(&*dev).len() as u64;
    rt.unload(&m).unwrap();
    assert!(allocs > 10);
    for k in 1..=allocs {
        dev.set_fault_plan(FaultPlan {
            fail_alloc_at: Some(k),
            ..FaultPlan::default()
        });
        let e = rt.load(&bytes, None).unwrap_err();
        assert_eq!(e.status(), NrtStatus::Resource, "alloc {k}: {e}");
        assert_eq!(
            beyond_start(&*dev).len(),
            0,
            "alloc {k}: {:?}",
            dev.live_allocations()
        );
        assert_eq!(rt.loaded_models(), 0);
    }
    for k in 1..=6 {
        dev.set_fault_plan(FaultPlan {
            fail_write_at: Some(k),
            ..FaultPlan::default()
        });
        let e = rt.load(&bytes, None).unwrap_err();
        assert_eq!(e.status(), NrtStatus::Failure, "write {k}: {e}");
        assert_eq!(beyond_start(&*dev).len(), 0, "write {k}");
    }
    dev.set_fault_plan(FaultPlan::default());
    // The logical core was released every time: a load still gets core 0.
    let m = rt.load(&bytes, None).unwrap();
    assert_eq!(m.vnc, 0);
    rt.unload(&m).unwrap();
}

#[test]
fn guard_statuses() {
    let (rt, _dev) = runtime(Arch::Cayman);
    let bytes = fixture("matmul_small.neff");
    assert_eq!(
        rt.load(&bytes[..100], None).unwrap_err().status(),
        NrtStatus::Invalid
    );
    assert_eq!(
        rt.load(&bytes, Some(99)).unwrap_err().status(),
        NrtStatus::Invalid
    );
    // Every logical core taken → the next -1 load has no core.
    let models: Vec<_> = (0..rt.visible_vnc_count())
        .map(|_| rt.load(&bytes, None).unwrap())
        .collect();
    assert_eq!(
        rt.load(&bytes, None).unwrap_err().status(),
        NrtStatus::LoadNotEnoughNc
    );
    // An explicit core may be shared.
    let shared = rt.load(&bytes, Some(0)).unwrap();
    assert_eq!(shared.vnc, 0);
    rt.unload(&shared).unwrap();
    assert_eq!(
        rt.unload(&shared).unwrap_err().status(),
        NrtStatus::InvalidHandle,
        "double unload"
    );
    for m in &models {
        rt.unload(m).unwrap();
    }
    rt.close();
    assert_eq!(
        rt.load(&bytes, None).unwrap_err().status(),
        NrtStatus::Closed
    );
}

#[test]
fn a_trn2_neff_on_a_trn1_runtime_fails_the_lnc_gate() {
    let (rt, dev) = runtime(Arch::Sunda);
    let e = rt.load(&fixture("matmul_small.neff"), None).unwrap_err();
    assert_eq!(e.status(), NrtStatus::Invalid);
    // trn1 takes LNC 1 only: no advice to configure it for 2.
    let text = e.to_string();
    assert!(text.contains("declares logical-core size 2"), "{text}");
    assert!(!text.contains("NEURON_LOGICAL_NC_CONFIG=2"), "{text}");
    assert_eq!(beyond_start(&*dev).len(), 0);
}

#[test]
fn a_trn1_neff_on_a_trn2_runtime_fails_the_arch_gate() {
    let (rt, dev) = runtime(Arch::Cayman);
    let bytes = Synth::static_sunda().write(Producer::V2_18);
    let e = rt.load(&bytes, None).unwrap_err();
    assert_eq!(e.status(), NrtStatus::Invalid);
    assert!(
        e.to_string()
            .contains("different arch is not allowed, NEFF arch: v2, instance arch: v3"),
        "{e}"
    );
    assert_eq!(beyond_start(&*dev).len(), 0);
}

/// A trn1 NEFF with static DMA blocks and `0xC1` triggers, in every
/// container family, staged on trn1 (runtime 2.23 by default): rings are
/// built, triggers become the runtime's register writes, IO endpoints
/// become templates.
#[test]
fn static_dma_neffs_load_on_trn1_in_every_producer_family() {
    // The sunda producers' container formats (2.21+ writes cayman headers).
    for p in [Producer::V2_0_99229, Producer::V2_18, Producer::Pkg1] {
        let (rt, dev) = runtime(Arch::Sunda);
        let bytes = Synth::static_sunda().write(p);
        let m = rt
            .load(&bytes, None)
            .unwrap_or_else(|e| panic!("{p:?}: {e}"));
        rt.with_model(&m, |lm| {
            assert_eq!(lm.cores.len(), 1);
            let core = &lm.cores[0];
            let mut queues: Vec<&str> = core.rings.iter().map(|r| r.queue.as_str()).collect();
            queues.sort();
            assert_eq!(
                queues,
                ["qPoolIO0", "qPoolSpillReload0", "qSPIO0", "qSPSpillReload0"]
            );
            // The IO ring of SP loads input `a` (var 1): its TX side is a template.
            let sp_io = core.rings.iter().find(|r| r.queue == "qSPIO0").unwrap();
            let (tx, rx) = sp_io.image.descriptors();
            assert_eq!(decode_template(tx[0].buf_ptr), Some((VarId(1), 0)));
            assert_eq!(decode_template(tx[1].buf_ptr), Some((VarId(1), 128)));
            assert!(
                decode_template(rx[0].buf_ptr).is_none(),
                "the SB side is absolute"
            );
            // The SP image: its first trigger starts the weight load.
            let sp = core
                .engines
                .iter()
                .find(|e| e.engine.key() == "sp")
                .unwrap();
            // The 2.23 preamble of sp: 12 slots, + 13 for its IO queue, + 14
            // for its data queue = 39; then SET_ORDERING_MODE, then the
            // trigger of qSPSpillReload0 (queue 1: data queues come first,
            // pool's before sp's), a data queue: one M2S write of
            // 0x0ffff1000000 + 0x1000 · 2 + 0x38 with its count, 3 (a
            // contiguous two-dimensional weight side).
            let rec = &sp.image.bytes[40 * 64..41 * 64];
            let word = |w: usize| u64::from_le_bytes(rec[w * 8..w * 8 + 8].try_into().unwrap());
            assert_eq!(rec[0], 0xA5);
            assert_eq!(
                (word(2), word(3), word(4), word(5)),
                (0x0fff_f100_2038, 0, 3, 0)
            );
            // The sunda control table and the activation tables were staged.
            let tables: Vec<&str> = core.tables.iter().map(|t| t.what.as_str()).collect();
            assert!(tables.contains(&"dve control_table"), "{tables:?}");
            assert!(tables.contains(&"act bkt"), "{tables:?}");
            // 2.23 has no table-load rings of its own (no DMA Rings
            // Runtime row in its captures).
            assert!(!tables.contains(&"ring qActTable"), "{tables:?}");
            // Each ring holds the descriptor pairs the sealed kbin counted,
            // which are those of the synth's patterns: 128 runs of 128
            // bytes per IO block, one 4096-byte run per spill block.
            let parsed = neffld::parse::parse(
                &container::open(&bytes, &OpenOptions::default()).unwrap(),
                &ParseOptions::new(Arch::Sunda, 1),
            )
            .unwrap();
            for ring in parsed.kbins[0].dma_rings() {
                let want = match ring.queue().name.as_str() {
                    "qSPIO0" | "qPoolIO0" => 128,
                    "qSPSpillReload0" => 1 + 128,
                    "qPoolSpillReload0" => 1,
                    q => panic!("unexpected queue {q}"),
                };
                assert_eq!(ring.descriptors(), want, "{}", ring.queue().name);
                let staged = core
                    .rings
                    .iter()
                    .find(|r| r.queue == ring.queue().name)
                    .unwrap();
                let pairs: u32 = staged.image.blocks.iter().map(|b| b.2).sum();
                assert_eq!(pairs, want, "{}", ring.queue().name);
            }
        })
        .unwrap();
        rt.unload(&m).unwrap();
        assert_eq!(beyond_start(&*dev).len(), 0, "{p:?}");
    }
}

#[test]
fn dynamic_dma_neff_loads_on_trn2_with_an_idle_second_graph() {
    let (rt, dev) = runtime(Arch::Cayman);
    let bytes = Synth::dynamic_cayman().write(Producer::V2_21);
    let m = rt.load(&bytes, None).unwrap();
    rt.with_model(&m, |lm| {
        assert_eq!(lm.cores.len(), 2);
        let io: usize = lm.cores[0]
            .engines
            .iter()
            .map(|e| e.image.io_operands.len())
            .sum();
        assert!(io > 0, "mode 0x20 operands stay templates");
        assert!(lm.cores[1].rings.is_empty(), "the idle graph has no queue");
    })
    .unwrap();
    rt.unload(&m).unwrap();
    assert_eq!(beyond_start(&*dev).len(), 0);
}

#[test]
fn collectives_loads_need_the_root_communicator_and_record_the_global_id() {
    let bytes = fixture("matmul_small.neff");
    let (rt, _dev) = runtime(Arch::Cayman);
    let e = rt.load_collectives(&bytes, None, 0, 2).unwrap_err();
    assert_eq!(e.status(), NrtStatus::Invalid);
    assert!(e.to_string().contains("NEURON_RT_ROOT_COMM_ID"), "{e}");
    let dev = Arc::new(SimDevice::new(Geometry::for_arch(Arch::Cayman)));
    let cfg = RuntimeConfig {
        libnrt: Libnrt {
            root_comm_id: Some("127.0.0.1:62182".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    let rt = Runtime::with_device(cfg, dev.clone()).unwrap();
    assert_eq!(
        rt.load_collectives(&bytes, None, 2, 2)
            .unwrap_err()
            .status(),
        NrtStatus::Invalid
    );
    let m = rt.load_collectives(&bytes, None, 1, 2).unwrap();
    assert_eq!(m.gid, Some(1));
    assert_eq!(
        rt.summary(&m).unwrap().join,
        Some(Join { rank: 1, world: 2 })
    );
    rt.unload(&m).unwrap();
    assert_eq!(beyond_start(&*dev).len(), 0);
}

/// A container handed in beside its bytes is held to them and to the
/// runtime's options: another NEFF's is refused, and a digest the runtime
/// requires is checked even when the caller's open did not check it.
#[test]
fn an_opened_container_is_held_to_its_bytes_and_the_runtimes_options() {
    let small = fixture("matmul_small.neff");
    let other = real_fixtures()
        .into_iter()
        .map(|(_, b)| b)
        .find(|b| b[..0x400] != small[..0x400])
        .expect("a second fixture");
    let rt = Runtime::new(RuntimeConfig::default()).unwrap();
    let foreign = container::open(&other, &OpenOptions::default()).unwrap();
    let e = rt.load_opened(&small, foreign, None).unwrap_err();
    assert_eq!(e.status(), NrtStatus::Invalid, "{e}");
    assert!(e.to_string().contains("not theirs"), "{e}");
    assert_eq!(rt.loaded_models(), 0);

    // The stored digest flipped: an open that does not check the hash
    // passes, a runtime that requires it does not.
    let mut bad = small.clone();
    bad[0xAC] ^= 0xFF;
    let checking = Runtime::new(RuntimeConfig {
        libnrt: Libnrt {
            validate_hash: true,
            ..Default::default()
        },
        ..Default::default()
    })
    .unwrap();
    let unchecked = container::open(&bad, &OpenOptions::default()).unwrap();
    let e = checking.load_opened(&bad, unchecked, None).unwrap_err();
    assert!(e.to_string().contains("mismatch"), "{e}");
    assert_eq!(e.status(), NrtStatus::Invalid);
    let fine = container::open(&small, &OpenOptions::default()).unwrap();
    let model = checking.load_opened(&small, fine, None).unwrap();
    checking.unload(&model).unwrap();
}
