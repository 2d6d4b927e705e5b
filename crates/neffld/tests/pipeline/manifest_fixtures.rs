//! S2 on the real fixtures (families F4/F5): every manifest parses, and the
//! facts parse.md states about them hold.

use neffld::container::{self, Neff, OpenOptions};
use neffld::manifest::engine::DveSlot;
use neffld::manifest::tensor::tensor_info;
use neffld::manifest::{self, EngineType, NrtDtype, ParseOptions, TensorUsage, VarKind, VarOf};
use neffld::Arch;
use neffld_testkit as testkit;

fn fixture(name: &str) -> Neff {
    container::open(&testkit::fixture(name), &OpenOptions::default())
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Every real fixture, opened, by name.
fn all_fixtures() -> Vec<(String, Neff)> {
    let all = testkit::real_fixtures();
    assert_eq!(all.len(), 12);
    all.into_iter()
        .map(|(name, bytes)| {
            let neff = container::open(&bytes, &OpenOptions::default())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            (name, neff)
        })
        .collect()
}

fn trn2() -> ParseOptions {
    ParseOptions::new(Arch::Cayman, 2)
}

#[test]
fn every_fixture_manifest_parses() {
    for (name, neff) in all_fixtures() {
        let m = manifest::parse(&neff, &trn2()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(m.kelf.target, Arch::Cayman, "{name}");
        assert_eq!(m.kelf.member, "kelf-0.json");
        assert_eq!(m.subgraphs.len(), 2, "{name}");
        assert_eq!(m.io().outputs.len(), 1, "{name}: one output after collapse");
        for sg in &m.subgraphs {
            assert_eq!(sg.def.sb_carveouts.len(), 1, "{name}");
            assert!(sg.def.fp8.is_some(), "{name}");
            // cayman: four DVE tables, no sunda control table
            assert!(sg.engines.dve_tables[DveSlot::ControlFast as usize].is_some());
            assert!(sg.engines.dve_tables[DveSlot::Control as usize].is_none());
            for e in &sg.engines.engines {
                let instr = e.instr.as_ref().expect("every fixture stream has records");
                assert_eq!(instr.len() % 64, 0);
                assert!(e.blocks.is_empty(), "{name}: F4/F5 have no static DMA");
            }
        }
        assert!(
            m.warnings.is_empty(),
            "{name}: unexpected warnings {:?}",
            m.warnings
        );
    }
}

#[test]
fn matmul_small_io_maps_and_tensor_info() {
    let neff = fixture("matmul_small.neff");
    let m = manifest::parse(&neff, &trn2()).unwrap();
    let info = tensor_info(m.io());
    let got: Vec<_> = info
        .iter()
        .map(|t| (t.name.as_str(), t.usage, t.dtype, t.shape.clone(), t.size))
        .collect();
    assert_eq!(
        got,
        vec![
            (
                "x",
                TensorUsage::Input,
                NrtDtype::Float16,
                vec![128, 256],
                65536
            ),
            (
                "y",
                TensorUsage::Input,
                NrtDtype::Float16,
                vec![256, 128],
                65536
            ),
            (
                "output0",
                TensorUsage::Output,
                NrtDtype::Float16,
                vec![128, 128],
                32768
            ),
        ]
    );
    assert_eq!(m.io().input_order, ["x", "y"]);
    assert_eq!(m.io().output_order, ["output0"]);
    assert_eq!(NrtDtype::Float16.code(), 7);

    let sg0 = &m.subgraphs[0];
    assert_eq!(sg0.graph.sg_dir, "sg00");
    assert_eq!(sg0.def.vars.len(), 6);
    let dge = sg0.def.vars.by_name("DGETable0").unwrap();
    assert_eq!(dge.of.kind(), VarKind::DgeTable);
    assert_eq!(dge.of.kind().mr_type(), 10);
    let VarOf::DgeTable { items } = &dge.of else {
        panic!("{:?}", dge.of)
    };
    assert_eq!(items.iter().map(|v| v.0).collect::<Vec<_>>(), [1, 2, 3]);
    let w = sg0.def.vars.by_name("identity_82_sg0000").unwrap();
    let VarOf::File { weight, .. } = &w.of else {
        panic!("{:?}", w.of)
    };
    assert_eq!(weight.payload.len(), 32768);
    assert_eq!(weight.npy_descr.as_deref(), Some("<f2"));
    assert_eq!(w.alignment, Some(32768));
    // fp16 identity: 1.0 (0x3C00) on the diagonal
    let bytes = weight.payload.bytes(neff.archive());
    assert_eq!(&bytes[..2], &[0x00, 0x3C]);
    assert_eq!(sg0.engines.act_sets.len(), 1);
    assert_eq!(sg0.engines.act_sets[0].name, "exp_and_others");
    assert_eq!(sg0.engines.act_sets[0].functions.len(), 15);
    assert_eq!(sg0.engines.act_sets[0].bkt.len(), 30112);
    assert_eq!(sg0.engines.act_semaphore, Some(12));
    assert_eq!(sg0.def.queues.len(), 2);
    assert_eq!(sg0.def.queues["qSPDynamicHW"].owner, EngineType::Sp);
    assert_eq!(
        sg0.engines.engines[EngineType::Pe.index()]
            .instr
            .as_ref()
            .unwrap()
            .len(),
        12 * 64
    );
}

#[test]
fn matmul_large_has_a_4_gib_input_and_16_virtual_vars() {
    let neff = fixture("matmul_large.neff");
    let m = manifest::parse(&neff, &trn2()).unwrap();
    assert_eq!(m.io().inputs["y"].size, 4_294_967_296);
    assert_eq!(m.io().inputs["x"].size, 8_388_608);
    assert_eq!(m.io().outputs["output0"].size, 16_777_216);
    let sg0 = &m.subgraphs[0];
    assert_eq!(sg0.def.vars.len(), 22);
    let virtuals: Vec<_> = sg0
        .def
        .vars
        .iter()
        .filter(|v| v.of.kind() == VarKind::Virtual)
        .collect();
    assert_eq!(virtuals.len(), 16);
    assert!(virtuals
        .iter()
        .all(|v| matches!(v.of, VarOf::Virtual { size, .. } if size == 512 * 1024)));
    assert_eq!(sg0.def.vars.by_name("DGETable0").unwrap().id.0, 21);
    assert_eq!(sg0.def.queues.len(), 3);
}

#[test]
fn kfusion_fused_files_keep_the_permuted_dge_list_and_an_idle_sg01() {
    for (name, neff) in all_fixtures() {
        if !name.starts_with("kfusion__") {
            continue;
        }
        let m = manifest::parse(&neff, &trn2()).unwrap();
        let list: Vec<u32> = m.subgraphs[0]
            .def
            .vars
            .iter()
            .find_map(|v| match &v.of {
                VarOf::DgeTable { items } => Some(items),
                _ => None,
            })
            .unwrap()
            .iter()
            .map(|v| v.0)
            .collect();
        if name.contains("__fused") {
            assert_eq!(list, [3, 1, 2, 4], "{name}");
        } else {
            assert!(
                list == [1, 2, 3, 4] || list == [1, 2, 3],
                "{name}: {list:?}"
            );
        }
        let idle = &m.subgraphs[1];
        assert!(idle.def.queues.is_empty(), "{name}");
        assert!(idle.engines.act_sets.is_empty(), "{name}");
        assert!(idle
            .def
            .vars
            .iter()
            .all(|v| !matches!(v.of, VarOf::DgeTable { .. } | VarOf::Virtual { .. })));
        for e in &idle.engines.engines {
            assert_eq!(
                e.instr.as_ref().unwrap().len(),
                128,
                "{name}: idle streams are [B1, CC]"
            );
        }
    }
}

#[test]
fn arch_gate_rejects_a_cayman_neff_on_trn1_unless_overridden() {
    let neff = fixture("matmul_small.neff");
    let e = manifest::parse(&neff, &ParseOptions::new(Arch::Sunda, 2)).unwrap_err();
    assert_eq!(e.status().code(), 2);
    assert!(
        e.to_string().starts_with(
            "Loading a NEFF compiled for a different arch is not allowed, NEFF arch: v3, instance arch: v2"
        ),
        "{e}"
    );
    let mut opts = ParseOptions::new(Arch::Sunda, 2);
    opts.allow_legacy_neff = true;
    let m = manifest::parse(&neff, &opts).unwrap();
    assert!(m.warnings.iter().any(|w| w.contains("different arch")));
}
