//! Writer-built NEFFs for what the fixtures lack: trn1 static-DMA files in
//! the 2.0.99229 (PAX), 2.18 and pkg_version 1 formats, the `kelp.json` /
//! `kelf-a.json` naming, and an LNC-2 dynamic-DMA file with an idle graph.

use neffld::container::writer::Producer;
use neffld::kbin::isa;
use neffld::manifest::engine::{DmaOp, DveSlot};
use neffld::manifest::{EngineType, NrtDtype, TensorUsage, VarKind, VarOf};
use neffld::parse::{self, ParseOptions};
use neffld::Arch;
use neffld_testkit::Synth;

fn trn1() -> ParseOptions {
    ParseOptions::new(Arch::Sunda, 1)
}

fn trn2() -> ParseOptions {
    ParseOptions::new(Arch::Cayman, 2)
}

#[test]
fn static_sunda_parses_in_every_sunda_container_format() {
    for producer in [Producer::V2_0_99229, Producer::V2_18, Producer::Pkg1] {
        let neff = Synth::static_sunda().open(producer);
        let m = parse::parse(&neff, &trn1()).unwrap_or_else(|e| panic!("{producer:?}: {e}"));
        assert_eq!(m.kbins.len(), 1);
        let k = &m.kbins[0];
        assert_eq!(k.target(), Arch::Sunda);
        assert_eq!(k.dma_rings().len(), 4);
        let blocks: usize = k.dma_rings().iter().map(|r| r.blocks().len()).sum();
        assert_eq!(blocks, 5);
        let reload = k
            .dma_rings()
            .iter()
            .find(|r| r.queue().name == "qSPSpillReload0")
            .unwrap();
        assert_eq!(
            reload.blocks().iter().map(|b| b.id).collect::<Vec<_>>(),
            [0, 1],
            "blocks are kept in id order whatever the json order"
        );
        assert_eq!(reload.queue().kind.ring_type(), 6);
        let pool_reload = k
            .dma_rings()
            .iter()
            .find(|r| r.queue().name == "qPoolSpillReload0")
            .unwrap();
        assert_eq!(pool_reload.blocks()[0].descs[0].op, DmaOp::Cast);
        assert_eq!(pool_reload.semaphore(&pool_reload.blocks()[0]), Some(56));
        assert_eq!(
            k.engine(EngineType::Sp).census()[&isa::OP_PSEUDO_DMATRIGGER],
            3
        );
        assert_eq!(k.engine(EngineType::Pe).ninstr(), 1);
        // sunda: the single control table in its own slot, no fast/slow pair
        assert_eq!(
            k.dve_tables()[DveSlot::Control as usize]
                .as_ref()
                .unwrap()
                .len(),
            2048
        );
        assert!(k.dve_tables()[DveSlot::ControlFast as usize].is_none());
        assert_eq!(
            k.dve_tables()[DveSlot::Opcode as usize]
                .as_ref()
                .unwrap()
                .len(),
            2048
        );
        assert!(k.sb_carveouts().is_empty());
        assert!(k.fp8().is_none());
        assert!(k.default_ucode_lib_requested());
        assert_eq!(
            k.scratchpad().local,
            6144,
            "overlapping spills: extent, not sum"
        );
        assert_eq!(k.act_sets().len(), 1);
        assert_eq!(k.act_sets()[0].functions, ["exp_400p", "identity"]);
        let var = k.vars().by_name("identity_1").unwrap();
        let VarOf::File { weight: w, .. } = &var.of else {
            panic!("{:?}", var.of)
        };
        assert_eq!(w.payload.len(), 16384);
        assert_eq!(&w.payload.bytes(neff.archive())[..2], &[0x00, 0x3C]);
        let info = m.tensor_info();
        assert_eq!(info.len(), 2);
        assert_eq!(
            (
                info[0].name.as_str(),
                info[0].usage,
                info[0].dtype,
                info[0].size
            ),
            ("a", TensorUsage::Input, NrtDtype::Float16, 16384)
        );
        assert!(m.warnings().is_empty(), "{:?}", m.warnings());
    }
}

#[test]
fn kelp_json_and_kelf_a_naming_are_followed() {
    let mut s = Synth::static_sunda();
    s.rename("neff.json", "kelp.json");
    s.rename_kelf("kelf-a.json");
    let neff = s.open(Producer::V2_18);
    let m = parse::parse(&neff, &trn1()).unwrap();
    assert_eq!(m.manifest.neff_json.member, "kelp.json");
    assert_eq!(m.manifest.kelf.member, "kelf-a.json");
    // both present: neff.json wins
    let mut s = Synth::static_sunda();
    s.set("kelp.json", b"not json".to_vec());
    let m = parse::parse(&s.open(Producer::V2_18), &trn1()).unwrap();
    assert_eq!(m.manifest.neff_json.member, "neff.json");
}

#[test]
fn dynamic_cayman_resolves_addr8_and_keeps_the_idle_graph() {
    let neff = Synth::dynamic_cayman().open(Producer::V2_21);
    let m = parse::parse(&neff, &trn2()).unwrap();
    assert_eq!(m.kbins.len(), 2);
    let k = &m.kbins[0];
    assert_eq!(
        k.vars()
            .dge_table()
            .unwrap()
            .iter()
            .map(|v| v.0)
            .collect::<Vec<_>>(),
        [2, 1, 3]
    );
    assert_eq!(
        k.engine(EngineType::Sp).census()[&isa::OP_PSEUDO_DMA_DIRECT2D],
        3
    );
    assert_eq!(k.scratchpad().local, 512);
    assert_eq!(k.sb_carveouts().len(), 1);
    assert!(k.fp8().unwrap().ocp_sat);
    assert!(m.kbins[1].is_idle());
    assert_eq!(m.kbins[1].vars().count(VarKind::File), 1);
    assert_eq!(m.io().outputs.len(), 1, "two heads, one output");
    assert_eq!(m.io().input_order, ["q", "k"]);
    let names: Vec<_> = m.tensor_info().iter().map(|t| t.name.clone()).collect();
    assert_eq!(names, ["k", "q", "o"], "name order, inputs first");
}

#[test]
fn star_target_takes_the_instance_arch() {
    let mut s = Synth::static_sunda();
    s.edit("kelf-0.json", |v| v["target"] = "*".into());
    let m = parse::parse(
        &s.open(Producer::V2_18),
        &ParseOptions::new(Arch::Mariana, 1),
    )
    .unwrap();
    assert_eq!(m.kbins[0].target(), Arch::Mariana);
}

#[test]
fn legacy_override_accepts_a_cayman_neff_without_evtaccel() {
    let mut s = Synth::dynamic_cayman();
    for sg in ["sg00", "sg01"] {
        s.edit(&format!("{sg}/def.json"), |v| {
            v.as_object_mut()
                .unwrap()
                .remove("runtime_statebuffer_reservation");
        });
    }
    let neff = s.open(Producer::V2_21);
    let e = parse::parse(&neff, &trn2()).unwrap_err();
    assert!(e
        .to_string()
        .starts_with("Missing or corrupted runtime_statebuffer_reservation"));
    let mut o = trn2();
    o.allow_legacy_neff = true;
    let m = parse::parse(&neff, &o).unwrap();
    assert!(m.kbins[0].sb_carveouts().is_empty());
    assert!(m
        .warnings()
        .iter()
        .any(|w| w.contains("no evtaccel reservation")));
}

#[test]
fn remote_vars_bind_by_name_to_another_subgraph() {
    let mut s = Synth::dynamic_cayman();
    s.edit("sg01/def.json", |v| {
        v["var"]["v_sg0000"] = serde_json::json!({"type":"remote","var_id":5});
    });
    let m = parse::parse(&s.open(Producer::V2_21), &trn2()).unwrap();
    let b = &m.kbins[1].vars().remote_bindings();
    assert_eq!(b.len(), 1);
    assert_eq!((b[0].1.rel_sg, b[0].1.var_id.0), (0, 5));

    let mut s = Synth::dynamic_cayman();
    s.edit("sg01/def.json", |v| {
        v["var"]["nowhere"] = serde_json::json!({"type":"remote","var_id":5});
    });
    let e = parse::parse(&s.open(Producer::V2_21), &trn2()).unwrap_err();
    assert_eq!(e.status().code(), 2);
    assert!(
        e.to_string()
            .starts_with("Failed to resolve remote variables for subgraphs 0 to 1"),
        "{e}"
    );
}
