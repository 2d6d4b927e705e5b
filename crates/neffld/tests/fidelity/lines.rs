//! The runtime lines (issue 21): what runtimes 2.23, 2.25 and 2.27 do
//! around a NEFF, rule by rule, on NEFFs the project's writer builds for the
//! queue shapes each rule covers. Every expected value is computed here by
//! hand from the rules of docs/decisions.md ("Runtime lines") — the slot
//! tables, the trigger words, rule H's counts, the ring formula, the memory
//! rows — never taken from neffld's output; and the captures built at the
//! end are assembled from those rules alone, then held against a load with
//! the library's comparison.

use std::collections::BTreeMap;

use neffld::api::Runtime;
use neffld::capture::{self, Capture, CaptureUuid, Image, MemRow, Subgraph, Version};
use neffld::config::{Libnrt, Loader, RuntimeConfig, Topology};
use neffld::container::writer::Producer;
use neffld::container::{self as c, OpenOptions};
use neffld::kbin::isa::{self, encode};
use neffld::line::regs::{self, DmaWindow, Trigger, FILLER_MAGIC};
use neffld::line::RuntimeLine;
use neffld::manifest::{EngineType, ParseOptions};
use neffld::report::compare::{capture_line, load_and_compare};
use neffld::report::staged::{StagedCore, StagedImage};
use neffld::report::StagedView;
use neffld::{parse, Arch};
use neffld_testkit::{lnc_writer, npy_v1, stream, Synth};
use serde_json::{json, Value};

use EngineType::{Act, Dve, Pe, Pool, Sp};

const RECORD: usize = 64;

fn word(rec: &[u8], w: usize) -> u64 {
    u64::from_le_bytes(rec[w * 8..w * 8 + 8].try_into().unwrap())
}

fn slot(img: &StagedImage, i: u32) -> &[u8] {
    &img.bytes[i as usize * RECORD..(i as usize + 1) * RECORD]
}

/// Loads `bytes` on a fresh runtime of `arch` under `line` on logical core
/// `vnc`, and returns its staged view.
fn load(bytes: &[u8], arch: Arch, line: RuntimeLine, vnc: u32) -> Vec<StagedCore> {
    let rt = Runtime::new(RuntimeConfig {
        topology: Topology {
            arch,
            ..Default::default()
        },
        libnrt: Libnrt {
            line: Some(line),
            ..Default::default()
        },
        loader: Loader {
            check: true,
            ..Default::default()
        },
    })
    .unwrap();
    let m = rt
        .load(bytes, Some(vnc))
        .unwrap_or_else(|e| panic!("{line}: {e}"));
    let v = StagedView::of(&rt, &m).unwrap().cores;
    rt.unload(&m).unwrap();
    v
}

fn image(core: &StagedCore, e: EngineType) -> &StagedImage {
    core.image(e).unwrap()
}

fn row(core: &StagedCore, usage_type: &str) -> u64 {
    core.memory
        .iter()
        .find(|r| r.usage_type == usage_type)
        .unwrap_or_else(|| panic!("no row {usage_type}"))
        .bytes
}

fn trn1(s: &Synth) -> Vec<u8> {
    s.write(Producer::V2_18)
}

fn trn2(s: &Synth) -> Vec<u8> {
    lnc_writer(2).write(&s.member_list())
}

/// The header (bytes 1..12) of the pool IO trigger of the spec's worked
/// example: `a5 10 00 00 05 06 00 00 | 01 00 00 00`.
const EXAMPLE_HEADER: [u8; 11] = [0x10, 0, 0, 0x05, 0x06, 0, 0, 0x01, 0, 0, 0];

/// The shape of every 2.23 and 2.25 capture: one IO queue on pool (SB →
/// the output) and one on sp (the input → SB), no data queue, no act
/// tables, no weights; pool's trigger has the worked example's header.
/// Its sunda DVE tables are 25 KiB (16 + 8 + 1).
fn stream_shape() -> Synth {
    let mut s = Synth::static_sunda();
    s.edit("sg00/def.json", |d| {
        let q = d["dma_queue"].as_object_mut().unwrap();
        q.remove("qSPSpillReload0");
        q.remove("qPoolSpillReload0");
        let v = d["var"].as_object_mut().unwrap();
        for name in ["identity_1", "spill_a", "spill_b"] {
            v.remove(name);
        }
    });
    s.remove("sg00/value_sg0000_identity_1_CRSM.npy");
    for (member, queue) in [("sg00/SP.json", "qSPIO0"), ("sg00/Pool.json", "qPoolIO0")] {
        s.edit(member, |e| {
            e["dma"]
                .as_array_mut()
                .unwrap()
                .retain(|b| b["queue"] == queue);
        });
    }
    s.edit("sg00/Activation.json", |a| {
        a["activation_function_sets"] = json!([]);
    });
    let mut pool_trigger = encode::trigger("qPoolIO0", 0);
    pool_trigger[1..12].copy_from_slice(&EXAMPLE_HEADER);
    s.set(
        "sg00/Pool.bin",
        stream(&[
            encode::record(isa::OP_SET_ORDERING_MODE),
            pool_trigger,
            encode::record(isa::OP_NOP),
        ]),
    );
    s.set(
        "sg00/SP.bin",
        stream(&[
            encode::record(isa::OP_SET_ORDERING_MODE),
            encode::trigger("qSPIO0", 0),
            encode::record(isa::OP_EVENT_SEMAPHORE),
        ]),
    );
    s.set("sg00/default_control_table.bin", vec![3; 16 << 10]);
    s.set("sg00/default_datapath_table.bin", vec![4; 8 << 10]);
    s.set("sg00/default_opcode_table.bin", vec![5; 1 << 10]);
    s
}

/// [`Synth::static_sunda`] with an IO queue and a data queue on act too,
/// each with one block triggered from act's stream.
fn with_act_queues(mut s: Synth) -> Synth {
    let sems = |a: u64| json!((a..a + 16).collect::<Vec<u64>>());
    s.edit("sg00/def.json", |d| {
        d["dma_queue"]["qActIO0"] =
            json!({"num_queues":16,"owner":"act","semaphore_set":sems(72),"type":"in"});
        d["dma_queue"]["qActSpillReload0"] =
            json!({"num_queues":16,"owner":"act","semaphore_set":sems(88),"type":"data"});
    });
    s.edit("sg00/Activation.json", |a| {
        a["dma"] = json!([
            {"desc":[{"from":"a","from_dtype":"float16","from_off":0,"from_sizes":[128,128],"from_steps":[1,128],
                      "op":"copy","to":"SB","to_dtype":"float16","to_off":0,"to_sizes":[128,128],"to_steps":[1,262144]}],
             "id":0,"queue":"qActIO0","semaphore":72},
            {"desc":[{"from":"SB","from_dtype":"float16","from_off":0,"from_sizes":[4096],"from_steps":[1],
                      "op":"copy","to":"spill_a","to_dtype":"float16","to_off":0,"to_sizes":[4096],"to_steps":[1]}],
             "id":0,"queue":"qActSpillReload0","semaphore":88}
        ]);
    });
    s.set(
        "sg00/Activation.bin",
        stream(&[
            encode::record(isa::OP_SET_ORDERING_MODE),
            encode::trigger("qActSpillReload0", 0),
            encode::trigger("qActIO0", 0),
            encode::record(0x21),
        ]),
    );
    s
}

/// Replaces the one descriptor of sp's IO block with `desc`.
fn sp_io_desc(mut s: Synth, desc: Value) -> Synth {
    s.edit("sg00/SP.json", |e| {
        for b in e["dma"].as_array_mut().unwrap() {
            if b["queue"] == "qSPIO0" {
                b["desc"] = json!([desc.clone()]);
            }
        }
    });
    s
}

/// The 64-byte trigger rewrite, written out from the rule (docs/decisions.md):
/// `0xA5`, the NEFF record's bytes 1..12, the widths, the register words
/// and the counts.
fn trigger_by_hand(neff: &[u8], w: u64, q_idx: u64, data: bool, m2s: u64, s2m: u64) -> Vec<u8> {
    let mut r = vec![0u8; RECORD];
    r[0] = 0xA5;
    r[1..12].copy_from_slice(&neff[1..12]);
    let tail = w + 0x1000 * (q_idx + 1) + 0x38;
    let words: [u64; 4] = if data {
        r[12] = 4;
        [tail, 0, m2s, 0]
    } else {
        r[12] = 4;
        r[13] = 4;
        [tail + 0x2_0000, tail, s2m, m2s]
    };
    for (i, v) in words.into_iter().enumerate() {
        r[16 + 8 * i..24 + 8 * i].copy_from_slice(&v.to_le_bytes());
    }
    r
}

const TRN1_W: u64 = 0x0fff_f100_0000;
const TRN2_CORE4_W: u64 = 0x8010_0208_0000;

// ---------------------------------------------------------------- triggers

/// The worked example of docs/decisions.md: pool's IO trigger on trn1 core
/// 0 (queue 0), S2M 3 (the contiguous DRAM side), M2S 9 (128 partitions
/// over 16 rings, plus one), as the whole 64-byte record.
#[test]
fn the_worked_example_pool_io_trigger_on_trn1_core_0() {
    let example: [u64; 8] = [
        0x0000_0605_0000_10a5,
        0x0000_0404_0000_0001,
        0x0000_0fff_f102_1038,
        0x0000_0fff_f100_1038,
        3,
        9,
        0,
        0,
    ];
    let want: Vec<u8> = example.iter().flat_map(|w| w.to_le_bytes()).collect();
    assert_eq!(
        &want[..8],
        &[0xa5, 0x10, 0, 0, 0x05, 0x06, 0, 0],
        "the spec's bytes"
    );
    for line in [RuntimeLine::V2_23, RuntimeLine::V2_25, RuntimeLine::V2_30] {
        let cores = load(&trn1(&stream_shape()), Arch::Sunda, line, 0);
        let pool = image(&cores[0], Pool);
        // NEFF record 1 (after SET_ORDERING_MODE) is the trigger.
        let at = pool.preamble_slots + 1;
        assert_eq!(slot(pool, at), &want[..], "{line}");
        assert!(pool.approximate.is_empty());
    }
    // The shared rule alone, on the window of trn1 core 0.
    let mut neff = [0u8; 64];
    neff[0] = 0xC1;
    neff[1..12].copy_from_slice(&EXAMPLE_HEADER);
    let w = DmaWindow::of(
        &neffld::device::Geometry::for_arch(Arch::Sunda),
        neffld::ids::PCore(0),
    );
    let t = Trigger {
        q_idx: 0,
        data: false,
        counts: neffld::kbin::RingCounts {
            m2s: 9,
            s2m: 3,
            ruled: true,
        },
    };
    assert_eq!(&regs::trigger(&neff, &w, &t)[..], &want[..]);
}

/// q_idx: data queues first, then by owner pe, act, pool, dve, sp, then by
/// name; each trigger writes its own queue's registers, IO queues both
/// sides, data queues M2S only. Here: act data 0, pool data 1, sp data 2,
/// act IO 3, pool IO 4, sp IO 5.
#[test]
fn queues_are_numbered_data_first_then_by_owner() {
    let s = with_act_queues(Synth::static_sunda());
    let bytes = trn1(&s);
    let (_, parsed) = {
        let neff = c::open(&bytes, &OpenOptions::default()).unwrap();
        let p = parse::parse(&neff, &ParseOptions::new(Arch::Sunda, 1)).unwrap();
        (neff, p)
    };
    let q_idx: BTreeMap<&str, u32> = parsed.kbins[0]
        .dma_rings()
        .iter()
        .map(|r| (r.queue().name.as_str(), r.q_idx()))
        .collect();
    assert_eq!(
        q_idx,
        BTreeMap::from([
            ("qActSpillReload0", 0),
            ("qPoolSpillReload0", 1),
            ("qSPSpillReload0", 2),
            ("qActIO0", 3),
            ("qPoolIO0", 4),
            ("qSPIO0", 5),
        ])
    );
    let cores = load(&bytes, Arch::Sunda, RuntimeLine::V2_23, 0);
    let core = &cores[0];
    // (engine, NEFF record, queue, data, M2S, S2M), the counts by rule H:
    // - act data SB → spill_a, 1-D 4096: 1 + ceil(1/16) = 2 each side;
    // - act IO a → SB, [128,128]: contiguous DRAM 3, SB 1 + 128/16 = 9;
    // - pool data SB → spill_b, a cast fp32 → fp16 of 1-D: M2S 1 + 2·1 = 3, S2M 2;
    // - pool IO SB → out: M2S 9, S2M 3;
    // - sp data identity_1 → SB: M2S 3, S2M 9 (block 0);
    //   spill_a → SB, fp32 → fp16 1-D: M2S 3, S2M 2 (block 1);
    // - sp IO a → SB: M2S 3, S2M 9.
    let cases = [
        (Act, 1, 0, true, 2, 2),
        (Act, 2, 3, false, 3, 9),
        (Pool, 1, 1, true, 3, 2),
        (Pool, 2, 4, false, 9, 3),
        (Sp, 1, 2, true, 3, 9),
        (Sp, 2, 5, false, 3, 9),
        (Sp, 4, 2, true, 3, 2),
    ];
    let neff = parse_streams(&bytes, Arch::Sunda, 1);
    for (e, record, q, data, m2s, s2m) in cases {
        let img = image(core, e);
        let rec = &neff[&("sg00".to_string(), e)][record * RECORD..(record + 1) * RECORD];
        // No record before a trigger is deleted in these streams.
        let at = img.preamble_slots + record as u32;
        assert_eq!(
            slot(img, at),
            &trigger_by_hand(rec, TRN1_W, q, data, m2s, s2m)[..],
            "{e:?} record {record}"
        );
    }
}

fn parse_streams(bytes: &[u8], arch: Arch, lnc: u32) -> BTreeMap<(String, EngineType), Vec<u8>> {
    let neff = c::open(bytes, &OpenOptions::default()).unwrap();
    let p = parse::parse(&neff, &ParseOptions::new(arch, lnc)).unwrap();
    p.kbins
        .iter()
        .flat_map(|k| {
            k.engines()
                .iter()
                .map(|e| {
                    (
                        (k.name().to_string(), e.ty()),
                        e.stream(neff.archive()).to_vec(),
                    )
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The per-ring counts of sp's IO block (its first NEFF trigger, record 2
/// of SP.bin) with `desc` as its descriptor, in `s` (M2S, S2M, ruled).
fn sp_io_counts(s: Synth, desc: Value) -> (u64, u64, bool) {
    let bytes = trn1(&sp_io_desc(s, desc));
    let cores = load(&bytes, Arch::Sunda, RuntimeLine::V2_23, 0);
    let sp = image(&cores[0], Sp);
    let rec = slot(sp, sp.preamble_slots + 2);
    assert_eq!(rec[0], 0xA5);
    // An IO queue: S2M in word 4, M2S in word 5.
    (word(rec, 5), word(rec, 4), sp.approximate.is_empty())
}

/// Rule H on a cast (int8 → fp16, 128 × 128): the M2S side counts twice,
/// 1 + 2 · 128/16 = 17; the SB side 1 + 128/16 = 9.
#[test]
fn rule_h_counts_a_cast_twice_on_m2s() {
    let cast = json!({"from":"a","from_dtype":"int8","from_off":0,"from_sizes":[128,128],"from_steps":[1,128],
        "op":"cast","to":"SB","to_dtype":"float16","to_off":0,"to_sizes":[256,128],"to_steps":[1,262144]});
    assert_eq!(sp_io_counts(Synth::static_sunda(), cast), (17, 9, true));
}

/// Rule H on a 3-D block (2, 128, 128) with steps (1, 2, 256): one
/// descriptor per inner run, no merging, 1 + 128 · 128 / 16 = 1025 per
/// side.
#[test]
fn rule_h_counts_every_inner_run_of_a_3d_block() {
    let mut s = Synth::static_sunda();
    s.edit("sg00/def.json", |d| {
        d["var"]["identity_1"]["size"] = json!(32768);
    });
    s.set(
        "sg00/value_sg0000_identity_1_CRSM.npy",
        npy_v1("<f2", &[128, 128, 1, 1], &vec![0u8; 32768]),
    );
    let desc = json!({"from":"identity_1","from_dtype":"float16","from_off":0,"from_sizes":[2,128,128],
        "from_steps":[1,2,256],"op":"copy","to":"SB","to_dtype":"float16","to_off":0,
        "to_sizes":[2,128,128],"to_steps":[1,262144,2]});
    assert_eq!(sp_io_counts(s, desc), (1025, 1025, true));
}

/// A transpose has no rule: the trigger is still rewritten, with the rule
/// applied anyway (the contiguous DRAM side 3; the SB side 1 + 512/16 =
/// 33), and the image says its record is approximate.
#[test]
fn a_transpose_keeps_the_best_founded_counts_and_is_marked() {
    let t = json!({"from":"a","from_dtype":"float16","from_off":0,"from_sizes":[256,4],"from_steps":[1,256],
        "op":"copy","transpose_op":"DmaTranspose","transpose_shape":[1,1,128,128],
        "to":"SB","to_dtype":"float16","to_off":0,"to_sizes":[2,128,4],"to_steps":[1,262144,2]});
    assert_eq!(sp_io_counts(Synth::static_sunda(), t), (3, 33, false));
}

// -------------------------------------------------- preambles, postambles

/// Slots per engine, pe act pool dve sp: (preamble, postamble), by the
/// tables of docs/decisions.md.
fn slots(core: &StagedCore) -> Vec<(u32, u32)> {
    [Pe, Act, Pool, Dve, Sp]
        .iter()
        .map(|&e| {
            let i = image(core, e);
            (i.preamble_slots, i.postamble_slots)
        })
        .collect()
}

/// 2.23: pe 27 / 61, act 14 / 61, pool 14 + 13·IO (+14·D) / 67 + IO
/// (+2·D), dve 14 / 61, sp 12 + 13·IO (+14·D) / 57 + IO (+2·D).
#[test]
fn slot_counts_of_2_23() {
    let stream = load(&trn1(&stream_shape()), Arch::Sunda, RuntimeLine::V2_23, 0);
    assert_eq!(
        slots(&stream[0]),
        [
            (27, 61),
            (14, 61),
            (14 + 13, 67 + 1),
            (14, 61),
            (12 + 13, 57 + 1)
        ]
    );
    let full = load(
        &trn1(&Synth::static_sunda()),
        Arch::Sunda,
        RuntimeLine::V2_23,
        0,
    );
    assert_eq!(
        slots(&full[0]),
        [
            (27, 61),
            (14, 61),
            (14 + 13 + 14, 67 + 1 + 2),
            (14, 61),
            (12 + 13 + 14, 57 + 1 + 2)
        ]
    );
}

/// 2.25 (the captured shape: one IO queue on pool and sp, DVE tables, no
/// act tables): pe 50, act 43, pool 59, dve 49, sp 49; postambles as 2.23.
#[test]
fn slot_counts_of_2_25_on_its_captured_shape() {
    let cores = load(&trn1(&stream_shape()), Arch::Sunda, RuntimeLine::V2_25, 0);
    assert_eq!(
        slots(&cores[0]),
        [(50, 61), (43, 61), (59, 68), (49, 61), (49, 58)]
    );
}

/// 2.27, both cores alike: pe 62 / 11, act 53 + 6·T + 13·IO + 14·D / 11 +
/// IO + 2·D, pool 56 + 13·IO + 14·D / 11 + IO + 2·D, dve 54 + 5 / 11, sp
/// 45 + 13·IO + 14·D / 9 + IO + 2·D. sg00 has act tables and an IO and a
/// data queue on act, pool and sp; sg01 none.
#[test]
fn slot_counts_of_2_27() {
    let s = with_act_queues(Synth::static_cayman());
    let cores = load(&trn2(&s), Arch::Cayman, RuntimeLine::V2_27, 2);
    assert_eq!((cores[0].pcore, cores[1].pcore), (4, 5));
    let q = 13 + 14;
    assert_eq!(
        slots(&cores[0]),
        [
            (62, 11),
            (53 + 6 + q, 11 + 1 + 2),
            (56 + q, 11 + 1 + 2),
            (59, 11),
            (45 + q, 9 + 1 + 2)
        ]
    );
    assert_eq!(
        slots(&cores[1]),
        [(62, 11), (53, 11), (56, 11), (59, 11), (45, 9)]
    );
}

/// The final branch of 2.23 and 2.27: bytes 48..52 of the last slot hold
/// `(preamble − K − last slot) · 64`; K is pe 23, act 10, pool 10, dve 10,
/// sp 9 on 2.23 and pe 40, act 30, pool 31, dve 30, sp 26 on 2.27. 2.25's
/// K is unknown: its last slot is filler.
#[test]
fn the_final_branch_returns_to_preamble_minus_k() {
    let branch = |img: &StagedImage| {
        let last = img.bytes.len() / RECORD - 1;
        let r = &img.bytes[last * RECORD..];
        assert_eq!(r[0], 0xA9);
        (
            i32::from_le_bytes(r[48..52].try_into().unwrap()),
            last as i32,
        )
    };
    let trn1_cores = load(
        &trn1(&Synth::static_sunda()),
        Arch::Sunda,
        RuntimeLine::V2_23,
        0,
    );
    for (e, k) in [(Pe, 23), (Act, 10), (Pool, 10), (Dve, 10), (Sp, 9)] {
        let img = image(&trn1_cores[0], e);
        let (offset, last) = branch(img);
        assert_eq!(
            offset,
            (img.preamble_slots as i32 - k - last) * 64,
            "2.23 {e:?}"
        );
    }
    let trn2_cores = load(
        &trn2(&Synth::static_cayman()),
        Arch::Cayman,
        RuntimeLine::V2_27,
        2,
    );
    for core in &trn2_cores {
        for (e, k) in [(Pe, 40), (Act, 30), (Pool, 31), (Dve, 30), (Sp, 26)] {
            let img = image(core, e);
            let (offset, last) = branch(img);
            assert_eq!(
                offset,
                (img.preamble_slots as i32 - k - last) * 64,
                "2.27 {e:?}"
            );
        }
    }
    let v225 = load(&trn1(&stream_shape()), Arch::Sunda, RuntimeLine::V2_25, 0);
    let pe = image(&v225[0], Pe);
    assert!(regs::is_filler(&pe.bytes[pe.bytes.len() - RECORD..]));
}

/// The generated slots of a queue: its preamble block (the reset of its
/// registers, 12 ring writes, and for a data queue the S2M post of Σ S2M
/// over its blocks) in q_idx order, and in the postamble its reset (and
/// the re-post) just before the last two slots. 2.23 puts the blocks
/// first; 2.27 after two head slots. The reset writes 0x100 to S2M +0x64
/// and M2S +0xb0 of the queue's block.
#[test]
fn queue_blocks_and_resets_are_generated_from_the_neff() {
    let reset = |w: u64, q: u64| {
        (
            w + 0x2_0000 + 0x1000 * (q + 1) + 0x64,
            w + 0x1000 * (q + 1) + 0xb0,
        )
    };
    let post = |w: u64, q: u64| w + 0x2_0000 + 0x1000 * (q + 1) + 0x38;
    // 2.23, pool: qPoolSpillReload0 (q 0, data: S2M 2 in its one block),
    // then qPoolIO0 (q 2).
    let cores = load(
        &trn1(&Synth::static_sunda()),
        Arch::Sunda,
        RuntimeLine::V2_23,
        0,
    );
    let pool = image(&cores[0], Pool);
    let s0 = slot(pool, 0);
    assert_eq!(s0[0], 0xA5);
    assert_eq!((word(s0, 2), word(s0, 3), word(s0, 4), word(s0, 5)), {
        let (a, b) = reset(TRN1_W, 0);
        (a, b, 0x100, 0x100)
    });
    for g in 1..13 {
        assert_eq!(slot(pool, g)[0], 0xAB, "ring write {g}");
    }
    let p = slot(pool, 13);
    assert_eq!((p[0], word(p, 2), word(p, 4)), (0xA5, post(TRN1_W, 0), 2));
    assert_eq!(
        word(slot(pool, 14), 2),
        reset(TRN1_W, 2).0,
        "the IO queue's block"
    );
    // Postamble: ... data reset, re-post, IO reset, a6, branch.
    let n = pool.bytes.len() as u32 / 64;
    assert_eq!(word(slot(pool, n - 5), 2), reset(TRN1_W, 0).0);
    assert_eq!(
        (word(slot(pool, n - 4), 2), word(slot(pool, n - 4), 4)),
        (post(TRN1_W, 0), 2)
    );
    assert_eq!(word(slot(pool, n - 3), 2), reset(TRN1_W, 2).0);
    // sp's data queue qSPSpillReload0 (q 1): blocks of S2M 9 and 2 → 11.
    let sp = image(&cores[0], Sp);
    assert_eq!(word(slot(sp, 13), 4), 9 + 2);
    // 2.27, trn2 core 4: the same after the head, in core 4's window.
    let cores = load(
        &trn2(&Synth::static_cayman()),
        Arch::Cayman,
        RuntimeLine::V2_27,
        2,
    );
    let pool = image(&cores[0], Pool);
    assert!(regs::is_filler(slot(pool, 0)) && regs::is_filler(slot(pool, 1)));
    assert_eq!(word(slot(pool, 2), 2), reset(TRN2_CORE4_W, 0).0);
    // The ring-size writes of group g sit at G_g = 0x801002000000 + g · 0x400000.
    let size = slot(pool, 2 + 3);
    assert_eq!(word(size, 2), 0x8010_0200_0000 + 0x1000 + 0x30);
    assert_eq!(word(size, 3), 0x0004_0000_0000_8000);
    assert_eq!(word(size, 4), 0x00ff_fff0_00ff_fff0);
    assert_eq!(word(slot(pool, 2 + 4), 2), 0x8010_0240_0000 + 0x1000 + 0x28);
    // act (act tables): its table block after the head: reset of queue 14,
    // ring writes on DMA engine 9, the kick 5.
    let act = image(&cores[0], Act);
    assert_eq!(word(slot(act, 2), 2), reset(TRN2_CORE4_W, 14).0);
    let kick = slot(act, 6);
    let engine9 = 0x8010_0200_0000 + 9 * 0x10_0000;
    assert_eq!(
        (word(kick, 2), word(kick, 3), word(kick, 4), word(kick, 5)),
        (engine9 + 0x2_0000 + 0xf038, engine9 + 0xf038, 5, 5)
    );
    let dve = image(&cores[0], Dve);
    assert_eq!(word(slot(dve, 6), 4), 6, "the DVE table kick");
}

/// What is not known is filler, reported slot for slot: every slot the
/// image lists as filler carries the marker, no other slot does, and the
/// runtime slots that are not filler are exactly the generated ones: 13 or
/// 14 per queue block, 5 per table block, 1 or 2 per queue's resets, the
/// final branch where K is known. On 2.30 nothing is filler.
#[test]
fn unknown_runtime_slots_are_filler_and_reported() {
    // Generated slots per engine (pe, act, pool, dve, sp). static_sunda:
    // pool and sp own a data queue (14 + 2) and an IO queue (13 + 1).
    let queues = 14 + 2 + 13 + 1;
    type Case = (Vec<u8>, Arch, RuntimeLine, u32, Vec<[u32; 5]>);
    let cases: [Case; 4] = [
        // 2.23: no table blocks, a branch everywhere.
        (
            trn1(&Synth::static_sunda()),
            Arch::Sunda,
            RuntimeLine::V2_23,
            0,
            vec![[1, 1, queues + 1, 1, queues + 1]],
        ),
        // 2.25 on its shape: pool's and sp's IO block and reset, dve's
        // table block; no branch.
        (
            trn1(&stream_shape()),
            Arch::Sunda,
            RuntimeLine::V2_25,
            0,
            vec![[0, 0, 13 + 1, 5, 13 + 1]],
        ),
        // 2.27: sg00 with act tables (act's table block), dve's table
        // block on both cores, a branch everywhere.
        (
            trn2(&Synth::static_cayman()),
            Arch::Cayman,
            RuntimeLine::V2_27,
            2,
            vec![[1, 6, queues + 1, 6, queues + 1], [1, 1, 1, 6, 1]],
        ),
        (
            trn2(&Synth::static_cayman()),
            Arch::Cayman,
            RuntimeLine::V2_30,
            2,
            Vec::new(),
        ),
    ];
    for (bytes, arch, line, vnc, generated) in cases {
        for (k, core) in load(&bytes, arch, line, vnc).iter().enumerate() {
            for (e, img) in [Pe, Act, Pool, Dve, Sp]
                .into_iter()
                .map(|e| (e, image(core, e)))
            {
                let listed: Vec<u32> = img.filler.iter().flat_map(|r| r.clone()).collect();
                let marked: Vec<u32> = (0..img.bytes.len() as u32 / 64)
                    .filter(|&s| slot(img, s).starts_with(&FILLER_MAGIC))
                    .collect();
                assert_eq!(listed, marked, "{line} {e:?}");
                let runtime = img.preamble_slots + img.postamble_slots;
                let known = generated.get(k).map_or(runtime, |g| g[e.index()]);
                assert_eq!(listed.len() as u32, runtime - known, "{line} {e:?}");
                assert_eq!(img.exact(), listed.is_empty());
            }
        }
    }
}

// ------------------------------------------------------------ memory rows

/// The ring formula: `16 rings · 16 B · (cap(ΣM2S) + cap(ΣS2M))`, cap(n) =
/// 64 below 32.
const SMALL_RING: u64 = 16 * 16 * (64 + 64);

/// 2.27 (static_cayman on cores 4 and 5): instruction rows image + 1600 /
/// 1216 / 1408 / 1216 / 1152; Generic 38,912; Ucode lib 1,703,936; GpSimd
/// STDIO 1,088; DMA Rings Runtime 30,720 + 2,048 · T; IO and Spill the ring
/// formula over the IO and the data queues; Scalar Table 83,968 · T;
/// Weights Σ file vars; Shared Scratchpad 512 MiB with a virtual var.
#[test]
fn memory_rows_of_2_27() {
    let cores = load(
        &trn2(&Synth::static_cayman()),
        Arch::Cayman,
        RuntimeLine::V2_27,
        2,
    );
    for core in &cores {
        let first = core.subgraph == "sg00";
        for (e, usage, fixed) in [
            (Pe, "Tensor Instructions", 1600),
            (Act, "Scalar Instructions", 1216),
            (Pool, "GpSimd Instructions", 1408),
            (Dve, "Vector Instructions", 1216),
            (Sp, "Sync Instructions", 1152),
        ] {
            assert_eq!(row(core, usage), image(core, e).bytes.len() as u64 + fixed);
        }
        assert_eq!(row(core, "Generic"), 38_912);
        assert_eq!(row(core, "Ucode lib"), 1_703_936);
        assert_eq!(row(core, "GpSimd STDIO"), 1_088);
        let t = u64::from(first);
        assert_eq!(row(core, "DMA Rings Runtime"), 30_720 + 2_048 * t);
        assert_eq!(row(core, "Scalar Table"), 83_968 * t);
        // Two IO queues and two data queues of small blocks on sg00.
        assert_eq!(row(core, "DMA Rings IO"), 2 * SMALL_RING * t);
        assert_eq!(row(core, "DMA Rings Spill"), 2 * SMALL_RING * t);
        assert_eq!(row(core, "Weights"), 16_384 * t);
        assert_eq!(row(core, "Shared Scratchpad"), 536_870_912 * t);
        for zero in [
            "IO",
            "DRAM Spill",
            "Collectives",
            "Scratchpad",
            "XT CC (unused)",
        ] {
            assert_eq!(row(core, zero), 0, "{zero}");
        }
        assert_eq!(core.memory.len(), 22);
    }
}

/// 2.23 (the captured shape on trn1 core 0): 19 rows, the instruction rows
/// the images alone, Generic 0, one DMA Rings row of Σ ring formula over
/// all queues (65,536), Ucode lib 100,669,644, GpSimd STDIO 1,088.
#[test]
fn memory_rows_of_2_23() {
    let cores = load(&trn1(&stream_shape()), Arch::Sunda, RuntimeLine::V2_23, 0);
    let core = &cores[0];
    assert_eq!(core.memory.len(), 19);
    assert_eq!(core.memory[18].name, "dma rings");
    for (e, usage) in [
        (Pe, "Tensor Instructions"),
        (Act, "Scalar Instructions"),
        (Pool, "GpSimd Instructions"),
        (Dve, "Vector Instructions"),
        (Sp, "Sync Instructions"),
    ] {
        assert_eq!(row(core, usage), image(core, e).bytes.len() as u64);
    }
    assert_eq!(row(core, "DMA Rings"), 2 * SMALL_RING);
    assert_eq!(row(core, "Generic"), 0);
    assert_eq!(row(core, "Ucode lib"), 100_669_644);
    assert_eq!(row(core, "GpSimd STDIO"), 1_088);
    for zero in ["Weights", "Scalar Table", "Shared Scratchpad", "IO"] {
        assert_eq!(row(core, zero), 0, "{zero}");
    }
}

/// 2.25 on its captured shape: instruction rows image + 1408 / 1024 / 1088
/// / 1024 / 960; DMA Rings Runtime 34,816; IO half the ring formula
/// (32,768 for the two queues); Generic the DVE tables (25 KiB here).
#[test]
fn memory_rows_of_2_25() {
    let cores = load(&trn1(&stream_shape()), Arch::Sunda, RuntimeLine::V2_25, 0);
    let core = &cores[0];
    for (e, usage, fixed) in [
        (Pe, "Tensor Instructions", 1408),
        (Act, "Scalar Instructions", 1024),
        (Pool, "GpSimd Instructions", 1088),
        (Dve, "Vector Instructions", 1024),
        (Sp, "Sync Instructions", 960),
    ] {
        assert_eq!(row(core, usage), image(core, e).bytes.len() as u64 + fixed);
    }
    assert_eq!(row(core, "DMA Rings Runtime"), 34_816);
    assert_eq!(row(core, "DMA Rings IO"), SMALL_RING);
    assert_eq!(row(core, "Generic"), 25_600);
}

// -------------------------------------------------------------- addresses

/// trn1 2.23: images at `0x1048000 + 0x8000 · rank`, rank act 0, dve 1,
/// pe 2, pool 3, sp 4, plain (untagged) addresses; 2.25: the same spacing
/// from `0x3c0058000`. trn2 2.27: 32 KiB aligned, tagged, act < dve < pe <
/// pool < sp within a core, the second core's act lowest.
#[test]
fn image_addresses_follow_the_lines_rules() {
    let rank = [(Act, 0), (Dve, 1), (Pe, 2), (Pool, 3), (Sp, 4)];
    for (line, base) in [
        (RuntimeLine::V2_23, 0x104_8000),
        (RuntimeLine::V2_25, 0x3_c005_8000),
    ] {
        let cores = load(&trn1(&stream_shape()), Arch::Sunda, line, 0);
        for (e, r) in rank {
            assert_eq!(
                image(&cores[0], e).address,
                base + 0x8000 * r,
                "{line} {e:?}"
            );
        }
    }
    let cores = load(
        &trn2(&Synth::static_cayman()),
        Arch::Cayman,
        RuntimeLine::V2_27,
        2,
    );
    let mut lowest = (u64::MAX, String::new(), Pe);
    for core in &cores {
        let addrs: Vec<u64> = rank.iter().map(|&(e, _)| image(core, e).address).collect();
        assert!(addrs.windows(2).all(|w| w[0] < w[1]), "{addrs:x?}");
        for (&a, &(e, _)) in addrs.iter().zip(&rank) {
            assert_eq!(a % 0x8000, 0);
            assert_eq!(a >> 47, 1, "tagged");
            if a < lowest.0 {
                lowest = (a, core.subgraph.clone(), e);
            }
        }
    }
    assert_eq!((lowest.1.as_str(), lowest.2), ("sg01", Act));
}

/// Every real fixture and every synthetic NEFF loads under every line with
/// the staged-model check on, each image exactly its line's preamble, the
/// NEFF's records and its postamble long.
#[test]
fn every_neff_loads_under_every_line() {
    let mut neffs: Vec<(String, Vec<u8>, Arch)> = neffld_testkit::real_fixtures()
        .into_iter()
        .map(|(name, bytes)| {
            let arch = c::open(&bytes, &OpenOptions::default())
                .ok()
                .as_ref()
                .and_then(parse::declared_arch)
                .unwrap_or(Arch::Cayman);
            (name, bytes, arch)
        })
        .collect();
    neffs.push((
        "static_sunda".into(),
        trn1(&Synth::static_sunda()),
        Arch::Sunda,
    ));
    neffs.push((
        "static_cayman".into(),
        trn2(&Synth::static_cayman()),
        Arch::Cayman,
    ));
    neffs.push((
        "dynamic_cayman".into(),
        trn2(&Synth::dynamic_cayman()),
        Arch::Cayman,
    ));
    for (name, bytes, arch) in &neffs {
        for line in RuntimeLine::ALL {
            for core in load(bytes, *arch, line, 0) {
                for img in &core.images {
                    let slots = img.preamble_slots + img.main_slots + img.postamble_slots;
                    assert_eq!(slots as usize * 64, img.bytes.len(), "{name} {line}");
                }
            }
        }
    }
}

// ------------------------------------------------------ captures by hand

/// What a capture of `line` holds for one engine image, by the rules: a
/// preamble of `pre` slots (zeros: its bytes are not compared), the NEFF's
/// records with `0xCC` labels and EXIT deleted and each trigger rewritten
/// by [`trigger_by_hand`], a postamble of `post` slots.
fn image_by_hand(
    stream: &[u8],
    pre: u32,
    post: u32,
    trigger: &dyn Fn(&[u8]) -> Vec<u8>,
) -> Vec<u8> {
    let mut out = vec![0u8; pre as usize * RECORD];
    for rec in stream.chunks_exact(RECORD) {
        match rec[0] {
            isa::OP_PSEUDO_BRANCH_LABEL => {}
            isa::OP_PSEUDO_DMATRIGGER => out.extend(trigger(rec)),
            _ => out.extend_from_slice(rec),
        }
    }
    out.extend(std::iter::repeat_n(0u8, post as usize * RECORD));
    out
}

fn mem(rows: &[(&str, u64)]) -> Vec<MemRow> {
    rows.iter()
        .map(|&(name, bytes)| MemRow {
            id: None,
            name: name.to_string(),
            bytes,
        })
        .collect()
}

fn capture_of(
    arch_code: u64,
    runtime: (u64, u64, u64),
    subgraphs: Vec<Subgraph<'static>>,
) -> Capture<'static> {
    Capture {
        version: 6,
        neff_name: "model.neff".into(),
        uuid: CaptureUuid::Prefix(Vec::new()),
        arch_code,
        runtime: Some(Version {
            major: runtime.0,
            minor: runtime.1,
            patch: runtime.2,
            git_hash: None,
        }),
        driver: None,
        collectives: None,
        instance_type: None,
        instance_id: None,
        capture_time: None,
        subgraphs,
    }
}

/// The captured trn1 shape (one IO queue on pool, queue 0, and one on sp,
/// queue 1) on core 0, as runtime `2.minor` stages it by the rules: per
/// engine in rank order (act, dve, pe, pool, sp) its preamble and
/// postamble slots and the fixed block beside it, the images `0x8000`
/// apart from `base`, and the line's other memory rows.
fn trn1_capture(
    neff: &[u8],
    minor: u64,
    slots: [(EngineType, u32, u32, u64); 5],
    base: u64,
    rows: &[(&'static str, u64)],
) -> Capture<'static> {
    let streams = parse_streams(neff, Arch::Sunda, 1);
    // qPoolIO0 moves SB → out (M2S 9, S2M 3), qSPIO0 a → SB (3, 9).
    let trig = |rec: &[u8]| match isa::trigger(rec).unwrap().queue.as_str() {
        "qPoolIO0" => trigger_by_hand(rec, TRN1_W, 0, false, 9, 3),
        _ => trigger_by_hand(rec, TRN1_W, 1, false, 3, 9),
    };
    let mut memory = rows.to_vec();
    let mut images = Vec::new();
    for (rank, (e, pre, post, fixed)) in slots.into_iter().enumerate() {
        let bytes = image_by_hand(&streams[&("sg00".into(), e)], pre, post, &trig);
        memory.push((e.key(), bytes.len() as u64 + fixed));
        images.push(Image {
            engine: e,
            address: base + 0x8000 * rank as u64,
            bytes: bytes.into(),
        });
    }
    for zero in [
        "io",
        "spill",
        "weight",
        "act table",
        "shared scratchpad",
        "collectives",
        "scratchpad",
        "xt cc",
    ] {
        memory.push((zero, 0));
    }
    capture_of(
        1,
        (2, minor, 0),
        vec![Subgraph {
            name: "sg00".into(),
            device: 0,
            pcore: 0,
            images,
            memory: mem(&memory),
            duration_ps: None,
        }],
    )
}

/// The captured 2.23 shape as the 2.23 rules stage it: the images alone in
/// the instruction rows, Generic 0, one DMA Rings row, images at
/// `0x1048000 + 0x8000 · rank`.
fn capture_2_23(neff: &[u8]) -> Capture<'static> {
    trn1_capture(
        neff,
        23,
        [
            (Act, 14, 61, 0),
            (Dve, 14, 61, 0),
            (Pe, 27, 61, 0),
            (Pool, 27, 68, 0),
            (Sp, 25, 58, 0),
        ],
        0x104_8000,
        &[
            ("generic", 0),
            ("ucode", 100_669_644),
            ("pool stdio", 1_088),
            ("dma rings", 2 * SMALL_RING),
        ],
    )
}

/// The captured 2.25 shape, as the 2.25 observations say: the captured
/// slot counts and instruction blocks, its ring rows, Generic 25,600,
/// images at `0x3c0058000 + 0x8000 · rank`.
fn capture_2_25(neff: &[u8]) -> Capture<'static> {
    trn1_capture(
        neff,
        25,
        [
            (Act, 43, 61, 1024),
            (Dve, 49, 61, 1024),
            (Pe, 50, 61, 1408),
            (Pool, 59, 68, 1088),
            (Sp, 49, 58, 960),
        ],
        0x3_c005_8000,
        &[
            ("generic", 25_600),
            ("ucode", 100_669_644),
            ("pool stdio", 1_088),
            ("dma rings runtime", 34_816),
            ("dma rings spill", 0),
            ("dma rings io", SMALL_RING),
            ("dma rings collectives", 0),
        ],
    )
}

/// static_cayman on cores 4 and 5 as the 2.27 rules stage it (addresses
/// have no rule there: the capture gives none).
fn capture_2_27(neff: &[u8]) -> Capture<'static> {
    let streams = parse_streams(neff, Arch::Cayman, 2);
    // Queues: qPoolSpillReload0 0, qSPSpillReload0 1, qPoolIO0 2, qSPIO0 3.
    let trig = |rec: &[u8]| {
        let t = isa::trigger(rec).unwrap();
        match (t.queue.as_str(), t.block_id) {
            ("qPoolSpillReload0", _) => trigger_by_hand(rec, TRN2_CORE4_W, 0, true, 3, 2),
            ("qSPSpillReload0", 0) => trigger_by_hand(rec, TRN2_CORE4_W, 1, true, 3, 9),
            ("qSPSpillReload0", _) => trigger_by_hand(rec, TRN2_CORE4_W, 1, true, 3, 2),
            ("qPoolIO0", _) => trigger_by_hand(rec, TRN2_CORE4_W, 2, false, 9, 3),
            _ => trigger_by_hand(rec, TRN2_CORE4_W, 3, false, 3, 9),
        }
    };
    let subgraph = |sg: &str, pcore: u64, active: bool| {
        let q = if active { 13 + 14 } else { 0 };
        let post = if active { 1 + 2 } else { 0 };
        let t = u64::from(active);
        let slots = [
            (Pe, 62, 11, 1600),
            (Act, 53 + 6 * t as u32, 11, 1216),
            (Pool, 56 + q, 11 + post, 1408),
            (Dve, 59, 11, 1216),
            (Sp, 45 + q, 9 + post, 1152),
        ];
        let mut rows = vec![("generic", 38_912)];
        let mut images = Vec::new();
        for (e, pre, post, fixed) in slots {
            let bytes = image_by_hand(&streams[&(sg.to_string(), e)], pre, post, &trig);
            rows.push((e.key(), bytes.len() as u64 + fixed));
            images.push(Image {
                engine: e,
                address: 0,
                bytes: bytes.into(),
            });
        }
        rows.extend([
            ("io", 0),
            ("spill", 0),
            ("weight", 16_384 * t),
            ("act table", 83_968 * t),
            ("shared scratchpad", 536_870_912 * t),
            ("ucode", 1_703_936),
            ("pool stdio", 1_088),
            ("collectives", 0),
            ("scratchpad", 0),
            ("xt cc", 0),
            ("dma rings runtime", 30_720 + 2_048 * t),
            ("dma rings spill", 2 * SMALL_RING * t),
            ("dma rings io", 2 * SMALL_RING * t),
            ("dma rings collectives", 0),
        ]);
        Subgraph {
            name: sg.to_string(),
            device: 0,
            pcore,
            images,
            memory: mem(&rows),
            duration_ps: None,
        }
    };
    capture_of(
        2,
        (2, 27, 23),
        vec![subgraph("sg00", 4, true), subgraph("sg01", 5, false)],
    )
}

/// Where the files of the captures built here go, for `neffld compare`
/// (`NEFFLD_LINE_CAPTURES=DIR`; nothing is written without it).
fn write_out(name: &str, neff: &[u8], cap: &Capture<'_>) {
    let Ok(dir) = std::env::var("NEFFLD_LINE_CAPTURES") else {
        return;
    };
    let dir = std::path::Path::new(&dir);
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(format!("{name}.neff")), neff).unwrap();
    std::fs::write(
        dir.join(format!("{name}.ntff")),
        capture::writer::write(cap).unwrap(),
    )
    .unwrap();
}

/// `s` with every trigger carrying the worked example's instruction header,
/// as real triggers carry one: a capture's records are placed by matching
/// them against the NEFF ([`neffld::report::align::align`]), which
/// tells a rewritten last record from a deleted one by the bytes they
/// share.
fn with_trigger_headers(mut s: Synth) -> Synth {
    let streams = ["PE.bin", "Activation.bin", "Pool.bin", "DVE.bin", "SP.bin"];
    let names: Vec<String> = s
        .members
        .keys()
        .filter(|k| streams.iter().any(|b| k.ends_with(&format!("/{b}"))))
        .cloned()
        .collect();
    for name in names {
        let mut bytes = s.members[&name].clone();
        for rec in bytes.chunks_exact_mut(RECORD) {
            if rec[0] == isa::OP_PSEUDO_DMATRIGGER {
                rec[1..12].copy_from_slice(&EXAMPLE_HEADER);
            }
        }
        s.set(&name, bytes);
    }
    s
}

/// Each line's rules, assembled into a capture by hand, against a load of
/// the same NEFF under the line the capture names: every record's fate and
/// rewritten word, every image size, every counted memory row, and on the
/// trn1 lines every image address agree.
#[test]
fn loads_agree_with_captures_built_from_the_rules() {
    let stream = trn1(&stream_shape());
    let cayman = trn2(&with_trigger_headers(Synth::static_cayman()));
    for (name, neff, cap, addresses) in [
        ("stream_2.23", &stream, capture_2_23(&stream), true),
        ("stream_2.25", &stream, capture_2_25(&stream), true),
        ("static_2.27", &cayman, capture_2_27(&cayman), false),
    ] {
        write_out(name, neff, &cap);
        let (cmp, _) = load_and_compare(neff, &cap).unwrap();
        assert_eq!(cmp.line, capture_line(&cap), "{name}");
        let t = cmp.tally();
        assert!(t.images >= 5, "{name}");
        assert_eq!(t.records_equal, t.images, "{name}: records {cmp:#?}");
        assert_eq!(t.sizes_equal, t.images, "{name}: sizes");
        assert_eq!(t.rows_equal, t.rows, "{name}: memory rows {cmp:#?}");
        if addresses {
            assert_eq!(t.addresses_equal, t.images, "{name}: addresses");
        }
    }
}

/// `compare` takes the line from the capture's runtime version (field 8):
/// a known version gives its line, neffld's own version the default.
#[test]
fn the_capture_names_the_line() {
    let mut c = capture_of(2, (2, 27, 23), Vec::new());
    assert_eq!(capture_line(&c), RuntimeLine::V2_27);
    c.runtime.as_mut().unwrap().minor = 30;
    assert_eq!(capture_line(&c), RuntimeLine::V2_30);
    c.runtime = Some(Version {
        major: 0,
        minor: 1,
        patch: 0,
        git_hash: None,
    });
    assert_eq!(capture_line(&c), RuntimeLine::NEWEST);
    c.runtime = None;
    assert_eq!(capture_line(&c), RuntimeLine::NEWEST);
    c.runtime.replace(Version {
        major: 2,
        minor: 34,
        patch: 10,
        git_hash: None,
    });
    assert_eq!(capture_line(&c), RuntimeLine::V2_34);
}

proptest::proptest! {
    /// The one new parser: any text parses to a line or is refused naming
    /// itself, never a panic; every version of a known line names it.
    #[test]
    fn runtime_line_parsing_is_total(s in "\\PC{0,24}", line in 0usize..RuntimeLine::ALL.len(), patch in 0u64..100_000) {
        match s.parse::<RuntimeLine>() {
            Ok(l) => proptest::prop_assert!(s.trim().starts_with(&l.to_string())),
            Err(e) => {
                let named = format!("'{}'", s);
                proptest::prop_assert!(e.contains(&named), "{}", e)
            }
        }
        let l = RuntimeLine::ALL[line];
        proptest::prop_assert_eq!(format!("{l}.{patch}").parse::<RuntimeLine>(), Ok(l));
    }
}
