//! A plan whose further loads of a NEFF replay its first staging on the
//! same cores is the plan whose every load is staged (`NEFFLD_REPLAY=0`):
//! every step, usage figure, refusal (its log and the memory it found),
//! headroom figure and piece of advice, compared whole — on the real
//! fixtures and on NEFFs built here for what they lack (LNC 1, trn1,
//! scratchpad that straddles pages or needs a region to grow), over
//! several runtime lines, with refusals part-way through a replayed load,
//! a shared scratchpad that grows between loads, and a capped region
//! whose pages differ from the recording's.

use std::path::{Path, PathBuf};

use neffld::instance::Instance;
use neffld::line::RuntimeLine;
use neffld::plan::{self, Deployment, Plan, Step};
use neffld::stage::replay::replayed_here;
use neffld_testkit::{any_lnc_cayman, scratchpad_example, FIXTURES};
use serde_json::json;

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;

fn tmpdir(tag: &str) -> neffld_testkit::ScratchDir {
    neffld_testkit::ScratchDir::new(&format!("replay-{tag}"))
}

fn load(file: &Path, vnc: u32) -> Step {
    Step::Load {
        file: file.to_path_buf(),
        vnc: Some(vnc),
    }
}

fn unload(file: &Path, vnc: u32) -> Step {
    Step::Unload {
        file: file.to_path_buf(),
        vnc,
    }
}

fn tensor(name: &str, size: u64, vnc: u32) -> Step {
    Step::Tensor {
        name: name.into(),
        size,
        vnc,
    }
}

fn free(name: &str, vnc: u32) -> Step {
    Step::Free {
        name: name.into(),
        vnc,
    }
}

fn on(instance: &str, lnc: Option<u32>, line: Option<RuntimeLine>, steps: Vec<Step>) -> Deployment {
    Deployment {
        instance: Some(Instance::named(instance).unwrap()),
        lnc,
        runtime: line,
        io_tensors: true,
        steps,
        ..Deployment::default()
    }
}

/// `d` planned with replays and with every load staged; the two reports
/// must be the same in every figure (the only difference allowed is the
/// switch itself, which the advice's command lines repeat). Returns the
/// replayed plan and how many loads it replayed.
fn both_ways(d: &Deployment) -> (Plan, u64) {
    let with = |replay: &str| {
        let mut d = d.clone();
        d.env.push(("NEFFLD_REPLAY".into(), replay.into()));
        let before = replayed_here();
        let p = plan::plan(&d).unwrap();
        (p, replayed_here() - before)
    };
    let (replayed, n) = with("1");
    let (staged, none) = with("0");
    assert_eq!(none, 0, "NEFFLD_REPLAY=0 replayed {none} loads");
    let a = format!("{replayed:#?}").replace("NEFFLD_REPLAY=1", "NEFFLD_REPLAY=0");
    let b = format!("{staged:#?}");
    if a != b {
        let (i, (x, y)) = a
            .lines()
            .zip(b.lines())
            .enumerate()
            .find(|(_, (x, y))| x != y)
            .unwrap_or((0, ("(lengths differ)", "")));
        let at = a.lines().take(i).collect::<Vec<_>>();
        let context = at[at.len().saturating_sub(12)..].join("\n");
        panic!("replayed and staged plans differ at line {i}:\n{context}\n- replayed: {x}\n+ staged:   {y}");
    }
    (replayed, n)
}

/// Each real fixture, ranks of it on every logical core of a trn2.3xlarge
/// and again on core 0, an unload and a reload, then a tensor no HBM
/// holds: under four runtime lines (paged and contiguous scratchpad).
#[test]
fn the_fixtures_plan_the_same_replayed_or_staged() {
    let mut fixtures: Vec<PathBuf> = std::fs::read_dir(FIXTURES)
        .unwrap()
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "neff"))
        .collect();
    fixtures.sort();
    assert_eq!(fixtures.len(), 12);
    for (i, f) in fixtures.iter().enumerate() {
        let line = [
            RuntimeLine::V2_25,
            RuntimeLine::V2_30,
            RuntimeLine::V2_33,
            RuntimeLine::NEWEST,
        ][i % 4];
        let mut steps: Vec<Step> = (0..4).map(|c| load(f, c)).collect();
        steps.extend([load(f, 0), load(f, 0), unload(f, 0), load(f, 0), load(f, 1)]);
        steps.push(tensor("kv", 30 * GIB, 2));
        let (p, n) = both_ways(&on("trn2.3xlarge", None, Some(line), steps));
        assert_eq!(p.steps.len(), 10, "{}", f.display());
        assert!(p.refusal.is_some(), "the tensor is refused");
        assert!(n >= 4, "{}: {n} replays", f.display());
    }
}

/// Ranks over all 16 chips of a trn2.48xlarge: one recording per set of
/// physical cores serves every chip.
#[test]
fn ranks_over_every_chip_plan_the_same() {
    let f = Path::new(FIXTURES).join("matmul_large.neff");
    let mut steps: Vec<Step> = (0..64).map(|c| load(&f, c)).collect();
    steps.extend((0..64).rev().map(|c| load(&f, c)));
    let (p, n) = both_ways(&on("trn2.48xlarge", None, None, steps));
    assert!(p.fits());
    assert!(n >= 128 - 4, "{n} replays");
}

/// Loads refused part-way: the HBM of core 0 filled with tensors (the main
/// pool, then the small one) until a few loads fit, then loads until one
/// is refused in the middle of its requests — as a load, with the memory
/// it found, the refused load's own partial row included.
#[test]
fn a_replayed_load_refused_part_way_is_the_staged_refusal() {
    let f = Path::new(FIXTURES).join("kfusion__fused_bf16_s512__fused.neff");
    for io in [true, false] {
        let base = |steps: Vec<Step>| Deployment {
            io_tensors: io,
            ..on("trn2.3xlarge", None, None, steps)
        };
        // What one load takes, and the largest tensors left beside one.
        let two = plan::plan(&base(vec![load(&f, 0), load(&f, 0)])).unwrap();
        let per_load = two.steps[1].held_after - two.steps[0].held_after;
        let main = two.headroom[0].largest_tensor;
        let one = plan::plan(&base(vec![
            load(&f, 0),
            load(&f, 0),
            tensor("main", main, 0),
        ]))
        .unwrap();
        let small = one.headroom[0].largest_tensor;
        // Room for two loads and a part of a third: the part found by
        // trying a few (where a load's first request is refused, nothing
        // of it is held).
        let part_way = |d: &Deployment| {
            let p = plan::plan(d).unwrap();
            let r = p.refusal.as_ref()?;
            let refused = p.neffs.len() as u32 + 1;
            r.memory.hbms[0].cores[0]
                .models
                .iter()
                .any(|(id, rows)| id.0 == refused && rows.iter().sum::<u64>() > 0)
                .then_some(())
        };
        let d = [50, 33, 66, 25, 75, 10, 90]
            .into_iter()
            .map(|percent| {
                let fill = (small - per_load * 2 - per_load * percent / 100) / 4096 * 4096;
                let mut steps = vec![
                    load(&f, 0),
                    load(&f, 0),
                    tensor("main", main, 0),
                    tensor("small", fill, 0),
                ];
                steps.extend((0..8).map(|_| load(&f, 0)));
                base(steps)
            })
            .find(|d| part_way(d).is_some())
            .expect("some fill leaves a load refused part-way");
        let (p, n) = both_ways(&d);
        let (at, step, _) = p.failed_step().unwrap();
        assert!(matches!(step.step, Step::Load { .. }), "{step:?}");
        assert!(at > 4, "loads fit beside the tensors: refused at {at}");
        assert!(n > 0, "{n} replays");
    }
}

/// trn2 at LNC 1 (two cores on each HBM, the noisy neighbour) and trn1:
/// NEFFs with private buffers, spill scratchpad that straddles a page
/// (a private allocation and its warning), unloads and a refusal.
#[test]
fn lnc1_and_trn1_plan_the_same() {
    let dir = tmpdir("lnc1");
    let write = |name: &str, bytes: Vec<u8>| {
        let p = dir.join(format!("{name}.neff"));
        std::fs::write(&p, bytes).unwrap();
        p
    };
    let dense = write("dense", any_lnc_cayman("dense", 3 * GIB, |_| {}));
    let spill = write(
        "spill",
        any_lnc_cayman("spill", 0, |v| {
            v["var"]["v_sg0000"]["size"] = json!(700 * MIB);
        }),
    );
    for line in [RuntimeLine::V2_27, RuntimeLine::NEWEST] {
        let steps = vec![
            load(&dense, 0),
            load(&spill, 1),
            load(&dense, 0),
            load(&spill, 1),
            load(&spill, 0),
            unload(&dense, 0),
            load(&dense, 1),
            load(&spill, 2),
            tensor("kv", 12 * GIB, 1),
            load(&dense, 0),
            load(&dense, 1),
        ];
        let (p, n) = both_ways(&on("trn2.3xlarge", Some(1), Some(line), steps));
        assert!(!p.fits());
        assert!(n >= 2, "{n} replays");
    }
    // trn1: the documentation's two-NEFF scratchpad example, many times.
    let a = write(
        "a",
        scratchpad_example("a", [(0, 1 << 20), (1 << 20, 2 << 20)]),
    );
    let b = write("b", scratchpad_example("b", [(0, 600 << 20), (4096, 4096)]));
    for line in [RuntimeLine::V2_23, RuntimeLine::NEWEST] {
        let mut steps = Vec::new();
        for _ in 0..3 {
            steps.extend([load(&a, 0), load(&b, 0), load(&a, 1), load(&b, 1)]);
        }
        steps.extend([unload(&b, 0), load(&a, 0), tensor("kv", 16 * GIB, 0)]);
        let (p, n) = both_ways(&on("trn1.2xlarge", None, Some(line), steps));
        assert!(p.refusal.is_some());
        assert!(n >= 8, "{n} replays");
    }
}

/// The shared scratchpad between loads: paged tables that grow when a
/// NEFF with a larger arena loads after a smaller one (the smaller one's
/// recording made its pages, its replays find them); the contiguous region
/// that cannot grow past a tensor (a refused page); and the capped region
/// of the older lines' experimental mode, whose loads after a tensor
/// blocks it hold fewer pages than the recording's (the replay gives way
/// to staging, which gives the spill its private allocation and warning).
#[test]
fn scratchpad_growth_and_a_capped_region_plan_the_same() {
    let dir = tmpdir("spill");
    let spill = |name: &str, mib: u64| {
        let p = dir.join(format!("{name}.neff"));
        std::fs::write(
            &p,
            any_lnc_cayman(name, 0, |d| {
                d["var"]["v_sg0000"]["size"] = json!(mib * MIB);
            }),
        )
        .unwrap();
        p
    };
    let small = spill("small_spill", 8);
    let large = spill("large_spill", 150);
    let page = |mib: &str| vec![("NEURON_SCRATCHPAD_PAGE_SIZE".to_string(), mib.to_string())];
    // Paged: 64 MiB pages, the table grows from one page to three.
    let paged = Deployment {
        env: [
            page("64"),
            vec![("NEURON_RT_CONTIGUOUS_SCRATCHPAD".into(), "0".into())],
        ]
        .concat(),
        ..on(
            "trn2.3xlarge",
            None,
            None,
            vec![
                load(&small, 0),
                load(&small, 0),
                load(&large, 0),
                load(&small, 0),
                load(&large, 0),
                unload(&large, 0),
                unload(&large, 0),
                load(&small, 0),
                load(&large, 0),
            ],
        )
    };
    let (p, n) = both_ways(&paged);
    assert!(p.fits());
    assert!(n >= 4, "{n} replays");
    // Contiguous (the newest line): a region that cannot grow past a tensor, which
    // fills what is left between another tensor and the region.
    let blocked = |line: Option<RuntimeLine>, env: Vec<(String, String)>| {
        let first = Deployment {
            env: env.clone(),
            ..on(
                "trn2.3xlarge",
                None,
                line,
                vec![tensor("below", 2 * GIB, 0), load(&small, 0)],
            )
        };
        let gap = plan::plan(&first).unwrap().headroom[0].largest_tensor;
        Deployment {
            env,
            ..on(
                "trn2.3xlarge",
                None,
                line,
                vec![
                    tensor("below", 2 * GIB, 0),
                    load(&small, 0),
                    load(&large, 0),
                    unload(&large, 0),
                    load(&small, 0),
                    tensor("fill", gap, 0),
                    free("below", 0),
                    load(&small, 0),
                    load(&large, 0),
                    load(&large, 0),
                ],
            )
        }
    };
    let (p, _) = both_ways(&blocked(None, page("64")));
    let r = p.refusal.as_ref().unwrap();
    assert_eq!(r.request.usage, neffld::device::MemUsage::Scratchpad);
    // The capped region (2.30's experimental mode): the large spill's
    // second and third loads get fewer pages than its first.
    let capped = [
        page("64"),
        vec![(
            "NEURON_RT_DBG_EXPERIMENTAL_CONTIGUOUS_SCRATCHPAD".into(),
            "1".into(),
        )],
    ]
    .concat();
    let (p, n) = both_ways(&blocked(Some(RuntimeLine::V2_30), capped));
    assert!(p.contiguous_scratchpad, "{p:?}");
    assert!(n >= 2, "{n} replays");
}
