//! The scratchpad as the runtime's documentation states its rules
//! (docs/reference/memory.md), on NEFFs the writer builds: the documented
//! worked example of two NEFFs on one core with 512 MiB and 2 GiB pages,
//! read through the memory report's 'shared scratchpad' and 'scratchpad'
//! columns; the shared pages growing and shrinking with loads and unloads;
//! and the contiguous mode.

use neffld::api::{Model, Runtime};
use neffld::config::{DeviceKind, Loader, RuntimeConfig, Topology};
use neffld::device::{AllocReq, Device, MemUsage, Owner, Place};
use neffld::ids::{PCore, VarId};
use neffld::report::{Column, MemoryReport, Usage};
use neffld::stage::Placement;
use neffld::Arch;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// One virtual variable: `(backing_variable_off, size)`.
type Var = (u64, u64);

/// The documentation's NEFF A: `a_var1` 512 MB at 0, `a_var2` 1 GB at 512 MB.
const NEFF_A: [Var; 2] = [(0, 512 * MIB), (512 * MIB, GIB)];
/// Its NEFF B: `b_var1` 100 MB at 0, `b_var2` 1.5 GB at 100 MB.
const NEFF_B: [Var; 2] = [(0, 100 * MIB), (100 * MIB, 1536 * MIB)];

/// The var ids of the two virtual variables in [`Synth::static_sunda`].
const VAR1: VarId = VarId(4);
const VAR2: VarId = VarId(5);

/// A one-subgraph trn1 NEFF named `name` whose two virtual variables are
/// `vars` (the writer's static NEFF, its spill variables resized).
fn neff(name: &str, vars: [Var; 2]) -> Vec<u8> {
    neffld_testkit::scratchpad_example(name, vars)
}

/// A trn1 runtime on an accounting-only device, configured by `env`.
fn runtime(env: &[(&str, &str)]) -> Runtime {
    let config = RuntimeConfig {
        topology: Topology {
            arch: Arch::Sunda,
            ..Default::default()
        },
        loader: Loader {
            device: DeviceKind::Null,
            ..Default::default()
        },
        ..Default::default()
    }
    .with_env(|k| {
        env.iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.to_string())
    })
    .unwrap();
    Runtime::new(config).unwrap()
}

fn device(rt: &Runtime) -> &Device {
    rt.devices().next().unwrap()
}

/// What the documentation's rules give for NEFFs of `vars` loaded on one
/// core with pages of `page` bytes, worked out here from the variables
/// alone: the shared scratchpad is the largest `max(offset + size)` rounded
/// up to whole pages, and a variable with `(offset % page) + size > page`
/// is a private allocation of its NEFF.
fn documented(vars: &[[Var; 2]], page: u64) -> (u64, Vec<u64>) {
    let need = vars
        .iter()
        .map(|v| v.iter().map(|(o, s)| o + s).max().unwrap())
        .max()
        .unwrap_or(0);
    let private = vars
        .iter()
        .map(|v| {
            v.iter()
                .filter(|(o, s)| o % page + s > page)
                .map(|(_, s)| s)
                .sum()
        })
        .collect();
    (need.div_ceil(page) * page, private)
}

/// Core 0's 'shared scratchpad' and 'scratchpad' columns, and each loaded
/// NEFF's 'scratchpad' column in `H_MODEL` order, from the memory report.
fn columns(rt: &Runtime) -> (u64, u64, Vec<u64>) {
    let report = MemoryReport::of(0, device(rt));
    let core = &report.hbm_of(PCore(0)).unwrap().cores[0];
    let u = core.usage();
    let neffs = core
        .models
        .iter()
        .map(|(_, rows)| Usage::of(rows).get(Column::Scratchpad))
        .collect();
    (
        u.get(Column::SharedScratchpad),
        u.get(Column::Scratchpad),
        neffs,
    )
}

/// The cells of one row of the usage table (its label first), as printed.
fn table_row(rt: &Runtime, label: &str) -> Vec<String> {
    let report = MemoryReport::of(0, device(rt));
    let table = report.usage_table(report.hbm_of(PCore(0)).unwrap());
    let line = table
        .lines()
        .find(|l| l.starts_with(label))
        .unwrap_or_else(|| panic!("no {label} row in\n{table}"));
    line.split('|').map(|c| c.trim().to_string()).collect()
}

/// Index of a column's cell in a [`table_row`]: the label, TOTAL, then the
/// columns in order.
fn cell(c: Column) -> usize {
    2 + Column::ALL.iter().position(|&x| x == c).unwrap()
}

fn placement(rt: &Runtime, m: &Model, var: VarId) -> Placement {
    rt.with_model(m, |lm| lm.cores[0].plan.vars[var.0 as usize])
        .unwrap()
}

fn scratchpad_pa(p: Placement) -> u64 {
    match p {
        Placement::Scratchpad { pa, .. } => pa,
        other => panic!("not in the shared scratchpad: {other:?}"),
    }
}

/// The paged mode, as the documented example runs (the contiguous mode
/// turned off, as on every line before 2.33).
const PAGED: (&str, &str) = ("NEURON_RT_CONTIGUOUS_SCRATCHPAD", "0");

/// The documented example with the default 512 MiB pages: 2 GiB of shared
/// scratchpad (four pages) and 2.5 GiB of private allocations, 1 GiB of
/// them NEFF A's and 1.5 GiB NEFF B's; the two first variables share the
/// first page. Unloads shrink the pages to the largest need left.
#[test]
fn the_documented_example_with_512_mib_pages() {
    let rt = runtime(&[PAGED]);
    let (a, b) = (neff("neff_a", NEFF_A), neff("neff_b", NEFF_B));
    let page = 512 * MIB;
    let ma = rt.load(&a, Some(0)).unwrap();
    assert_eq!(
        columns(&rt),
        (3 * page, GIB, vec![GIB]),
        "A alone: 1.5 GiB of pages"
    );
    let mb = rt.load(&b, Some(0)).unwrap();
    // The documentation's figures, and its rules applied to the variables.
    assert_eq!(
        columns(&rt),
        (2 * GIB, 2 * GIB + GIB / 2, vec![GIB, 1536 * MIB])
    );
    let (shared, private) = documented(&[NEFF_A, NEFF_B], page);
    assert_eq!(columns(&rt), (shared, private.iter().sum(), private));
    // As the usage table prints them.
    let nc = table_row(&rt, "\\_NC 0");
    assert_eq!(nc[cell(Column::SharedScratchpad)], "2.000GB");
    assert_eq!(nc[cell(Column::Scratchpad)], "2.500GB");
    for (label, private) in [("  \\_NEFF 1 ", "1.000GB"), ("  \\_NEFF 2 ", "1.500GB")] {
        let row = table_row(&rt, label);
        assert_eq!(row[cell(Column::SharedScratchpad)], "n/a", "{label}");
        assert_eq!(row[cell(Column::Scratchpad)], private, "{label}");
    }
    // The shared pages are the runtime's, the private allocations the NEFFs'.
    let ledger = device(&rt).ledger();
    assert_eq!(
        ledger.rows_of(PCore(0), Owner::Runtime)[MemUsage::Scratchpad.index()].requested,
        2 * GIB
    );
    // a_var1 and b_var1, both at offset 0, share the first page; the
    // second variables straddle pages and are private.
    let first = scratchpad_pa(placement(&rt, &ma, VAR1));
    assert_eq!(scratchpad_pa(placement(&rt, &mb, VAR1)), first);
    for m in [&ma, &mb] {
        assert!(matches!(placement(&rt, m, VAR2), Placement::Hbm { .. }));
    }

    rt.unload(&mb).unwrap();
    assert_eq!(columns(&rt), (3 * page, GIB, vec![GIB]), "back to A's need");
    let mb = rt.load(&b, Some(0)).unwrap();
    assert_eq!(columns(&rt).0, 4 * page);
    rt.unload(&ma).unwrap();
    assert_eq!(
        columns(&rt),
        (4 * page, 1536 * MIB, vec![1536 * MIB]),
        "B still holds all four pages"
    );
    assert_eq!(
        scratchpad_pa(placement(&rt, &mb, VAR1)),
        first,
        "pages never move while referenced"
    );
    rt.unload(&mb).unwrap();
    assert_eq!(columns(&rt), (0, 0, vec![]));
}

/// The same NEFFs with `NEURON_SCRATCHPAD_PAGE_SIZE=2048`: every variable
/// fits one shared 2 GiB page and nothing is private.
#[test]
fn the_documented_example_with_2_gib_pages() {
    let rt = runtime(&[PAGED, ("NEURON_SCRATCHPAD_PAGE_SIZE", "2048")]);
    let ma = rt.load(&neff("neff_a", NEFF_A), Some(0)).unwrap();
    let mb = rt.load(&neff("neff_b", NEFF_B), Some(0)).unwrap();
    assert_eq!(columns(&rt), (2 * GIB, 0, vec![0, 0]));
    let (shared, private) = documented(&[NEFF_A, NEFF_B], 2 * GIB);
    assert_eq!(columns(&rt), (shared, 0, private));
    let nc = table_row(&rt, "\\_NC 0");
    assert_eq!(nc[cell(Column::SharedScratchpad)], "2.000GB");
    assert_eq!(nc[cell(Column::Scratchpad)], "0.000B");
    let page = scratchpad_pa(placement(&rt, &ma, VAR1));
    assert_eq!(scratchpad_pa(placement(&rt, &ma, VAR2)), page + 512 * MIB);
    assert_eq!(scratchpad_pa(placement(&rt, &mb, VAR2)), page + 100 * MIB);
    rt.unload(&ma).unwrap();
    assert_eq!(columns(&rt), (2 * GIB, 0, vec![0]));
    rt.unload(&mb).unwrap();
    assert_eq!(columns(&rt).0, 0);
}

/// The two documented NEFFs under each line's default: the newest (and 2.33)
/// keep one contiguous region of 64 MiB pages, the largest need rounded up
/// — 1,636 MiB to 26 pages, 1.625 GiB — whatever page size is asked for;
/// 2.30 the paged mode's 2 GiB of pages and 2.5 GiB of private variables.
#[test]
fn each_line_holds_the_documented_example_its_own_way() {
    let both = |env: &[(&str, &str)]| {
        let rt = runtime(env);
        let ma = rt.load(&neff("neff_a", NEFF_A), Some(0)).unwrap();
        let mb = rt.load(&neff("neff_b", NEFF_B), Some(0)).unwrap();
        let (shared, private, _) = columns(&rt);
        let row = table_row(&rt, "\\_NC 0");
        rt.unload(&mb).unwrap();
        rt.unload(&ma).unwrap();
        (
            shared + private,
            row[cell(Column::SharedScratchpad)].clone(),
        )
    };
    let region = NEFF_B[1].0 + NEFF_B[1].1;
    let contiguous = region.div_ceil(64 * MIB) * 64 * MIB;
    assert_eq!(contiguous, 1664 * MIB);
    assert_eq!(both(&[]), (contiguous, "1.625GB".to_string()));
    assert_eq!(both(&[("NEFFLD_RUNTIME", "2.33")]).0, contiguous);
    assert_eq!(
        both(&[("NEURON_SCRATCHPAD_PAGE_SIZE", "2048")]).0,
        contiguous,
        "the page size is ignored while the region is contiguous"
    );
    let paged = 2 * GIB + 2 * GIB + GIB / 2;
    assert_eq!(both(&[PAGED]).0, paged);
    assert_eq!(both(&[("NEFFLD_RUNTIME", "2.30")]).0, paged);
    assert_eq!(both(&[("NEFFLD_RUNTIME", "2.32")]).0, paged);
}

/// The contiguous mode: 64 MiB pages forming one region that grows in
/// place (down from its fixed top) and shrinks from the bottom; no
/// variable is private, and each NEFF's variables stay inside the pages it
/// holds. A region that cannot grow refuses the load (2.33 on), however
/// much is free elsewhere, and leaves everything as it was.
#[test]
fn the_contiguous_mode_grows_one_region_in_place() {
    let rt = runtime(&[("NEURON_SCRATCHPAD_PAGE_SIZE", "2048")]);
    let (low_a, top, ma) = grow_a_region_for_a_then_b(&rt);

    // Something right under the region: it cannot grow for B.
    let squat = squat_under(&rt, low_a);
    let e = rt.load(&neff("neff_b", NEFF_B), Some(0)).unwrap_err();
    assert_eq!(e.status(), neffld::NrtStatus::Resource, "{e}");
    let free = device(&rt).free_bytes(0);
    assert!(free > 8 * GIB, "refused with {free} bytes free elsewhere");
    assert_eq!(region(&pages(&rt)), (low_a, top), "as it was");
    assert_eq!(columns(&rt), (24 * 64 * MIB, 0, vec![0]));
    rt.unload(&ma).unwrap();
    device(&rt).free(squat.handle).unwrap();
    assert!(pages(&rt).is_empty());
}

/// The older lines' experimental contiguous mode (asked for by variable):
/// a region that cannot grow stops at its ceiling and the variables beyond
/// it get private allocations, with the runtime's warning.
#[test]
fn the_experimental_contiguous_mode_of_older_lines_caps_its_region() {
    let rt = runtime(&[
        ("NEFFLD_RUNTIME", "2.30"),
        ("NEURON_RT_CONTIGUOUS_SCRATCHPAD", "1"),
        ("NEURON_SCRATCHPAD_PAGE_SIZE", "2048"),
    ]);
    let page = 64 * MIB;
    let (low_a, top, ma) = grow_a_region_for_a_then_b(&rt);
    let squat = squat_under(&rt, low_a);
    let mb = rt.load(&neff("neff_b", NEFF_B), Some(0)).unwrap();
    assert_eq!(region(&pages(&rt)), (low_a, top));
    assert_eq!(columns(&rt), (24 * page, 1536 * MIB, vec![0, 1536 * MIB]));
    assert_eq!(scratchpad_pa(placement(&rt, &mb, VAR1)), low_a);
    assert!(matches!(placement(&rt, &mb, VAR2), Placement::Hbm { .. }));
    let warnings = rt.with_model(&mb, |m| m.warnings.clone()).unwrap();
    assert!(
        warnings.iter().any(|w| w.starts_with(&format!(
            "Could not grow contiguous scratchpad beyond {} bytes",
            24 * page
        ))),
        "{warnings:?}"
    );
    rt.unload(&mb).unwrap();
    rt.unload(&ma).unwrap();
    device(&rt).free(squat.handle).unwrap();
    assert!(pages(&rt).is_empty());
}

/// The scratchpad pages of core 0, by address.
fn pages(rt: &Runtime) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = device(rt)
        .live_allocations()
        .into_iter()
        .filter(|a| a.usage == MemUsage::Scratchpad)
        .map(|a| (a.pa.0, a.size))
        .collect();
    v.sort();
    v
}

/// The one region `pages` form: its lowest and end addresses.
fn region(v: &[(u64, u64)]) -> (u64, u64) {
    for w in v.windows(2) {
        assert_eq!(w[0].0 + w[0].1, w[1].0, "pages are adjacent");
    }
    (v[0].0, v.last().map(|p| p.0 + p.1).unwrap())
}

/// A 4 KiB tensor right under `low`.
fn squat_under(rt: &Runtime, low: u64) -> neffld::device::Allocation {
    device(rt)
        .alloc(AllocReq {
            size: 4096,
            align: 0,
            core: PCore(0),
            usage: MemUsage::Tensor,
            owner: Owner::Client,
            place: Place::Under(Some(low)),
            hint: "squat",
        })
        .unwrap()
}

/// Loads A (24 pages), then B (26, the region grown downward in place),
/// checks where their variables are, and unloads B: A's region, its top,
/// and A's model.
fn grow_a_region_for_a_then_b(rt: &Runtime) -> (u64, u64, Model) {
    let page = 64 * MIB;
    let ma = rt.load(&neff("neff_a", NEFF_A), Some(0)).unwrap();
    // 1.5 GiB: 24 pages.
    let (low_a, top) = region(&pages(rt));
    assert_eq!(top - low_a, 24 * page);
    let mb = rt.load(&neff("neff_b", NEFF_B), Some(0)).unwrap();
    // 1.6 GiB (1,636 MiB): 26 pages, the region grown downward in place.
    let (low_b, top_b) = region(&pages(rt));
    assert_eq!((top_b, top - low_b), (top, 26 * page));
    assert_eq!(columns(rt), (26 * page, 0, vec![0, 0]));
    // Variables may span pages: each NEFF's arena starts at the lowest page
    // it holds.
    assert_eq!(scratchpad_pa(placement(rt, &ma, VAR2)), low_a + 512 * MIB);
    assert_eq!(scratchpad_pa(placement(rt, &mb, VAR2)), low_b + 100 * MIB);
    rt.unload(&mb).unwrap();
    assert_eq!(region(&pages(rt)), (low_a, top), "shrunk from the bottom");
    (low_a, top, ma)
}
