//! Host memory follows what the device holds: a DMA expansion costs the
//! ring images it describes and no more, the simulated device keeps one
//! copy of what a load writes and gives it all back on unload.
//!
//! This binary counts every heap byte (a counting global allocator) and,
//! for the simulated device's own mappings, its stored pages. Its tests
//! run one after another (one lock), since the counts are process-wide.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use neffld::api::Runtime;
use neffld::config::{DeviceKind, Loader, RuntimeConfig, Topology};
use neffld::container::writer::Producer;
use neffld::device::{Device, Geometry, SimDevice};
use neffld::Arch;
use neffld_testkit::{fixture, Synth};
use serde_json::json;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; the
// counters are only read by the tests.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let p = unsafe { System.alloc_zeroed(l) };
        if !p.is_null() {
            let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        // SAFETY: `p` came from this allocator with layout `l`.
        unsafe { System.dealloc(p, l) }
    }

    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged.
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            LIVE.fetch_sub(l.size(), Ordering::Relaxed);
            let now = LIVE.fetch_add(new, Ordering::Relaxed) + new;
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        q
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// One test at a time: the counters are the process's.
static ONE: Mutex<()> = Mutex::new(());

fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// Starts a new peak from what is live now.
fn reset_peak() -> usize {
    let now = live();
    PEAK.store(now, Ordering::Relaxed);
    now
}

const MIB: usize = 1 << 20;

/// The demo-like trn1 NEFF whose spill blocks move `runs` runs of 2 bytes
/// with step 0 (the issue's reproducer, at a test's scale): static rings
/// of `3 × runs` descriptor pairs in all, nearly all of the NEFF's device
/// memory.
fn dma_neff(runs: u64) -> Vec<u8> {
    let mut s = Synth::static_sunda();
    for engine in ["sg00/SP.json", "sg00/Pool.json"] {
        s.edit(engine, |v| {
            for block in v["dma"].as_array_mut().unwrap() {
                if block["queue"].as_str().unwrap().contains("Spill") {
                    for d in block["desc"].as_array_mut().unwrap() {
                        for side in ["from", "to"] {
                            d[format!("{side}_sizes")] = json!([2, runs]);
                            d[format!("{side}_steps")] = json!([1, 0]);
                        }
                    }
                }
            }
        });
    }
    s.write(Producer::V2_18)
}

/// A DMA expansion holds the ring images it describes and nothing of the
/// size of its descriptors besides: on a device that keeps no bytes, the
/// load's peak heap is the rings' bytes (16 per descriptor, TX and RX)
/// and a little more, not several times them.
#[test]
fn a_dma_expansion_costs_the_rings_it_describes() {
    let _one = ONE.lock().unwrap_or_else(|p| p.into_inner());
    const RUNS: u64 = 1 << 20;
    let neff = dma_neff(RUNS);
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
    };
    let rt = Runtime::new(config).unwrap();
    let before = reset_peak();
    let m = rt.load(&neff, None).unwrap();
    let rings: usize = rt
        .with_model(&m, |lm| {
            lm.cores
                .iter()
                .flat_map(|c| &c.rings)
                .map(|r| r.image.bytes.len())
                .sum()
        })
        .unwrap();
    let peak = PEAK.load(Ordering::Relaxed) - before;
    rt.unload(&m).unwrap();
    assert!(rings >= 3 * RUNS as usize * 32, "{rings}");
    assert!(
        peak <= rings + rings / 8 + 16 * MIB,
        "peak heap {peak} for {rings} bytes of rings"
    );
}

/// The simulated device keeps one copy of what a load writes: sixteen
/// loads of matmul_large cost about sixteen times the bytes written (the
/// model's images are the device's, not a second copy), and unloading them
/// gives it all back.
#[test]
fn the_simulated_device_holds_what_is_written_and_returns_it() {
    let _one = ONE.lock().unwrap_or_else(|p| p.into_inner());
    let neff = fixture("matmul_large.neff");
    let sim = Arc::new(SimDevice::new(Geometry::for_arch(Arch::Cayman)));
    let rt = Runtime::with_device(RuntimeConfig::default(), sim.clone() as Arc<Device>).unwrap();
    // One load and unload first, so that what stays for the process
    // (thread pools, lazily built tables) is counted before, not after.
    let m = rt.load(&neff, Some(0)).unwrap();
    rt.unload(&m).unwrap();
    let held = || live() + sim.stored_pages() * 4096;
    let before = held();
    let models: Vec<_> = (0..16).map(|_| rt.load(&neff, Some(0)).unwrap()).collect();
    let written: usize = rt
        .with_model(&models[0], |lm| {
            lm.cores
                .iter()
                .map(|c| {
                    c.engines.iter().map(|e| e.image.bytes.len()).sum::<usize>()
                        + c.rings.iter().map(|r| r.image.bytes.len()).sum::<usize>()
                })
                .sum()
        })
        .unwrap();
    let per_load = (held() - before) / 16;
    assert!(
        per_load <= written + written / 4 + 256 * 1024,
        "{per_load} bytes of host memory per load for {written} bytes of images and rings"
    );
    for m in &models {
        rt.unload(m).unwrap();
    }
    assert_eq!(sim.stored_pages(), 0, "no page outlives its allocation");
    let after = held();
    assert!(
        after <= before + MIB,
        "{} bytes still held after every unload",
        after.saturating_sub(before)
    );
}

/// A manifest member's parse builds nothing for what neffld does not keep:
/// a def.json whose `src_target_pairs` holds as many values as the
/// ceiling allows parses within a few MiB beyond the member itself (it was
/// held as `serde_json::Value`s, 32 bytes for each 2-byte `0,`), and one
/// value more is refused before anything is built.
#[test]
fn a_manifest_parse_builds_nothing_for_what_it_does_not_keep() {
    use neffld::manifest::{self, json::MAX_VALUES, ParseOptions};
    let _one = ONE.lock().unwrap_or_else(|p| p.into_inner());
    let mut s = Synth::static_sunda();
    let base = s.json("sg00/def.json").to_string().len();
    let opts = ParseOptions::new(Arch::Sunda, 1);
    for (n, refused) in [(MAX_VALUES as usize - 1000, false), (8 << 20, true)] {
        s.set_long_array("sg00/def.json", "src_target_pairs", "0", n);
        let neff = s.open(Producer::V2_18);
        let before = reset_peak();
        let parsed = manifest::parse(&neff, &opts);
        let peak = PEAK.load(Ordering::Relaxed) - before;
        match parsed {
            Ok(m) => {
                assert!(!refused);
                assert_eq!(m.subgraphs[0].def.src_target_pairs, n);
            }
            Err(e) => assert!(refused, "{e}"),
        }
        assert!(
            peak <= base + 4 * MIB,
            "{n} elements: peak heap {peak} beside a {} byte def.json",
            2 * n
        );
    }
}

/// How many JSON values `text` holds, counted as the parse counts them
/// (every scalar, array and object).
fn json_values(text: &str) -> u64 {
    fn count(v: &serde_json::Value) -> u64 {
        1 + match v {
            serde_json::Value::Array(a) => a.iter().map(count).sum(),
            serde_json::Value::Object(o) => o.values().map(count).sum(),
            _ => 0,
        }
    }
    count(&serde_json::from_str(text).expect("JSON"))
}

/// The free-form parts of a manifest (DMA blocks and their descriptors,
/// state-buffer carve-outs) cost what their records keep and no JSON tree
/// besides: a member at the value ceiling, made of the smallest valid
/// element of each, parses within 40 bytes a value beyond the member's own
/// bytes (the DMA records keep about 33). Held as `serde_json::Value`s
/// first, an engine json of DMA blocks peaked at 110 bytes a value.
#[test]
fn a_member_at_the_value_ceiling_costs_what_its_records_keep() {
    use neffld::manifest::{self, json::MAX_VALUES, ParseOptions};
    let _one = ONE.lock().unwrap_or_else(|p| p.into_inner());
    let desc = r#"{"from":"spill_a","from_off":0,"from_sizes":[1],"from_steps":[1],"to":"SB","to_off":0,"to_sizes":[1],"to_steps":[1]}"#;
    let block = |i: usize| {
        format!(
            r#"{{"queue":"qSPSpillReload0","id":{},"desc":[{desc}]}}"#,
            i + 2
        )
    };
    let carveout = r#"{"type":"evtaccel","offset":0,"size":64,"base_partition":0,"partitions":1}"#;
    // (member, key, element), each filling the member to just under the ceiling.
    type Element<'a> = &'a dyn Fn(usize) -> String;
    let cases: [(&str, &str, Element); 3] = [
        ("sg00/SP.json", "dma", &block),
        ("sg00/def.json", "dma", &block),
        ("sg00/def.json", "runtime_statebuffer_reservation", &|_| {
            carveout.to_string()
        }),
    ];
    let opts = ParseOptions::new(Arch::Sunda, 1);
    for (member, key, element) in cases {
        let mut s = Synth::static_sunda();
        let used = json_values(&s.json(member).to_string()) + 1;
        let n = ((MAX_VALUES - used) / json_values(&element(0))) as usize;
        s.extend_array(member, key, n, element);
        let bytes = s.members[member].len();
        let neff = s.open(Producer::V2_18);
        let before = reset_peak();
        let parsed = manifest::parse(&neff, &opts);
        let peak = PEAK.load(Ordering::Relaxed) - before;
        drop(parsed.unwrap_or_else(|e| panic!("{member} {key}: {e}")));
        eprintln!("{member} {key}: {n} elements, {bytes} bytes, peak {peak}");
        assert!(
            peak <= bytes + 40 * MAX_VALUES as usize,
            "{member} {key}: {n} elements: peak heap {peak} beside a {bytes} byte member"
        );
    }
}

/// `verify` with the manifests' report (`neffld verify --json`) parses the
/// NEFF once, for the report and the load: its peak is the load's, plus
/// the report. The report's parse ran beside the load's, so both parses'
/// records were held at once: for an engine json of 30,839 DMA blocks (a
/// quarter of the value ceiling), 1.78 times the peak of `verify` without
/// the report.
#[test]
fn verify_with_its_report_parses_once() {
    use neffld::kbin::isa::encode;
    use neffld::manifest::json::MAX_VALUES;
    use neffld::report::Examination;
    use neffld::settings::{Asked, Settings};
    let _one = ONE.lock().unwrap_or_else(|p| p.into_inner());
    let desc = r#"{"from":"spill_a","from_off":0,"from_sizes":[1],"from_steps":[1],"to":"SB","to_off":0,"to_sizes":[1],"to_steps":[1]}"#;
    let block = |i: usize| {
        format!(
            r#"{{"queue":"qSPSpillReload0","id":{},"desc":[{desc}]}}"#,
            i + 2
        )
    };
    let mut s = Synth::static_sunda();
    let used = json_values(&s.json("sg00/SP.json").to_string()) + 1;
    let n = ((MAX_VALUES - used) / json_values(&block(0)) / 4) as usize;
    s.extend_array("sg00/SP.json", "dma", n, block);
    let mut sp = s.members["sg00/SP.bin"].clone();
    for i in 0..n {
        sp.extend_from_slice(&encode::trigger("qSPSpillReload0", i as u32 + 2));
    }
    s.set("sg00/SP.bin", sp);
    let bytes = s.write(Producer::V2_18);
    let settings = Settings::resolve(&Asked::default(), |_| None).unwrap();
    let mut peaks = [0; 2];
    for (contents, peak) in [false, true].into_iter().zip(&mut peaks) {
        let before = reset_peak();
        let x = Examination::verify(&bytes, &settings, contents);
        *peak = PEAK.load(Ordering::Relaxed) - before;
        assert!(x.passed(), "{:?}", x.problem());
        assert_eq!(x.contents.is_some(), contents);
        assert_eq!(x.verdict.map(|v| v.subgraphs), Some(1));
    }
    eprintln!(
        "{n} blocks: verify peak {} alone, {} with the report",
        peaks[0], peaks[1]
    );
    assert!(
        peaks[1] <= peaks[0] + peaks[0] / 8,
        "{n} blocks: verify peaks at {} with the report, {} without",
        peaks[1],
        peaks[0]
    );
}
