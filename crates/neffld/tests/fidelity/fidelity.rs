//! One test per shared hardware capture: loading the capture's NEFF on the
//! capture's logical core must stage what the real runtime staged
//! (docs/reference/capture.md) — every memory row but Profiler Buffers and Tensors,
//! every image's size and its preamble / NEFF records / postamble split,
//! the preamble's and postamble's bytes (every image byte-identical),
//! every NEFF record kept, rewritten or deleted as the runtime did, and in
//! every record both rewrote, the same 8-byte words changed, with the same
//! bytes (device addresses included: the runtime's address form), images
//! allocated in the same engine order, and image addresses as the runtime
//! wrote them (up to the race between the two cores' pool and sp images:
//! docs/decisions.md).

use std::collections::BTreeMap;

use neffld::api::Runtime;
use neffld::capture::{self, MEMORY_ROWS};
use neffld::config::{Libnrt, RuntimeConfig, Topology};
use neffld::container::{self, OpenOptions};
use neffld::kbin::isa::{Addr8, ADDR8_STATIC_VAR, D4_DST, D4_SRC, OP_PSEUDO_DMA_DIRECT2D};
use neffld::manifest::{EngineType, ParseOptions};
use neffld::report::align::{align, Fate};
use neffld::report::compare::{load_and_compare, neff_streams, AddressMatch};
use neffld::{parse, Arch};
use neffld_testkit as testkit;

const WORD: usize = 8;
const RECORD: usize = 64;

/// Word indexes of a NEFF record that hold a device address once rewritten.
fn address_words(rec: &[u8]) -> Vec<usize> {
    if rec[0] != OP_PSEUDO_DMA_DIRECT2D {
        return Vec::new();
    }
    [D4_SRC, D4_DST]
        .into_iter()
        .filter(|&at| {
            Addr8::decode(&rec[at..at + WORD]).is_some_and(|a| a.mode == ADDR8_STATIC_VAR)
        })
        .map(|at| at / WORD)
        .collect()
}

fn changed_words(neff: &[u8], staged: &[u8]) -> Vec<usize> {
    (0..RECORD / WORD)
        .filter(|w| neff[w * WORD..][..WORD] != staged[w * WORD..][..WORD])
        .collect()
}

fn check(stem: &str) {
    let neff = testkit::fixture(&format!("{stem}.neff"));
    let cap_bytes = std::fs::read(format!("{}/{stem}.ntff", testkit::CAPTURES)).unwrap();
    let cap = capture::read(&cap_bytes).unwrap();
    let (cmp, ours) = load_and_compare(&neff, &cap).unwrap();
    let opened = container::open(&neff, &OpenOptions::default()).unwrap();
    let parsed = parse::parse(&opened, &ParseOptions::new(Arch::Cayman, 2)).unwrap();
    let streams: BTreeMap<(String, EngineType), &[u8]> = neff_streams(&opened, &parsed);

    assert_eq!(cmp.cores.len(), 2, "{stem}");
    let mut words = 0;
    let mut address_words_seen = 0;
    let mut addresses = 0;
    for core in &cmp.cores {
        let at = format!("{stem} {}", core.subgraph);
        assert_eq!(
            core.pcore_ours.map(u64::from),
            core.pcore_capture,
            "{at}: physical core"
        );
        // A: memory rows.
        assert_eq!(core.memory.len(), MEMORY_ROWS.len(), "{at}");
        for r in core.memory.iter().filter(|r| r.counted) {
            assert_eq!(r.ours, r.capture, "{at}: memory row {}", r.usage_type);
        }
        // B: image sizes and splits; C: record fates.
        for i in &core.images {
            let what = format!("{at} {:?}", i.engine);
            let (o, t) = (i.ours.as_ref().unwrap(), i.capture.as_ref().unwrap());
            assert_eq!(o.bytes, t.bytes, "{what}: image bytes");
            assert_eq!(
                (o.preamble_slots, o.main_slots, o.postamble_slots),
                (t.preamble_slots, t.main_slots, t.postamble_slots),
                "{what}: preamble / NEFF records / postamble slots"
            );
            assert_eq!(
                (o.kept, o.rewritten, o.deleted),
                (t.kept, t.rewritten, t.deleted),
                "{what}: records kept / rewritten / deleted"
            );
            assert_eq!(i.same_fate, i.records, "{what}: every record's fate");
        }
        // D (partly): images rise in the same engine order on both sides.
        let order = |side: &dyn Fn(&neffld::report::compare::ImageComparison) -> u64| {
            let mut v: Vec<_> = core.images.iter().map(|i| (side(i), i.engine)).collect();
            v.sort();
            v.into_iter().map(|(_, e)| e).collect::<Vec<_>>()
        };
        assert_eq!(
            order(&|i| i.ours.as_ref().unwrap().address),
            order(&|i| i.capture.as_ref().unwrap().address),
            "{at}: image allocation order"
        );
        // E: image addresses as the runtime writes them. The two cores'
        // pool and sp images race (docs/decisions.md): each sits either
        // where the capture has it or, swapped with the other core's image
        // of the same engine, where the capture has that one.
        for i in &core.images {
            let ours = i.ours.as_ref().unwrap().address;
            let theirs = i.capture.as_ref().unwrap().address;
            assert!(
                i.address != AddressMatch::Differs,
                "{at} {:?}: image address {ours:#x}, capture {theirs:#x}",
                i.engine
            );
            addresses += u32::from(i.address == AddressMatch::Same);
        }
        // C: the words each rewritten record changed.
        let staged = ours
            .cores
            .iter()
            .find(|c| c.subgraph == core.subgraph)
            .unwrap();
        let theirs = cap
            .subgraphs
            .iter()
            .find(|s| s.name == core.subgraph)
            .unwrap();
        for img in &staged.images {
            let stream = streams[&(core.subgraph.clone(), img.engine)];
            let cap_img = theirs.image(img.engine).unwrap();
            // B: the runtime's preamble, byte for byte (its queue settings
            // included), and so the whole image.
            let pre = img.preamble_slots as usize * RECORD;
            assert_eq!(
                img.bytes[..pre],
                cap_img.bytes[..pre],
                "{at} {:?}: preamble bytes",
                img.engine
            );
            assert_eq!(
                img.bytes[..],
                cap_img.bytes[..],
                "{at} {:?}: image bytes",
                img.engine
            );
            // B: the runtime's postamble, byte for byte (its final branch
            // included).
            let post = img.postamble_slots as usize * RECORD;
            assert_eq!(
                img.bytes[img.bytes.len() - post..],
                cap_img.bytes[cap_img.bytes.len() - post..],
                "{at} {:?}: postamble bytes",
                img.engine
            );
            let a = align(&cap_img.bytes, stream);
            for (k, (m, t)) in img.records.fates.iter().zip(&a.records.fates).enumerate() {
                let (Fate::Rewritten(x), Fate::Rewritten(y)) = (m, t) else {
                    continue;
                };
                let what = format!("{at} {:?} record {k}", img.engine);
                let rec = &stream[k * RECORD..][..RECORD];
                let mine = &img.bytes[*x as usize * RECORD..][..RECORD];
                let real = &cap_img.bytes[*y as usize * RECORD..][..RECORD];
                assert_eq!(
                    changed_words(rec, mine),
                    changed_words(rec, real),
                    "{what}: words rewritten"
                );
                let addresses = address_words(rec);
                for w in changed_words(rec, real) {
                    words += 1;
                    address_words_seen += u32::from(addresses.contains(&w));
                    // Address words too: the runtime's address form.
                    assert_eq!(
                        mine[w * WORD..][..WORD],
                        real[w * WORD..][..WORD],
                        "{what}: word {w}"
                    );
                }
            }
        }
    }
    assert!(words > 0, "{stem}: no rewritten words to compare");
    assert!(
        address_words_seen > 0,
        "{stem}: no rewritten address word to compare"
    );
    // act, dve and pe of both cores never race.
    assert!(addresses >= 6, "{stem}: {addresses} image addresses agree");

    // One accounting: the runtime's report gives the same rows and sums them.
    let rt = Runtime::new(RuntimeConfig {
        topology: Topology {
            arch: Arch::Cayman,
            ..Default::default()
        },
        libnrt: Libnrt {
            // The captures' own line (2.30.51).
            line: Some(neffld::RuntimeLine::V2_30),
            ..Default::default()
        },
        ..Default::default()
    })
    .unwrap();
    let model = rt.load(&neff, Some(2)).unwrap();
    let stats = neffld::report::MemoryStats::of_vnc(&rt, 2).unwrap();
    for (c, s) in stats.cores.iter().zip(&ours.cores) {
        assert_eq!(u64::from(c.pcore.0), u64::from(s.pcore));
        let rows: Vec<u64> = c
            .rows()
            .map(|(_, runtime, model)| runtime + model)
            .collect();
        let staged: Vec<u64> = s.memory.iter().map(|r| r.bytes).collect();
        assert_eq!(
            rows, staged,
            "{stem}: Runtime::memory_stats vs the staged view"
        );
    }
    assert_eq!(
        stats.used,
        stats.cores.iter().map(|c| c.total()).sum::<u64>()
    );
    rt.unload(&model).unwrap();
}

#[test]
fn baseline_attention() {
    check("kfusion__baseline_attention__baseline");
}

#[test]
fn baseline_bf16_s1024() {
    check("kfusion__baseline_bf16_s1024__baseline");
}

#[test]
fn baseline_bf16_s512() {
    check("kfusion__baseline_bf16_s512__baseline");
}

#[test]
fn baseline_fp32_s1024() {
    check("kfusion__baseline_fp32_s1024__baseline");
}

#[test]
fn baseline_fp32_s512() {
    check("kfusion__baseline_fp32_s512__baseline");
}

#[test]
fn fused_attention() {
    check("kfusion__fused_attention__fused");
}

#[test]
fn fused_bf16_s1024() {
    check("kfusion__fused_bf16_s1024__fused");
}

#[test]
fn fused_bf16_s512() {
    check("kfusion__fused_bf16_s512__fused");
}

#[test]
fn fused_fp32_s1024() {
    check("kfusion__fused_fp32_s1024__fused");
}

#[test]
fn fused_fp32_s512() {
    check("kfusion__fused_fp32_s512__fused");
}
