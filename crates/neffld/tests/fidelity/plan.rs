//! The planner on whole deployments: the first refusal as the runtime
//! reports it, headroom found by allocating, and advice judged by planning
//! again — each figure checked against a computation of this file's own
//! (the free ranges of the allocator, read from its live allocations; the
//! sizes the NEFFs declare; the runtime's documented log lines).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use neffld::api::{started_device, Runtime};
use neffld::config::{DeviceKind, Loader, RuntimeConfig, Topology};
use neffld::device::{Device, CARVEOUT, SMALL_POOL_BYTES};
use neffld::instance::Instance;
use neffld::line::RuntimeLine;
use neffld::memory::start_plan;
use neffld::plan::{self, AdviceKind, Deployment, PlanError, Step};
use neffld::report::Column;
use neffld::Arch;
use neffld_testkit::{any_lnc_cayman, lnc_writer, Synth};
use serde_json::json;

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;

/// [`any_lnc_cayman`] written to `dir`.
fn neff_with(
    dir: &Path,
    name: &str,
    tmp: u64,
    edit: impl FnOnce(&mut serde_json::Value),
) -> PathBuf {
    let path = dir.join(format!("{name}.neff"));
    std::fs::write(&path, any_lnc_cayman(name, tmp, edit)).unwrap();
    path
}

fn neff(dir: &Path, name: &str, tmp: u64) -> PathBuf {
    neff_with(dir, name, tmp, |_| {})
}

fn tmpdir(tag: &str) -> neffld_testkit::ScratchDir {
    neffld_testkit::ScratchDir::new(&format!("plan-{tag}"))
}

fn load(file: &Path, vnc: u32) -> Step {
    Step::Load {
        file: file.to_path_buf(),
        vnc: Some(vnc),
    }
}

fn trn2_3xl(lnc: u32, steps: Vec<Step>) -> Deployment {
    Deployment {
        instance: Some(Instance::named("trn2.3xlarge").unwrap()),
        lnc: Some(lnc),
        io_tensors: true,
        steps,
        ..Deployment::default()
    }
}

/// The free ranges of each pool of HBM `channel`, read from the device's
/// live allocations: (largest in the main pool, largest in the small pool).
fn largest_free(dev: &Device, channel: u32, line: RuntimeLine) -> (u64, u64) {
    let g = dev.geometry();
    let base = g.channel_base(channel).unwrap().0;
    let end = base + g.hbm_bytes_per_channel();
    let held = start_plan(g, g.arch(), g.default_lnc(), line.facts(), |_| true).held;
    let split = end - SMALL_POOL_BYTES;
    let pools = [
        (
            base + CARVEOUT + held.main_pool.next_multiple_of(4096),
            split,
        ),
        (split + held.small_pool.next_multiple_of(4096), end),
    ];
    let mut blocks: Vec<(u64, u64)> = dev
        .live_allocations()
        .iter()
        .filter(|a| a.channel == channel)
        .map(|a| (a.pa.0, a.pa.0 + a.charged))
        .collect();
    blocks.sort_unstable();
    let gap = |(lo, hi): (u64, u64)| {
        let mut at = lo;
        let mut best = 0;
        for &(s, e) in blocks.iter().filter(|b| b.0 >= lo && b.1 <= hi) {
            best = best.max(s.saturating_sub(at));
            at = at.max(e);
        }
        best.max(hi.saturating_sub(at))
    };
    (gap(pools[0]), gap(pools[1]))
}

/// The noisy neighbour of the runtime's own documentation: at LNC 1 on a
/// trn2.3xlarge, NC 0 and NC 1 share HBM 0; two loads on NC 0 leave too
/// little for a 4 GiB tensor on NC 1.
#[test]
fn a_noisy_neighbour_is_refused_as_the_runtime_reports_it_and_lnc2_lets_it_through() {
    let dir = tmpdir("noisy");
    let dense = neff(&dir, "dense", 10 * GIB);
    let small = neff(&dir, "small", GIB);
    let d = trn2_3xl(
        1,
        vec![
            load(&dense, 0),
            load(&dense, 0),
            load(&small, 2),
            Step::Tensor {
                name: "kv".into(),
                size: 4 * GIB,
                vnc: 1,
            },
        ],
    );
    let p = plan::plan(&d).unwrap();
    assert!(!p.fits());
    let (i, step, failure) = p.failed_step().unwrap();
    assert_eq!(
        (i, step.vnc, step.pcores.as_slice()),
        (3, Some(1), &[1][..])
    );
    assert_eq!(failure.status.code(), 4, "NRT_RESOURCE");
    let r = p.refusal.as_ref().unwrap();
    assert_eq!(r.step, 3);
    // The runtime's own lines (its documentation shows the same three).
    assert_eq!(
        r.log[0],
        (
            "print_lnc_hbm_details",
            "LNC size is 1. Neuron Cores using this HBM: NC 0 and NC 1".to_string()
        )
    );
    assert_eq!(
        r.log[1].1,
        "Failed to allocate 4.000GB (alignment: none, usage: tensors) on ND 0:NC 1"
    );
    assert!(r.log[2].1.contains("\\_NEFF 1    |"), "{}", r.log[2].1);
    assert!(
        r.log[2]
            .1
            .trim_end()
            .ends_with("1: \"dense\"\n2: \"dense\""),
        "{}",
        r.log[2].1
    );
    // Two private buffers of 10 GiB in NC 0's row.
    let hbm0 = &r.memory.hbms[0];
    assert_eq!(hbm0.cores[0].usage().get(Column::Scratchpad), 20 * GIB);

    // The same state, built here by hand, and its free ranges.
    let mut config = RuntimeConfig {
        topology: Topology {
            arch: Arch::Cayman,
            lnc: Some(1),
            ..Default::default()
        },
        loader: Loader {
            device: DeviceKind::Null,
            ..Default::default()
        },
        ..Default::default()
    };
    config = config.on_instance(Instance::named("trn2.3xlarge").unwrap());
    let dev: Arc<Device> = started_device(&config);
    let rt = Runtime::with_devices(config.clone(), vec![dev.clone()]).unwrap();
    let mut held = Vec::new();
    for (f, vnc) in [(&dense, 0), (&dense, 0), (&small, 2)] {
        let m = rt.load(&std::fs::read(f).unwrap(), Some(vnc)).unwrap();
        for t in rt.tensor_info(&m).unwrap().iter() {
            held.push(rt.allocate_tensor(vnc, t.size, &t.name).unwrap());
        }
    }
    let (main, small_pool) = largest_free(&dev, 0, config.line());
    let h1 = p.headroom.iter().find(|h| h.vnc == 1).unwrap();
    assert_eq!(h1.hbm, 0);
    assert_eq!(h1.largest_tensor, main.max(small_pool));
    assert!(h1.largest_tensor < 4 * GIB);
    assert!(rt.allocate_tensor(1, h1.largest_tensor, "x").is_ok());
    assert!(rt
        .allocate_tensor(1, h1.largest_tensor + 4096, "x")
        .is_err());
    // A copy of `small` needs its 1 GiB buffer in one free range (the
    // small pool is 1 GiB, partly taken, so it is the main pool's); on NC 1,
    // which has no scratchpad page yet, the first copy also brings the
    // shared page its 512-byte arena needs, from the same range first.
    let copies = |h: &plan::Headroom, f: &Path| {
        let c = &h.copies.iter().find(|c| c.0 == f).unwrap().1;
        assert_eq!(c.refused, None, "{f:?} loads here");
        c.clone()
    };
    assert_eq!(
        u64::from(copies(h1, &small).count),
        (main - p.scratchpad_page) / GIB
    );
    assert_eq!(copies(h1, &dense).count, 0, "10 GiB do not fit in {main}");
    let h2 = p.headroom.iter().find(|h| h.vnc == 2).unwrap();
    let (main2, _) = largest_free(&dev, 1, config.line());
    assert_eq!(u64::from(copies(h2, &small).count), main2 / GIB);
    assert_eq!(u64::from(copies(h2, &dense).count), main2 / (10 * GIB));

    // Advice: LNC 2 gives NC 0's load an HBM of its own pair of cores and
    // the tensor another HBM.
    let lnc = p
        .advice
        .iter()
        .find(|a| a.kind == AdviceKind::Lnc { size: 2 })
        .unwrap();
    assert!(lnc.fits);
    assert_eq!(lnc.completed, (3, 4));
    let (step, before, after) = lnc.unblocked.unwrap();
    assert_eq!(step, 3);
    assert_eq!(before, hbm0.free());
    assert!(
        after > 12 * GIB,
        "HBM 1 at LNC 2 has only the small load: {after}"
    );
    assert!(
        lnc.reason.contains("NC 0 and NC 1 share HBM 0"),
        "{}",
        lnc.reason
    );
    // The tmp-bufs are private scratchpad no page size removes.
    assert!(p
        .advice
        .iter()
        .all(|a| !matches!(a.kind, AdviceKind::ScratchpadPage { .. })));
}

/// A scratchpad variable larger than the page gets a private allocation
/// while the shared pages are still sized for it; with 1 GiB pages it
/// fits one shared page: 1 GiB less (the doc's rule, computed here).
#[test]
fn a_page_size_that_removes_private_scratchpad_is_found_by_planning_again() {
    let dir = tmpdir("pages");
    let f = neff_with(&dir, "spill", 0, |v| {
        v["var"]["v_sg0000"]["size"] = json!(GIB);
    });
    // The paged scratchpad of the lines before 2.33.
    let d = Deployment {
        runtime: Some(RuntimeLine::V2_30),
        ..trn2_3xl(2, vec![load(&f, 0)])
    };
    let p = plan::plan(&d).unwrap();
    assert!(p.fits());
    let core = &p.devices[0].hbms[0].cores[0];
    let u = core.usage();
    // 512 MiB pages: 1 GiB private, and the shared arena of 1 GiB in two pages.
    assert_eq!(u.get(Column::Scratchpad), GIB);
    assert_eq!(u.get(Column::SharedScratchpad), GIB);
    let a = p
        .advice
        .iter()
        .find(|a| matches!(a.kind, AdviceKind::ScratchpadPage { .. }))
        .unwrap();
    assert_eq!(a.kind, AdviceKind::ScratchpadPage { mib: 1024 });
    assert_eq!(
        a.saves(),
        i128::from(GIB),
        "one 1 GiB page, no private copy"
    );
    assert!(a.fits);
    assert_eq!(a.change, "--env NEURON_SCRATCHPAD_PAGE_SIZE=1024");
}

/// The NEFF with the most memory is named, and what the deployment holds
/// without it is planned: its buffer and everything else it brought.
#[test]
fn the_dominant_neff_is_named_with_what_it_costs() {
    let dir = tmpdir("dominant");
    let big = neff(&dir, "big", 3 * GIB);
    let little = neff(&dir, "little", 64 * MIB);
    let d = Deployment {
        runtime: Some(RuntimeLine::V2_30),
        ..trn2_3xl(2, vec![load(&big, 0), load(&little, 1), load(&big, 2)])
    };
    let p = plan::plan(&d).unwrap();
    assert!(p.fits());
    let a = p
        .advice
        .iter()
        .find(|a| matches!(a.kind, AdviceKind::Without { .. }))
        .unwrap();
    assert_eq!(a.kind, AdviceKind::Without { file: big.clone() });
    // Two loads of 3 GiB buffers, their code, rings, tables and IO tensors
    // (under a MiB each); the shared scratchpad pages of their cores go too.
    let saved = a.saves();
    let pages = 2 * i128::from(p.scratchpad_page);
    assert!(saved >= i128::from(6 * GIB) + pages, "{saved}");
    assert!(
        saved < i128::from(6 * GIB) + pages + i128::from(2 * MIB),
        "{saved}"
    );
    assert!(
        a.reason.starts_with(&format!("{} holds 9", big.display())),
        "{}",
        a.reason
    );
}

/// For a refused plan, "without" is judged among the NEFFs on the refused
/// step's HBM by planning each without: a NEFF whose shared scratchpad the
/// runtime holds (in no NEFF's rows) is the one to leave out, though
/// another's rows are heavier; a NEFF on another HBM is never offered,
/// since leaving it out frees nothing where the plan is refused.
#[test]
fn without_names_the_neff_whose_absence_makes_room_on_the_refused_hbm() {
    let dir = tmpdir("without-hbm");
    let scratch = neff_with(&dir, "scratch", 0, |def| {
        def["var"]["sp"] = json!({
            "backing_variable_off": 0, "ops": [], "size": 1536 * MIB,
            "type": "virtual", "var_id": 7
        });
    });
    let rows = neff(&dir, "rows", 64 * MIB);
    let elsewhere = neff(&dir, "elsewhere", 512 * MIB);
    let both = trn2_3xl(
        2,
        vec![load(&scratch, 0), load(&rows, 0), load(&elsewhere, 1)],
    );
    let p = plan::plan(&both).unwrap();
    assert!(p.fits());
    // A tensor a GiB over the largest that fits: room only without the
    // 1.5 GiB scratchpad.
    let largest = p
        .headroom
        .iter()
        .find(|h| h.vnc == 0)
        .unwrap()
        .largest_tensor;
    let mut d = both.clone();
    d.steps.push(Step::Tensor {
        name: "x".into(),
        size: largest + GIB,
        vnc: 0,
    });
    let p = plan::plan(&d).unwrap();
    assert_eq!(p.refusal.as_ref().map(|r| r.step), Some(3));
    let without: Vec<&plan::Advice> = p
        .advice
        .iter()
        .filter(|a| matches!(a.kind, AdviceKind::Without { .. }))
        .collect();
    assert_eq!(without.len(), 1, "{without:?}");
    assert_eq!(
        without[0].kind,
        AdviceKind::Without {
            file: scratch.clone()
        }
    );
    assert!(without[0].fits, "{without:?}");
    assert!(
        p.advice.iter().all(|a| a.kind
            != AdviceKind::Without {
                file: elsewhere.clone()
            }),
        "{:?}",
        p.advice
    );
}

/// 64 logical cores of a trn2.48xlarge load one NEFF: it is read and parsed
/// once, every load lands on the device of its logical core, and the
/// planned IO tensors sit beside it.
#[test]
fn ranks_of_one_neff_over_a_whole_instance_parse_once() {
    let dir = tmpdir("ranks");
    let path = dir.join("rank.neff");
    std::fs::write(
        &path,
        lnc_writer(2).write(&Synth::dynamic_cayman_n(2).member_list()),
    )
    .unwrap();
    let steps = plan::parse_load(format!("{}@0-63", path.display())).unwrap();
    assert_eq!(steps.len(), 64);
    let d = Deployment {
        instance: Some(Instance::named("trn2.48xlarge").unwrap()),
        io_tensors: true,
        steps,
        ..Deployment::default()
    };
    let p = plan::plan(&d).unwrap();
    assert!(p.fits(), "{:?}", p.failed_step());
    assert_eq!(p.parses, 1);
    assert_eq!((p.chips, p.lnc, p.devices.len()), (16, 2, 16));
    for (i, n) in p.neffs.iter().enumerate() {
        assert_eq!(n.vnc, i as u32);
        assert_eq!(
            n.device,
            i as u32 / 4,
            "4 logical cores per trn2 chip at LNC 2"
        );
        assert_eq!(n.pcores, [(i as u32 % 4) * 2, (i as u32 % 4) * 2 + 1]);
    }
    // q, k and o: three float32 tensors of 4x16 per load.
    assert_eq!(p.tensors.len(), 3 * 64);
    assert!(p
        .tensors
        .iter()
        .all(|t| t.size == 256 && t.device == t.vnc / 4));
    assert_eq!(p.headroom.len(), 64);
}

/// Unloads and frees run in order; naming what is not there is the
/// deployment's mistake, not a refusal.
#[test]
fn unloads_and_frees_release_what_they_name() {
    let dir = tmpdir("unload");
    let f = neff(&dir, "u", GIB);
    let d = trn2_3xl(
        2,
        vec![
            load(&f, 0),
            Step::Tensor {
                name: "kv".into(),
                size: GIB,
                vnc: 0,
            },
            Step::Unload {
                file: f.clone(),
                vnc: 0,
            },
            Step::Free {
                name: "kv".into(),
                vnc: 0,
            },
        ],
    );
    let p = plan::plan(&d).unwrap();
    assert!(p.fits());
    assert!(p.steps[1].held_after >= p.steps[0].held_after + GIB);
    assert!(p.steps[2].held_after + GIB <= p.steps[1].held_after);
    assert_eq!(p.steps[3].held_after + GIB, p.steps[2].held_after);
    assert!(p.neffs.is_empty() && p.tensors.is_empty());
    let mut bad = d.clone();
    bad.steps.push(Step::Unload {
        file: f.clone(),
        vnc: 0,
    });
    match plan::plan(&bad) {
        // Found before anything is planned, naming the step.
        Err(PlanError::Deployment(e)) => {
            assert_eq!(e.place, "step 5", "{e}");
            assert!(e.what.contains("nothing loads"), "{e}");
            assert!(e.what.contains("on core 0"), "{e}");
        }
        other => panic!("{:?}", other.map(|p| p.fits())),
    }
}

/// Profiler buffers sized by the deployment's variables are held on every
/// physical core a load uses, in the Profiler Buffers column.
#[test]
fn profile_buffers_are_held_per_core() {
    let dir = tmpdir("profile");
    let f = neff(&dir, "p", 0);
    let mut d = trn2_3xl(2, vec![load(&f, 1)]);
    d.env
        .push(("NEURON_RT_PROFILE_BUF_DMA_MB".into(), "64".into()));
    d.env
        .push(("NEURON_RT_PROFILE_BUF_EVENT_MB".into(), "32".into()));
    let p = plan::plan(&d).unwrap();
    // Beside them, the default line's own start-up reservation (2.35's
    // for DMA profiling) on the first physical core of every logical core.
    let line = neffld_testkit::reserved_per_logical_core(RuntimeLine::NEWEST);
    let reserved = |pcore: u32| if pcore.is_multiple_of(2) { line } else { 0 };
    let hbm1 = &p.devices[0].hbms[1];
    for c in &hbm1.cores {
        assert_eq!(
            c.usage().get(Column::ProfilerBuffers),
            96 * MIB + reserved(c.pcore.0),
            "{:?}",
            c.pcore
        );
    }
    assert_eq!(
        p.devices[0].hbms[0].usage().get(Column::ProfilerBuffers),
        line
    );
}

/// A core no load has used yet takes its profiler buffers with its first
/// load, so headroom counts them there: the copies it reports are the loads
/// a re-plan with them appended accepts, and one more is refused.
#[test]
fn headroom_counts_the_profile_buffers_of_a_cores_first_load() {
    let dir = tmpdir("profile-headroom");
    let dense = neff(&dir, "dense", 2 * GIB);
    let planned = |extra: u32| {
        let mut steps = vec![
            load(&dense, 0),
            Step::Tensor {
                name: "kv".into(),
                size: 4 * GIB,
                vnc: 1,
            },
        ];
        steps.extend((0..extra).map(|_| load(&dense, 1)));
        let mut d = trn2_3xl(2, steps);
        d.env
            .push(("NEURON_RT_PROFILE_BUF_EVENT_MB".into(), "8000".into()));
        plan::plan(&d).unwrap()
    };
    let p = planned(0);
    assert!(p.fits());
    let h1 = p.headroom.iter().find(|h| h.vnc == 1).unwrap();
    let (_, copies) = h1
        .copies
        .iter()
        .find(|(f, _)| f == &dense)
        .expect("a column for dense");
    assert!(!copies.at_least && copies.refused.is_none(), "{copies:?}");
    // 2 x 8000 MB of buffers beside 4 GiB leave room for a few 2 GiB
    // loads, not the nine the HBM would take without them.
    assert!((1..9).contains(&copies.count), "{copies:?}");
    assert!(planned(copies.count).fits(), "{} copies", copies.count);
    let over = planned(copies.count + 1);
    assert_eq!(
        over.refusal.as_ref().map(|r| r.step),
        Some(2 + copies.count as usize)
    );
}

/// A load whose profiler buffers are refused is refused whole: the model
/// is unloaded and no buffer of it stays, as `nrt_load` leaves nothing
/// behind; the refusal's table still shows what it had placed.
#[test]
fn a_load_refused_for_its_profile_buffers_leaves_nothing() {
    let dir = tmpdir("profile-refused");
    let f = neff(&dir, "p", 0);
    let mut d = trn2_3xl(2, vec![load(&f, 0)]);
    d.env
        .push(("NEURON_RT_PROFILE_BUF_EVENT_MB".into(), "8000".into()));
    d.env
        .push(("NEURON_RT_PROFILE_BUF_DMA_MB".into(), "8000".into()));
    let p = plan::plan(&d).unwrap();
    let r = p.refusal.as_ref().expect("refused");
    assert_eq!(
        (r.step, r.request.usage),
        (0, neffld::device::MemUsage::Notification)
    );
    assert!(p.neffs.is_empty(), "{:?}", p.neffs);
    let hbm0 = &p.devices[0].hbms[0];
    // Only the runtime's own (the default line's reservation for DMA
    // profiling, on core 0) is left.
    assert_eq!(
        hbm0.usage().get(Column::ProfilerBuffers),
        neffld_testkit::reserved_per_logical_core(RuntimeLine::NEWEST)
    );
    for c in &hbm0.cores {
        assert!(c.models.is_empty(), "{:?} holds {:?}", c.pcore, c.models);
    }
    // The next load on the core still takes its buffers: none was marked
    // as held.
    let h0 = &p.headroom[0];
    assert_eq!(h0.copies[0].1.count, 0, "{:?}", h0.copies);
}

/// A load refused part-way is in the runtime's table with what it had
/// placed, and the mapping names it too.
#[test]
fn a_refused_load_is_named_in_the_refusal() {
    let dir = tmpdir("refused-load");
    let dense = neff(&dir, "dense", 10 * GIB);
    let p = plan::plan(&trn2_3xl(
        1,
        vec![load(&dense, 0), load(&dense, 0), load(&dense, 0)],
    ))
    .unwrap();
    let r = p.refusal.as_ref().unwrap();
    assert_eq!(r.step, 2);
    assert_eq!(r.what, "big", "the third load's private buffer");
    let table = &r.log.last().unwrap().1;
    assert!(
        table
            .trim_end()
            .ends_with("1: \"dense\"\n2: \"dense\"\n3: \"dense\""),
        "{table}"
    );
    assert_eq!(p.neffs.len(), 2, "the refused load rolled back");
}

/// A planner's loads keep no host copy of their images and rings: on a
/// device that keeps no bytes those copies were most of what a loaded model
/// held on the host (4 MiB of matmul_large's), so a plan of 64 ranks held
/// 64 times one load. The device and its ledger see the same load either way.
#[test]
fn loads_that_do_not_retain_images_hold_no_copy_of_them() {
    let neff = neffld_testkit::fixture("matmul_large.neff");
    let mut seen = Vec::new();
    for retain_images in [true, false] {
        let rt = Runtime::new(RuntimeConfig {
            loader: Loader {
                device: DeviceKind::Null,
                retain_images,
                ..Default::default()
            },
            ..Default::default()
        })
        .unwrap();
        let m = rt.load(&neff, Some(0)).unwrap();
        let (images, rings, slots) = rt
            .with_model(&m, |lm| {
                let sum = |f: &dyn Fn(&neffld::stage::CoreImage) -> usize| {
                    lm.cores.iter().map(f).sum::<usize>()
                };
                (
                    sum(&|c| c.engines.iter().map(|e| e.image.bytes.len()).sum()),
                    sum(&|c| c.rings.iter().map(|r| r.image.bytes.len()).sum()),
                    sum(&|c| {
                        c.engines
                            .iter()
                            .flat_map(|e| &e.image.layout.sections)
                            .map(|s| s.slots as usize)
                            .sum()
                    }),
                )
            })
            .unwrap();
        if retain_images {
            assert_eq!(images, slots * 64, "the images are kept whole");
            assert!(images > 1 << 20, "{images}");
        } else {
            assert_eq!((images, rings), (0, 0), "no copy kept");
        }
        let stats = neffld::report::MemoryStats::of_vnc(&rt, 0).unwrap();
        seen.push((slots, stats.used, stats.cores.len()));
        rt.unload(&m).unwrap();
    }
    assert_eq!(seen[0], seen[1], "where everything landed is the same");
}

/// The contiguous scratchpad's fragmentation, as the device-memory
/// documentation describes it: a tensor fills the HBM right up to the
/// region, a tensor below it is freed, and a NEFF that needs more
/// scratchpad is refused (the region cannot grow in place) though the
/// freed bytes would hold it. The advice is the documentation's own,
/// `NEURON_RT_CONTIGUOUS_SCRATCHPAD=0`, judged by planning again: with
/// pages of the same 64 MiB anywhere, every step fits.
#[test]
fn a_region_that_cannot_grow_is_advised_the_paged_scratchpad() {
    let dir = tmpdir("fragment");
    let spill = |mib: u64| {
        move |d: &mut serde_json::Value| {
            d["var"]["v_sg0000"]["size"] = json!(mib * MIB);
        }
    };
    let a = neff_with(&dir, "small_spill", 0, spill(8));
    let b = neff_with(&dir, "large_spill", 0, spill(150));
    let env = vec![("NEURON_SCRATCHPAD_PAGE_SIZE".to_string(), "64".to_string())];
    let tensor = |name: &str, size: u64| Step::Tensor {
        name: name.into(),
        size,
        vnc: 0,
    };
    let free = |name: &str| Step::Free {
        name: name.into(),
        vnc: 0,
    };
    let below = tensor("below", 2 * GIB);
    // What is left between `below` and A's one-page region: the largest
    // further tensor.
    let first = Deployment {
        env: env.clone(),
        ..trn2_3xl(2, vec![below.clone(), load(&a, 0)])
    };
    let p = plan::plan(&first).unwrap();
    assert_eq!(p.line, RuntimeLine::NEWEST);
    let gap = p.headroom[0].largest_tensor;
    let d = Deployment {
        env,
        ..trn2_3xl(
            2,
            vec![
                below,
                load(&a, 0),
                tensor("fill", gap),
                free("below"),
                load(&b, 0),
            ],
        )
    };
    let p = plan::plan(&d).unwrap();
    assert!(!p.fits());
    let r = p.refusal.as_ref().unwrap();
    assert_eq!(r.step, 4, "the second load is refused: {r:?}");
    assert_eq!(r.request.usage, neffld::device::MemUsage::Scratchpad);
    assert_eq!(r.request.size, 64 * MIB, "one more step of the region");
    // Why, with more than a GiB free in one block: the region's page must
    // go where the region begins (it said the 64 MiB "needs one contiguous
    // block and the largest is 14.7 GB").
    assert!(r.in_place, "{r:?}");
    let why = r.explain().expect("explained");
    assert!(
        why.contains("grows only in place") && !why.contains("needs one contiguous block"),
        "{why}"
    );
    let free_then = r.memory.hbm_of(r.request.core).unwrap().free();
    assert!(free_then > GIB, "refused with {free_then} bytes free");
    let a = p
        .advice
        .iter()
        .find(|a| matches!(a.kind, AdviceKind::PagedScratchpad))
        .unwrap_or_else(|| panic!("{:?}", p.advice));
    assert!(a.fits, "{a:?}");
    assert_eq!(a.change, "--env NEURON_RT_CONTIGUOUS_SCRATCHPAD=0");
    // The same plan, paged, by hand.
    let mut paged = d.clone();
    paged
        .env
        .push(("NEURON_RT_CONTIGUOUS_SCRATCHPAD".into(), "0".into()));
    assert!(plan::plan(&paged).unwrap().fits());
}

/// Two paths to the same bytes (a copy and a link) are one NEFF: read and
/// parsed once, measured once in the headroom, and never advised against as
/// if the other path were a different model; each load still keeps the
/// path it was named by, and an unload names that path.
#[test]
fn paths_to_the_same_bytes_are_one_neff() {
    let dir = tmpdir("same-bytes");
    let a = neff(&dir, "same", 64 * MIB);
    let copy = dir.join("copy.neff");
    std::fs::copy(&a, &copy).unwrap();
    let link = dir.join("link.neff");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&a, &link).unwrap();
    let other = neff(&dir, "other", 32 * MIB);
    let steps = vec![
        load(&a, 0),
        load(&copy, 1),
        load(&link, 2),
        load(&other, 3),
        Step::Unload {
            file: copy.clone(),
            vnc: 1,
        },
    ];
    let p = plan::plan(&trn2_3xl(1, steps)).unwrap();
    assert!(p.fits(), "{:?}", p.failed_step());
    assert_eq!(p.parses, 2, "two distinct NEFFs");
    let files: Vec<_> = p.neffs.iter().map(|n| n.file.clone()).collect();
    assert_eq!(files, [a.clone(), link.clone(), other.clone()]);
    for h in &p.headroom {
        let named: Vec<_> = h.copies.iter().map(|(f, _)| f.clone()).collect();
        assert_eq!(named, [a.clone(), other.clone()], "core {}", h.vnc);
    }
    for adv in &p.advice {
        if let AdviceKind::Without { file } = &adv.kind {
            assert!(file == &a || file == &other, "{file:?}");
        }
    }
}

/// `--solve kv@CORES`: the answer S is checked by planning again, as a user
/// would, with the tensor appended: S on every core fits, one granule more
/// is refused.
#[test]
fn a_solved_size_fits_and_one_granule_more_does_not() {
    let dir = tmpdir("solve");
    let a = neff(&dir, "solve-a", 512 * MIB);
    let base = vec![load(&a, 0), load(&a, 1), load(&a, 2)];
    let mut d = trn2_3xl(1, base.clone());
    d.solve = Some(plan::Solve::Tensor {
        name: "kv".into(),
        cores: vec![0, 1, 2],
    });
    let p = plan::plan(&d).unwrap();
    assert!(p.fits());
    let Some(Ok(plan::SolveAnswer::Bytes(s))) = p.solve.as_ref().map(|s| s.answer.clone()) else {
        panic!("{:?}", p.solve)
    };
    assert_eq!(s % 4096, 0);
    let with = |size: u64| {
        let mut steps = base.clone();
        steps.extend(plan::parse_tensor(&format!("kv={size}@0,1,2")).unwrap());
        plan::plan(&trn2_3xl(1, steps)).unwrap().fits()
    };
    assert!(with(s), "S = {s} must fit on every core");
    assert!(!with(s + 4096), "S + 4 KiB must be refused");
    // Cores 0 and 1 share HBM 0 at LNC 1: S is under half of it.
    assert!(s < 12 * GIB, "{s}");
}

/// A copies answer: (count, per core, stopped, ceiling).
type Copies = (
    u32,
    Vec<(u32, u32)>,
    Option<plan::StepFailure>,
    Option<String>,
);

/// The copies answer of `d`.
fn copies_of(d: &Deployment) -> Copies {
    let p = plan::plan(d).unwrap();
    let Some(Ok(plan::SolveAnswer::Ranks {
        count,
        per_core,
        stopped,
        ceiling,
    })) = p.solve.as_ref().map(|s| s.answer.clone())
    else {
        panic!("{:?}", p.solve)
    };
    (count, per_core, stopped, ceiling)
}

/// `--solve FILE@CORES`: how many copies of FILE fit on those cores, each
/// listed core counted once (`@3,3,3` asked three loads and answered at
/// most 3), beside the deployment or on the empty instance (a deployment
/// of no step was refused, "has no step"). Each answer is checked as a
/// user would: the deployment planned again with the copies appended fits,
/// and with one more copy on a core it is refused as the answer says.
#[test]
fn a_solve_counts_the_copies_that_fit_on_its_cores() {
    let dir = tmpdir("copies");
    let a = neff(&dir, "copies-a", 2 * GIB);
    let b = neff(&dir, "copies-b", 3 * GIB);
    let ask = |steps: Vec<Step>, cores: Option<Vec<u32>>| {
        let mut d = trn2_3xl(1, steps);
        d.solve = Some(plan::Solve::Ranks {
            file: a.clone(),
            cores,
        });
        d
    };
    let with = |steps: &[Step], copies: &[u32]| {
        let mut steps = steps.to_vec();
        steps.extend(copies.iter().map(|&v| load(&a, v)));
        plan::plan(&trn2_3xl(1, steps)).unwrap()
    };
    for base in [vec![], vec![load(&b, 2), load(&b, 3)]] {
        // One core, however often it is listed.
        let (n, per_core, stopped, ceiling) = copies_of(&ask(base.clone(), Some(vec![3, 3, 3])));
        assert_eq!(per_core, [(3, n)], "{base:?}");
        assert_eq!(ceiling, None);
        assert!(n > 3, "{n}: more than one per listing");
        assert!(with(&base, &vec![3; n as usize]).fits(), "{n} copies fit");
        let over = with(&base, &vec![3; n as usize + 1]);
        let (_, _, refused) = over.failed_step().expect("one more is refused");
        assert_eq!(stopped.as_ref(), Some(refused));
        assert_eq!(refused.status, neffld::NrtStatus::Resource, "{refused:?}");
        // Beside b on core 2, which shares core 3's HBM: fewer.
        if !base.is_empty() {
            let (alone, ..) = copies_of(&ask(vec![], Some(vec![3])));
            assert!(n < alone, "{n} beside b, {alone} alone");
        }
    }
    // Without @: over every logical core of the instance, in turn.
    let (n, per_core, _, ceiling) = copies_of(&ask(vec![], None));
    assert_eq!(ceiling, None);
    assert_eq!(
        per_core.iter().map(|&(c, _)| c).collect::<Vec<_>>(),
        (0..8).collect::<Vec<_>>()
    );
    assert_eq!(per_core.iter().map(|&(_, k)| k).sum::<u32>(), n);
    let mut turn: Vec<u32> = Vec::new();
    for round in 0..per_core.iter().map(|&(_, k)| k).max().unwrap() {
        turn.extend(
            per_core
                .iter()
                .filter(|&&(_, k)| k > round)
                .map(|&(c, _)| c),
        );
    }
    assert!(with(&[], &turn).fits(), "the {n} copies fit");
    for &(core, _) in &per_core {
        let mut more = turn.clone();
        more.push(core);
        assert!(
            !with(&[], &more).fits(),
            "core {core} takes no further copy"
        );
    }
}

/// The copies a solve loads are neffld's own work, bounded by the step
/// ceiling (`NEFFLD_MAX_STEPS`, the deployment's steps counted in): a
/// count stopped there says so and is "at least".
#[test]
fn a_copies_count_stops_at_the_step_ceiling() {
    let dir = tmpdir("copies-ceiling");
    let a = neff(&dir, "ceiling-a", 64 * MIB);
    let mut d = trn2_3xl(1, vec![load(&a, 0)]);
    d.env.push(("NEFFLD_MAX_STEPS".into(), "4".into()));
    d.solve = Some(plan::Solve::Ranks {
        file: a.clone(),
        cores: Some(vec![0]),
    });
    let (n, per_core, _, ceiling) = copies_of(&d);
    assert_eq!((n, per_core), (3, vec![(0, 3)]));
    let c = ceiling.expect("the ceiling stopped it");
    assert!(c.starts_with("NEFFLD_MAX_STEPS=4"), "{c}");
}

/// `--solve NAME@CORES` with no step: the largest tensor on the empty
/// instance, which a tensor of that size fits and one granule more does
/// not.
#[test]
fn a_tensor_solve_answers_on_the_empty_instance() {
    let mut d = trn2_3xl(1, vec![]);
    d.solve = Some(plan::Solve::Tensor {
        name: "kv".into(),
        cores: vec![0],
    });
    let p = plan::plan(&d).unwrap();
    assert!(p.fits() && p.steps.is_empty());
    let Some(Ok(plan::SolveAnswer::Bytes(s))) = p.solve.as_ref().map(|s| s.answer.clone()) else {
        panic!("{:?}", p.solve)
    };
    let with = |size: u64| {
        let steps = plan::parse_tensor(&format!("kv={size}@0")).unwrap();
        plan::plan(&trn2_3xl(1, steps)).unwrap().fits()
    };
    assert!(s > 20 * GIB, "{s}: most of an empty 24 GiB HBM");
    assert!(with(s) && !with(s + 4096), "{s}");
}

/// A tensor refused with more bytes free on its HBM than it asks: the
/// refusal's pools add up to the runtime's free figure, no pool's longest
/// range holds the request, and the plan says why in words.
#[test]
fn a_refusal_with_more_free_than_asked_says_why() {
    let dir = tmpdir("gap");
    let a = neff(&dir, "gap", 512 * MIB);
    let mut steps = vec![load(&a, 0)];
    steps.extend(plan::parse_tensor("kv=22GiB@1").unwrap());
    let p = plan::plan(&trn2_3xl(1, steps)).unwrap();
    assert!(!p.fits());
    let r = p.refusal.as_ref().unwrap();
    let free: u64 = r.pools.iter().map(|x| x.free).sum();
    let (_, _, f) = p.failed_step().unwrap();
    assert!(
        f.message.contains(&format!("has {free} bytes free")),
        "{}",
        f.message
    );
    assert!(free >= 22 * GIB, "the case: more free than asked ({free})");
    assert!(r.pools.iter().all(|x| x.longest < 22 * GIB));
    assert_eq!(r.pools.len(), 2, "main and small pool");
    let why = r.explain().expect("explained");
    assert!(why.contains("one contiguous block"), "{why}");
    assert!(why.contains("small pool"), "{why}");
    // Headroom: its largest tensor is the longest range of the HBM's pools,
    // under the HBM's free bytes, and says why.
    let h = &p.headroom[0];
    assert_eq!(
        h.largest_tensor,
        h.pools.iter().map(|x| x.longest).max().unwrap()
    );
    assert!(h.largest_tensor < h.hbm_free);
    assert!(h.explain().is_some());
}

/// A refused plan with private scratchpad: the page-size advice names the
/// private scratchpad the usage table shows where the plan stopped (1 GiB,
/// computed from the NEFF's one 1 GiB variable), not that figure added to
/// the refusal's snapshot of the same memory.
#[test]
fn the_scratchpad_figure_of_a_refused_plan_is_the_tables() {
    let dir = tmpdir("pages-refused");
    let f = neff_with(&dir, "spill2", 0, |v| {
        v["var"]["v_sg0000"]["size"] = json!(GIB);
    });
    let mut steps = vec![load(&f, 0)];
    steps.extend(plan::parse_tensor("kv=30GiB@0").unwrap());
    let d = Deployment {
        runtime: Some(RuntimeLine::V2_30),
        ..trn2_3xl(2, steps)
    };
    let p = plan::plan(&d).unwrap();
    assert!(!p.fits());
    let table: u64 = p
        .devices
        .iter()
        .flat_map(|m| &m.hbms)
        .map(|h| h.usage().get(Column::Scratchpad))
        .sum();
    assert_eq!(table, GIB);
    if let Some(a) = p
        .advice
        .iter()
        .find(|a| matches!(a.kind, AdviceKind::ScratchpadPage { .. }))
    {
        let human = neffld::report::memory::human_size;
        let scratchpad = |p: &plan::Plan| {
            let sum = |c: Column| -> u64 {
                p.devices
                    .iter()
                    .flat_map(|m| &m.hbms)
                    .map(|h| h.usage().get(c))
                    .sum()
            };
            (sum(Column::SharedScratchpad), sum(Column::Scratchpad))
        };
        let (shared, private) = scratchpad(&p);
        assert_eq!(private, GIB);
        assert!(
            a.reason.contains(&format!(
                "{} shared and {} private",
                human(shared),
                human(private)
            )),
            "{}",
            a.reason
        );
        // The figures with the advised page size are that plan's own.
        let AdviceKind::ScratchpadPage { mib } = a.kind else {
            unreachable!()
        };
        let mut changed = d.clone();
        changed
            .env
            .push(("NEURON_SCRATCHPAD_PAGE_SIZE".into(), mib.to_string()));
        let (shared_then, private_then) = scratchpad(&plan::plan(&changed).unwrap());
        assert!(
            a.reason.contains(&format!(
                "with {mib} MiB pages {} shared and {} private",
                human(shared_then),
                human(private_then)
            )),
            "{}",
            a.reason
        );
        assert!(!a.fits, "a 30 GiB tensor never fits a 24 GiB HBM");
        assert!(a.reason.contains("still does not fit"), "{}", a.reason);
    } else {
        panic!("page-size advice expected: {:?}", p.advice);
    }
    // The tensor at the size that fits beside the rest does (issue 40 row
    // 12), so the plan has a fix.
    assert!(p
        .advice
        .iter()
        .any(|a| matches!(a.kind, AdviceKind::TensorSize { .. }) && a.fits));
    assert!(p.no_fix.is_none());
}

/// Issue 40 row 3: the headroom's counting is bounded by the allocations
/// it makes (`NEFFLD_MAX_HEADROOM`), shared out between the cores and
/// NEFFs it measures; it took 2.5 s a distinct core for NEFFs of 20,000
/// small variables, each copy making all 20,000 again. Four cores, each
/// with a tensor of its own (so no two share a measurement), count copies
/// of a NEFF of 2,000 variables within a quarter of 40,000 allocations
/// each: a load's and then four copies', at least.
#[test]
fn the_headroom_counts_within_its_ceiling() {
    let dir = neffld_testkit::ScratchDir::new("headroom-work");
    let mut s = Synth::dynamic_cayman();
    s.edit("sg00/def.json", |d| {
        let vars = d["var"].as_object_mut().unwrap();
        let first = vars.len() as u64;
        for id in first..first + 2_000 {
            vars.insert(
                format!("t{id}"),
                serde_json::json!({"type": "tmp-buf", "var_id": id, "size": 64}),
            );
        }
    });
    std::fs::write(
        dir.join("vars.neff"),
        s.write(neffld::container::writer::Producer::V2_21),
    )
    .unwrap();
    let mut toml = String::from(
        "instance = \"trn2.48xlarge\"\n[env]\nNEFFLD_MAX_HEADROOM = \"40000\"\n\
         [[step]]\nload = \"vars.neff\"\ncores = \"0-3\"\n",
    );
    for core in 0..4 {
        toml.push_str(&format!(
            "[[step]]\ntensor = \"t{core}\"\nsize = {}\ncores = \"{core}\"\n",
            4096 * (core + 1)
        ));
    }
    let d = plan::parse_toml(&toml, "d.toml", &dir).unwrap();
    let p = plan::plan(&d).unwrap();
    assert!(p.fits());
    assert_eq!(p.headroom.len(), 4);
    for h in &p.headroom {
        let (_, c) = &h.copies[0];
        assert!(c.at_least, "core {}: {c:?}", h.vnc);
        assert!((2..=6).contains(&c.count), "core {}: {c:?}", h.vnc);
    }
}
