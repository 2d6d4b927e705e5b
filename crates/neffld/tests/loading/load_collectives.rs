//! `nrt_load_collectives`'s checks in the runtime's order, each refusal
//! with its status and words, and nothing left on the device after one:
//! the root communicator, trn1's topology, the rank and the core's
//! communicator (fixed once set), the caller's rank in the NEFF's replica
//! groups and every rank it names inside the world.

use std::sync::Arc;

use neffld::api::{LoadError, Runtime};
use neffld::comm::{CollectivesError, Join};
use neffld::config::{Libnrt, RuntimeConfig, Topology};
use neffld::device::{Geometry, SimDevice};
use neffld::instance::Instance;
use neffld::{Arch, NrtStatus};
use neffld_testkit::beyond_start;
use neffld_testkit::collectives::{Step, World};

const ROOT: &str = "10.0.0.1:62182";

fn runtime_with(cfg: RuntimeConfig) -> (Runtime, Arc<SimDevice>) {
    let dev = Arc::new(SimDevice::new(Geometry::for_arch(cfg.topology.arch)));
    (Runtime::with_device(cfg, dev.clone()).unwrap(), dev)
}

/// A trn2 configuration with the root communicator `root`.
fn on_trn2(root: Option<&str>) -> RuntimeConfig {
    RuntimeConfig {
        topology: Topology {
            arch: Arch::Cayman,
            ..Default::default()
        },
        libnrt: Libnrt {
            root_comm_id: root.map(str::to_string),
            ..Default::default()
        },
        ..RuntimeConfig::default()
    }
}

/// A trn2 runtime with a root communicator.
fn trn2() -> (Runtime, Arc<SimDevice>) {
    runtime_with(on_trn2(Some(ROOT)))
}

fn refusal(e: LoadError) -> CollectivesError {
    match e {
        LoadError::Collectives(c) => c,
        other => panic!("not a collectives refusal: {other}"),
    }
}

fn one_all_reduce(ranks: u32) -> World {
    World::new(ranks).with_steps(&[Step::AllReduce(32)])
}

#[test]
fn the_root_communicator_is_required_and_must_be_host_and_port() {
    let neff = one_all_reduce(2).shared();
    for (root, expect) in [(None, "is not set"), (Some("10.0.0.1"), "10.0.0.1")] {
        let (rt, dev) = runtime_with(on_trn2(root));
        let e = rt.load_collectives(&neff, None, 0, 2).unwrap_err();
        assert_eq!(e.status(), NrtStatus::Invalid, "{e}");
        assert!(e.to_string().contains("NEURON_RT_ROOT_COMM_ID"), "{e}");
        assert!(e.to_string().contains(expect), "{e}");
        assert_eq!(beyond_start(&*dev).len(), 0);
        // A plain load needs none.
        rt.load(&neff, None).unwrap();
    }
}

#[test]
fn trn1_refuses_a_world_its_topology_does_not_take() {
    let cfg = RuntimeConfig {
        libnrt: Libnrt {
            root_comm_id: Some(ROOT.into()),
            ..Default::default()
        },
        ..RuntimeConfig::default()
    }
    .on_instance(Instance::named("trn1.32xlarge").unwrap());
    let rt = Runtime::new(cfg).unwrap();
    // The runtime's own sample: one all-reduce every rank may load.
    let neff = neffld_testkit::collectives::sample_neff();
    let e = rt.load_collectives(&neff, None, 0, 24).unwrap_err();
    assert_eq!(e.status(), NrtStatus::Invalid);
    assert!(
        e.to_string().contains("Unsupported topology. Supported number of Neuron Cores is 1, 2, 8, 16 or a multiple of 32"),
        "{e}"
    );
    assert!(matches!(
        refusal(e),
        CollectivesError::Topology { world: 24, .. }
    ));
    // The refusal set no communicator up (the topology comes before the
    // core's communicator); each world on a core of its own, since a
    // core's world is fixed once set.
    for (core, world) in [(0, 2), (1, 8), (2, 16), (3, 32)] {
        let m = rt.load_collectives(&neff, Some(core), 0, world).unwrap();
        rt.unload(&m).unwrap();
    }
}

#[test]
fn a_rank_outside_its_world_is_refused() {
    let (rt, dev) = trn2();
    let e = rt
        .load_collectives(&one_all_reduce(2).shared(), None, 2, 2)
        .unwrap_err();
    assert_eq!(
        refusal(e),
        CollectivesError::RankOutsideWorld { rank: 2, world: 2 }
    );
    assert_eq!(beyond_start(&*dev).len(), 0);
}

/// A core's communicator is set by its first collectives load and kept:
/// a larger world is the runtime's own refusal, another rank or a smaller
/// world the "already set up" one, after an unload too.
#[test]
fn a_cores_collectives_world_is_fixed_once_set() {
    let (rt, dev) = trn2();
    // The runtime's own sample: one group of every rank (`[[]]`), any world.
    let neff = neffld_testkit::collectives::sample_neff();
    let m = rt.load_collectives(&neff, Some(0), 0, 2).unwrap();
    rt.unload(&m).unwrap();
    let e = refusal(rt.load_collectives(&neff, Some(0), 0, 4).unwrap_err());
    assert!(
        e.to_string().starts_with(
            "World size of neff 4 is greater than world size of global communicator 2"
        ),
        "{e}"
    );
    let e = refusal(rt.load_collectives(&neff, Some(0), 1, 2).unwrap_err());
    assert!(
        e.to_string()
            .starts_with("NRT has already been setup with a collectives world size of 2"),
        "{e}"
    );
    assert_eq!(e.status(), NrtStatus::Invalid);
    assert_eq!(beyond_start(&*dev).len(), 0);
    // Another core sets up its own.
    let m = rt.load_collectives(&neff, Some(1), 3, 4).unwrap();
    assert_eq!(
        rt.summary(&m).unwrap().join,
        Some(Join { rank: 3, world: 4 })
    );
    assert_eq!(m.gid, Some(3));
}

/// A rank that no group of a replica-group set holds: the runtime's
/// replica-group parse refuses it in the load, which fails with the status
/// its failure chain ends with (a public issue thread's log: `err: 4`).
#[test]
fn a_rank_missing_from_its_replica_groups_is_refused() {
    let (rt, dev) = trn2();
    let neff = World {
        ranks: 3,
        groups: vec![vec![0, 1]],
        steps: vec![Step::AllReduce(32)],
    }
    .shared();
    rt.load_collectives(&neff, None, 1, 3).unwrap();
    let e = rt.load_collectives(&neff, None, 2, 3).unwrap_err();
    assert_eq!(e.status(), NrtStatus::Resource);
    let text = e.to_string();
    assert!(
        text.contains("replica groups (0/1) does not have myself 2"),
        "{text}"
    );
    assert!(text.contains("sg00") && text.contains("[[0, 1]]"), "{text}");
    assert_eq!(rt.loaded_models(), 1);
    // What the failed load staged is gone; the first load's stays.
    assert_eq!(rt.vnc_claims().iter().sum::<u32>(), 1);
    drop(rt);
    assert_eq!(beyond_start(&*dev).len(), 0);
}

#[test]
fn a_rank_a_neff_names_beyond_the_world_is_refused() {
    let (rt, dev) = trn2();
    // Groups of four ranks, loaded in a world of two.
    let e = rt
        .load_collectives(&one_all_reduce(4).shared(), None, 0, 2)
        .unwrap_err();
    assert_eq!(e.status(), NrtStatus::Resource);
    let e = refusal(e);
    assert!(
        matches!(&e, CollectivesError::RankBeyondWorld { named: 2, world: 2, what, .. } if what == "replica group set 0"),
        "{e}"
    );
    // A send to the next rank, rank 2, from rank 1 of a world of two.
    let ring = World {
        ranks: 4,
        groups: vec![vec![0, 1]],
        steps: vec![Step::SendRecvRing(64)],
    };
    // On another core: the refused load above set core 0's communicator
    // up as rank 0, as the runtime sets it up before the load.
    let e = refusal(
        rt.load_collectives(&ring.rank(1), Some(1), 1, 2)
            .unwrap_err(),
    );
    assert!(
        e.to_string().contains("the send record 1 of pe") && e.to_string().contains("names rank 2"),
        "{e}"
    );
    assert_eq!(beyond_start(&*dev).len(), 0);
}

/// A NEFF's replica groups against the line's cap: the runtime's
/// replica-group parse numbers a subgraph's sets below 12 (16 from 2.34,
/// whose release notes say NEFFs with 13 to 16 used to fail).
#[test]
fn more_replica_groups_than_the_line_takes_are_refused() {
    use neffld::container::header::FEATURE_VNC;
    use neffld::container::writer::{NeffWriter, Producer};
    let mut s = World::new(2)
        .with_steps(&[Step::AllReduce(32)])
        .shared_synth();
    s.edit("sg00/def.json", |d| {
        d["replica_groups"] = serde_json::json!(vec![vec![vec![0, 1]]; 13]);
    });
    let mut h = Producer::V2_21.default_header();
    h.feature_bits &= !FEATURE_VNC;
    let neff = NeffWriter::with_header(Producer::V2_21, h).write(&s.member_list());
    let under = |line: &str| {
        let mut cfg = on_trn2(Some(ROOT));
        cfg.libnrt.line = Some(line.parse().unwrap());
        runtime_with(cfg)
    };
    let (rt, dev) = under("2.33");
    let e = rt.load_collectives(&neff, None, 0, 2).unwrap_err();
    assert_eq!(e.status(), NrtStatus::Resource);
    assert!(
        e.to_string()
            .contains("subgraph sg00 declares 13 replica groups; runtime 2.33 takes at most 12 per NEFF (16 from 2.34)"),
        "{e}"
    );
    assert_eq!(beyond_start(&*dev).len(), 0);
    // A plain load is not a rank of a world: nothing to count against.
    rt.load(&neff, None).unwrap();
    let (rt, _dev) = under("2.34");
    rt.load_collectives(&neff, None, 0, 2).unwrap();
}
