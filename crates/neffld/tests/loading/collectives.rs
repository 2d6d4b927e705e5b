//! Tensor-parallel NEFFs loaded: each collective's record lowered to the
//! runtime's one record (the doorbell, the rank-id load, the global id),
//! a PTC2's extension deleted with the instruction-pointer map kept, the
//! collectives listed by the load, on every world size the writer makes.

use neffld::api::Runtime;
use neffld::config::{Libnrt, RuntimeConfig, Topology};
use neffld::kbin::collective::UPDATE_INC_ON_COMPLETE;
use neffld::manifest::EngineType;
use neffld::relocate::collective as lowered;
use neffld::report::align::Fate;
use neffld::report::StagedView;
use neffld::Arch;
use neffld_testkit::collectives::{self as cc, Step, World};

use crate::common::runtime;

fn word(slot: &[u8], w: usize) -> u64 {
    u64::from_le_bytes(slot[w * 8..w * 8 + 8].try_into().unwrap())
}

/// The PE image's slot holding NEFF record `record`, and the record's fate.
fn pe_slot(view: &StagedView, record: usize) -> (Fate, Vec<u8>) {
    let img = view.cores[0].image(EngineType::Pe).expect("a PE image");
    let fate = img.records.fates[record];
    let slot = match fate {
        Fate::Kept(s) | Fate::Rewritten(s) => s as usize,
        Fate::Deleted => return (fate, Vec::new()),
    };
    (fate, img.bytes[slot * 64..slot * 64 + 64].to_vec())
}

#[test]
fn the_samples_all_reduce_becomes_one_doorbell_on_every_chip() {
    for arch in [Arch::Sunda, Arch::Cayman] {
        let (rt, _dev) = runtime(arch);
        let bytes = cc::sample_neff();
        let m = rt
            .load(&bytes, Some(0))
            .unwrap_or_else(|e| panic!("{arch:?}: {e}"));
        let view = StagedView::of(&rt, &m).unwrap();
        let img = view.cores[0].image(EngineType::Pe).unwrap();
        assert_eq!(img.main_slots, 1, "one record in, one out: no IP delta");
        assert_eq!((img.patches.modify, img.patches.delete), (1, 0));
        let (fate, slot) = pe_slot(&view, 0);
        assert!(matches!(fate, Fate::Rewritten(_)), "{fate:?}");
        assert_eq!(slot[0], 0xA5, "the runtime's register write");
        assert_eq!(
            &slot[4..12],
            &[4, 10, UPDATE_INC_ON_COMPLETE, 22, 0, 0, 0, 0],
            "the PTC's events"
        );
        assert_eq!(word(&slot, 2), lowered::doorbell(0));
        assert_eq!(word(&slot, 4), 1);
        assert_eq!(img.approximate, [0], "the doorbell's address is ours");
        let summary = rt.summary(&m).unwrap();
        let [c] = &summary.collectives[..] else {
            panic!("{:?}", summary.collectives)
        };
        assert_eq!(
            (
                c.operation,
                c.reduce,
                c.dtype,
                c.elements_in,
                c.group,
                c.groups.len()
            ),
            ("all-reduce", Some("add"), Some("float32"), 32, Some(0), 0)
        );
        assert_eq!(
            (c.input.as_deref(), c.output.as_deref()),
            (Some("gradient_in"), Some("gradient_out"))
        );
        rt.unload(&m).unwrap();
    }
}

#[test]
fn each_collective_lowers_to_one_record_and_the_ptc2_extension_is_deleted() {
    let w = World::new(8);
    let (rt, _dev) = runtime(Arch::Cayman);
    let m = rt.load(&w.rank(3), None).unwrap();
    let view = StagedView::of(&rt, &m).unwrap();
    // Records: B1, AR, AG, RS, PTC2, PTC2E, send, receive, rank id, gid
    // to a register, gid to memory.
    let fates: Vec<Fate> = (0..11).map(|i| pe_slot(&view, i).0).collect();
    assert!(matches!(fates[0], Fate::Kept(_)));
    assert_eq!(fates[5], Fate::Deleted, "the PTC2's extension");
    let slots: Vec<u32> = fates
        .iter()
        .filter_map(|f| match f {
            Fate::Kept(s) | Fate::Rewritten(s) => Some(*s),
            Fate::Deleted => None,
        })
        .collect();
    assert!(
        slots.windows(2).all(|p| p[1] == p[0] + 1),
        "every record after the deleted one moved up one slot: {slots:?}"
    );
    let img = view.cores[0].image(EngineType::Pe).unwrap();
    assert_eq!((img.patches.modify, img.patches.delete), (9, 1));
    for i in [1, 2, 3, 4, 6, 7] {
        let (_, slot) = pe_slot(&view, i);
        assert_eq!(slot[0], 0xA5, "record {i} is a doorbell");
        assert_eq!(word(&slot, 2), lowered::doorbell(0), "record {i}");
    }
    let (_, rank_id) = pe_slot(&view, 8);
    assert_eq!(rank_id[0], lowered::OP_LOAD32);
    assert_eq!(word(&rank_id, 2), lowered::rank_id_address(0, 0));
    let (_, gid) = pe_slot(&view, 9);
    assert_eq!(
        (gid[0], gid[14], word(&gid, 4)),
        (lowered::OP_MOVE32, 4, 0),
        "a plain load's id is 0"
    );
    // The global id stored into cc_out: its address as the runtime writes it.
    let (_, store) = pe_slot(&view, 10);
    let cc_out = view.cores[0]
        .variables
        .iter()
        .find(|v| v.name == "cc_out")
        .and_then(|v| v.address)
        .unwrap();
    assert_eq!(word(&store, 2), cc_out);
    let summary = rt.summary(&m).unwrap();
    let listed: Vec<(&str, Option<u64>)> = summary
        .collectives
        .iter()
        .map(|c| (c.operation, c.peer))
        .collect();
    assert_eq!(
        listed,
        [
            ("all-reduce", None),
            ("all-gather", None),
            ("reduce-scatter", None),
            ("all-reduce", None),
            ("send", Some(4)),
            ("receive", Some(2))
        ]
    );
    assert!(summary.collectives[..4]
        .iter()
        .all(|c| c.groups == [(0..8).collect::<Vec<u32>>()]));
}

#[test]
fn a_collectives_load_writes_its_global_id() {
    // A world of eight (rank 5 must be in the NEFF's replica group).
    let w = World::new(8).with_steps(&[Step::Ids]);
    let cfg = RuntimeConfig {
        topology: Topology {
            arch: Arch::Cayman,
            ..Default::default()
        },
        libnrt: Libnrt {
            root_comm_id: Some("10.0.0.1:62182".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    let rt = Runtime::new(cfg).unwrap();
    let m = rt.load_collectives(&w.shared(), None, 5, 8).unwrap();
    let view = StagedView::of(&rt, &m).unwrap();
    let (_, gid) = pe_slot(&view, 2);
    assert_eq!(word(&gid, 4), 5);
    let (_, store) = pe_slot(&view, 3);
    assert_eq!(word(&store, 4), 5);
}

#[test]
fn worlds_of_2_to_64_ranks_load_checked_per_rank_and_shared() {
    for ranks in [2u32, 8, 32, 64] {
        let w = World::new(ranks);
        // The staged image is checked against the sealed lowering
        // (`check`), on one runtime loading every rank in turn.
        let (rt, _dev) = runtime(Arch::Cayman);
        for r in [0, ranks / 2, ranks - 1] {
            let m = rt
                .load(&w.rank(r), None)
                .unwrap_or_else(|e| panic!("{ranks} ranks, rank {r}: {e}"));
            let s = rt.summary(&m).unwrap();
            assert_eq!(s.collectives.len(), 6, "{ranks} ranks, rank {r}");
            let send = &s.collectives[4];
            assert_eq!(send.peer, Some(u64::from((r + 1) % ranks)));
            rt.unload(&m).unwrap();
        }
        let m = rt.load(&w.shared(), None).unwrap();
        let s = rt.summary(&m).unwrap();
        assert_eq!(s.collectives.len(), 4);
        let rs = &s.collectives[2];
        assert_eq!(
            (rs.elements_in, rs.elements_out),
            (256 * u64::from(ranks), 256)
        );
        rt.unload(&m).unwrap();
    }
}
