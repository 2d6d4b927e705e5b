//! S3 on the real fixtures: kbins build, the opcode census of parse.md §8.2
//! holds, every ADDR8 operand resolves in bounds, idle subgraphs are valid.

use std::collections::BTreeMap;

use neffld::container::{self, Neff, OpenOptions};
use neffld::kbin::isa::{self, Addr8};
use neffld::kbin::Lowering;
use neffld::manifest::{EngineType, VarKind, VarOf};
use neffld::parse::{self, ParseOptions};
use neffld::Arch;
use neffld_testkit as testkit;

fn fixture(name: &str) -> Neff {
    container::open(&testkit::fixture(name), &OpenOptions::default()).unwrap()
}

fn opts() -> ParseOptions {
    ParseOptions::new(Arch::Cayman, 2)
}

fn census(pairs: &[(u8, u64)]) -> BTreeMap<u8, u64> {
    pairs.iter().copied().collect()
}

#[test]
fn every_fixture_seals_its_addr8_operands_as_the_stream_says() {
    let mut n = 0;
    for (name, bytes) in testkit::real_fixtures() {
        n += 1;
        let neff = container::open(&bytes, &OpenOptions::default()).unwrap();
        let m = parse::parse(&neff, &opts()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(m.kbins.len(), 2);
        // Decode every 0xD4 operand from the stream bytes and compare it
        // with the sealed relocation of that record (the DGE indirection
        // followed here by hand); count the modes.
        let mut modes = BTreeMap::new();
        for k in &m.kbins {
            assert_eq!(k.target(), Arch::Cayman);
            let dge: Vec<_> = k
                .vars()
                .iter()
                .filter_map(|v| match &v.of {
                    VarOf::DgeTable { items } => Some(items),
                    _ => None,
                })
                .collect();
            for e in k.engines() {
                let bytes = e.instr().unwrap().bytes(neff.archive());
                let relocs: BTreeMap<u32, Lowering> = e
                    .relocations()
                    .iter()
                    .map(|r| (r.record(), r.lowering()))
                    .collect();
                let mut pseudo = 0;
                for (i, r) in isa::records(bytes).enumerate() {
                    pseudo += usize::from(isa::is_pseudo(r[0]));
                    let Some((s, d)) = isa::d4_operands(r) else {
                        continue;
                    };
                    let want = |a: Addr8| {
                        let var = match a.mode {
                            isa::ADDR8_STATIC_VAR => u32::from(a.id),
                            _ => {
                                assert_eq!(dge.len(), 1, "{name}");
                                dge[0][usize::from(a.id)].0
                            }
                        };
                        (var, u64::from(a.offset))
                    };
                    let Some(Lowering::Direct { src, dst }) = relocs.get(&(i as u32)).copied()
                    else {
                        panic!("{name} {}: record {i} has no 0xD4 relocation", k.name());
                    };
                    assert_eq!((src.var().0, src.offset()), want(s), "{name} record {i}");
                    assert_eq!((dst.var().0, dst.offset()), want(d), "{name} record {i}");
                    for a in [s, d] {
                        *modes.entry(a.mode).or_insert(0u64) += 1;
                    }
                }
                assert_eq!(
                    relocs.len(),
                    pseudo,
                    "{name}: one relocation per pseudo record"
                );
            }
        }
        assert!(
            modes.keys().all(|&m| m == 0x10 || m == 0x20),
            "{name}: {modes:?}"
        );
        assert!(
            modes.contains_key(&0x20),
            "{name}: IO goes through the DGE list"
        );
    }
    assert_eq!(n, 12);
}

#[test]
fn matmul_small_census() {
    let neff = fixture("matmul_small.neff");
    let m = parse::parse(&neff, &opts()).unwrap();
    for k in &m.kbins {
        let c = |t: EngineType| k.engine(t).census().clone();
        assert_eq!(
            c(EngineType::Pe),
            census(&[(0xB1, 1), (0xCC, 1), (0xA0, 2), (0x01, 4), (0x02, 4)])
        );
        assert_eq!(
            c(EngineType::Sp),
            census(&[(0xB1, 1), (0xCC, 1), (0xD4, 1)])
        );
        assert_eq!(
            c(EngineType::Pool),
            census(&[(0xB1, 1), (0xCC, 1), (0xD4, 4), (0xA4, 1)])
        );
        assert_eq!(
            c(EngineType::Act),
            census(&[(0xB1, 1), (0xCC, 1), (0x23, 1), (0x46, 2)])
        );
        assert_eq!(c(EngineType::Dve), census(&[(0xB1, 1), (0xCC, 1)]));
        assert_eq!(k.engine(EngineType::Pe).ninstr(), 12);
        assert!(!k.is_idle());
        assert_eq!(k.vars().len(), 6);
        assert_eq!(k.scratchpad().local, 0);
        assert_eq!(k.dma_rings().len(), 2);
        assert_eq!(k.num_inputs(), 2);
        assert_eq!(k.num_outputs(), 1);
        assert!(!k.default_ucode_lib_requested(), "never on Cayman");
        assert_eq!(k.cc_num_streams(), 1, "top-level num_streams is absent");
        assert_eq!(k.sb_carveouts()[0].offset, 0x37FF8);
    }
    let info = m.tensor_info();
    assert_eq!(info.len(), 3);
    assert_eq!(info[2].name, "output0");
}

#[test]
fn matmul_large_census_and_scratchpad() {
    let neff = fixture("matmul_large.neff");
    let m = parse::parse(&neff, &opts()).unwrap();
    let k = &m.kbins[0];
    let c = |t: EngineType| k.engine(t).census().clone();
    assert_eq!(
        c(EngineType::Pe),
        census(&[
            (0xB1, 1),
            (0xCC, 1),
            (0xA0, 275),
            (0x01, 4352),
            (0x02, 16640)
        ])
    );
    assert_eq!(
        c(EngineType::Sp),
        census(&[(0xB1, 1), (0xCC, 1), (0xA0, 207), (0xD4, 240)])
    );
    assert_eq!(
        c(EngineType::Pool),
        census(&[(0xB1, 1), (0xCC, 1), (0xA0, 2742), (0xA4, 1), (0xD4, 4128)])
    );
    assert_eq!(
        c(EngineType::Act),
        census(&[
            (0xB1, 1),
            (0xCC, 1),
            (0x23, 1),
            (0x46, 22),
            (0x47, 47),
            (0xA0, 15),
            (0xD4, 16)
        ])
    );
    assert_eq!(
        c(EngineType::Dve),
        census(&[
            (0xB1, 1),
            (0xCC, 1),
            (0x41, 512),
            (0x46, 10),
            (0x47, 17),
            (0x49, 64),
            (0xA0, 496)
        ])
    );
    assert_eq!(k.engine(EngineType::Pe).ninstr(), 21269);
    assert_eq!(k.vars().count(VarKind::Virtual), 16);
    assert_eq!(k.scratchpad().local, 8 << 20);
    assert_eq!(k.scratchpad().shared, 0);
    assert_eq!(k.vars().len(), 22);
    // sg01 has the same counts (§8.2)
    for t in EngineType::ALL {
        assert_eq!(m.kbins[1].engine(t).census(), k.engine(t).census());
    }
}

#[test]
fn kfusion_sg01_is_idle_and_valid() {
    let neff = fixture("kfusion__fused_attention__fused.neff");
    let m = parse::parse(&neff, &opts()).unwrap();
    assert!(!m.kbins[0].is_idle());
    let idle = &m.kbins[1];
    assert!(idle.is_idle());
    assert!(idle.dma_rings().is_empty());
    assert!(idle.act_sets().is_empty());
    assert_eq!(idle.scratchpad().local, 0);
    assert!(
        idle.vars().count(VarKind::File) >= 1,
        "idle graphs still stage weights"
    );
    let dge = m.kbins[0].vars().dge_table().unwrap();
    assert_eq!(dge.iter().map(|v| v.0).collect::<Vec<_>>(), [3, 1, 2, 4]);
}

#[test]
fn subgraph_count_must_fit_the_logical_core() {
    let neff = fixture("matmul_small.neff");
    let e = parse::parse(&neff, &ParseOptions::new(Arch::Cayman, 1)).unwrap_err();
    assert_eq!(e.status().code(), 2);
    assert_eq!(
        e.to_string(),
        "NEFF has 2 subgraphs, which do not fit one logical core of size 1"
    );
}
