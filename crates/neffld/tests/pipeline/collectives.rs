//! NEFFs with collectives: the runtime's own sample rebuilt, worlds of
//! ranks from the writer, and every refusal of the collectives band.

use neffld::container::integrity::{digest, HashAlgorithm};
use neffld::kbin::collective::encode as rec;
use neffld::kbin::collective::{Chaining, CollectiveOp, Form, ReduceOp};
use neffld::kbin::isa::{encode, RECORD_LEN};
use neffld::manifest::EngineType;
use neffld::parse::{self, ParseOptions};
use neffld::{Arch, NrtStatus};
use neffld_testkit::collectives::{self as cc, World, CC_IN, CC_OUT};
use neffld_testkit::stream;
use serde_json::{json, Value};

#[test]
fn the_sample_streams_are_the_notes_bytes() {
    let pe = cc::sample_pe();
    let pool = cc::sample_pool();
    assert_eq!(pe, cc::unhex(cc::SAMPLE_PE_XXD), "pe.bin");
    assert_eq!(pool, cc::unhex(cc::SAMPLE_POOL_XXD), "pool.bin");
    assert_eq!(
        digest(HashAlgorithm::Md5, &pe)[..4],
        cc::SAMPLE_PE_MD5_PREFIX
    );
    assert_eq!(
        digest(HashAlgorithm::Md5, &pool)[..4],
        cc::SAMPLE_POOL_MD5_PREFIX
    );
}

#[test]
fn the_sample_parses_into_one_all_reduce() {
    let neff = neffld::container::open(&cc::sample_neff(), &Default::default()).unwrap();
    for arch in [Arch::Sunda, Arch::Cayman] {
        let m = parse::parse(&neff, &ParseOptions::new(arch, 1)).unwrap_or_else(|e| panic!("{e}"));
        let k = &m.kbins[0];
        let [c] = k.collectives() else {
            panic!("{:?}", k.collectives())
        };
        assert_eq!(c.engine(), EngineType::Pe);
        assert_eq!(
            (c.record(), c.form(), c.op()),
            (0, Form::Ptc, CollectiveOp::AllReduce)
        );
        assert_eq!(c.reduce(), Some(ReduceOp::Add));
        assert_eq!(c.dtype().map(|d| d.name()), Some("float32"));
        assert_eq!(
            (c.elements_in(), c.elements_out(), c.bytes_out()),
            (32, 32, 128)
        );
        assert_eq!((c.group(), c.group_size()), (Some(0), 1));
        assert_eq!(c.chaining(), Chaining::None);
        assert_eq!(
            k.vars().get(c.input().unwrap()).unwrap().name,
            "gradient_in"
        );
        assert_eq!(
            k.vars().get(c.output().unwrap()).unwrap().name,
            "gradient_out"
        );
    }
}

#[test]
fn worlds_of_every_size_parse_per_rank_and_shared() {
    for ranks in [2u32, 8, 32, 64] {
        let w = World::new(ranks);
        for (which, bytes) in [("shared", w.shared()), ("rank 1", w.rank(1))] {
            let neff = neffld::container::open(&bytes, &Default::default()).unwrap();
            let m = parse::parse(&neff, &ParseOptions::new(Arch::Cayman, 1))
                .unwrap_or_else(|e| panic!("{ranks} ranks, {which}: {e}"));
            let ops: Vec<_> = m.kbins[0].collectives().iter().map(|c| c.op()).collect();
            let mut want = vec![
                CollectiveOp::AllReduce,
                CollectiveOp::AllGather,
                CollectiveOp::ReduceScatter,
                CollectiveOp::AllReduce,
            ];
            if which != "shared" {
                want.extend([CollectiveOp::Send, CollectiveOp::Receive]);
            }
            assert_eq!(ops, want, "{ranks} ranks, {which}");
        }
    }
}

type Record = [u8; RECORD_LEN];

/// A four-rank world's NEFF (one group of ranks 0..3, `cc_in` and
/// `cc_out` of 4 KiB) whose PE stream is `records` after the ordering
/// record, its def.json edited by `edit`, parsed for trn2: the refusal's
/// message, or `None` when it parses.
fn refusal(records: &[Record], edit: impl FnOnce(&mut Value)) -> Option<String> {
    let mut s = World::new(4)
        .with_steps(&[cc::Step::AllReduce(1024)])
        .shared_synth();
    let mut pe = vec![encode::record(0xB1)];
    pe.extend_from_slice(records);
    s.set("sg00/PE.bin", stream(&pe));
    s.edit("sg00/def.json", edit);
    let neff = s.open(neffld::container::writer::Producer::V2_21);
    match parse::parse(&neff, &ParseOptions::new(Arch::Cayman, 1)) {
        Ok(_) => None,
        Err(e) => {
            assert_eq!(e.status(), NrtStatus::Invalid, "{e}");
            Some(e.to_string())
        }
    }
}

fn refused(records: &[Record], edit: impl FnOnce(&mut Value), words: &str) {
    let msg = refusal(records, edit).unwrap_or_else(|| panic!("not refused; wanted {words:?}"));
    assert!(msg.contains(words), "{msg}\n  wanted: {words}");
    assert!(
        msg.contains("of sg00/PE.bin"),
        "the refusal names the stream: {msg}"
    );
}

fn keep(_: &mut Value) {}

const FP32: u8 = 0x0A;
const ADD: u8 = 0x04;
/// Waits for semaphore 1, increments 2 on completion.
fn ev() -> [u8; 8] {
    rec::events(Some(1), Some(2))
}

fn all_reduce(n: u64) -> Record {
    rec::ptc(ev(), 1, ADD, FP32, 0, CC_IN, CC_OUT, n)
}

#[test]
fn a_well_formed_stream_is_not_refused() {
    assert_eq!(refusal(&[all_reduce(1024)], keep), None);
}

#[test]
fn ptc_refusals_follow_the_runtimes_checks() {
    // The cc context needs replica groups.
    refused(
        &[all_reduce(16)],
        |d| d["replica_groups"] = json!([]),
        "instruction 1 (opcode 0xc8) of sg00/PE.bin: Failed to build cc context",
    );
    let mut beyond = all_reduce(16);
    beyond[14] = 3;
    refused(
        &[beyond],
        keep,
        "replica group 3 is beyond the subgraph's 1 replica groups",
    );
    refused(
        &[all_reduce(16)],
        |d| d["replica_groups"] = json!([[[0, 1], [2, 3, 4]]]),
        "replica group 0 mixes groups of 2 and 3 ranks",
    );
    refused(
        &[all_reduce(16)],
        |d| d["replica_groups"] = json!([[[0, 1], [1, 2]]]),
        "names rank 1 twice",
    );
    refused(
        &[all_reduce(16)],
        |d| d["num_streams"] = json!(2),
        "PTC instructions only support single streams (the subgraph declares 2)",
    );
    let no_increment = rec::ptc(
        rec::events(Some(1), None),
        1,
        ADD,
        FP32,
        0,
        CC_IN,
        CC_OUT,
        16,
    );
    refused(
        &[no_increment],
        keep,
        "update mode 0x13), found update mode 0x00",
    );
    refused(
        &[rec::ptc(ev(), 0x0B, ADD, FP32, 0, CC_IN, CC_OUT, 16)],
        keep,
        "unknown collective type 0x0b",
    );
    for (ctype, name) in [(1, "all-reduce"), (2, "reduce-scatter")] {
        refused(
            &[rec::ptc(ev(), ctype, 0x05, FP32, 0, CC_IN, CC_OUT, 16)],
            keep,
            &format!("{name} needs a reduce operation of add, mult, max or min"),
        );
    }
    // An all-gather carries no reduction: its ALU byte is not checked.
    assert_eq!(
        refusal(&[rec::ptc(ev(), 3, 0x05, FP32, 0, CC_IN, CC_OUT, 16)], keep),
        None
    );
    refused(
        &[rec::ptc(ev(), 1, ADD, 0, 0, CC_IN, CC_OUT, 16)],
        keep,
        "unknown dtype 0x00",
    );
    refused(
        &[rec::ptc(ev(), 2, ADD, FP32, 0, CC_IN, CC_OUT, u64::MAX / 2)],
        keep,
        "elements over 4 ranks overflows 64 bits",
    );
    refused(
        &[rec::ptc(ev(), 1, ADD, FP32, 0, 77, CC_OUT, 16)],
        keep,
        "the input tensor id 77 names no variable (the subgraph has 10)",
    );
    // 4 KiB buffers: 1024 fp32 elements fit, 1025 do not.
    refused(
        &[all_reduce(1025)],
        keep,
        "the input reaches 4100 bytes into cc_in (4096 bytes)",
    );
    // A reduce-scatter's input is every rank's share: 4 × 512 × 4 bytes.
    refused(
        &[rec::ptc(ev(), 2, ADD, FP32, 0, CC_IN, CC_OUT, 512)],
        keep,
        "the input reaches 8192 bytes into cc_in",
    );
    // An all-gather's output is: so is its bound.
    refused(
        &[rec::ptc(ev(), 3, 0, FP32, 0, CC_IN, CC_OUT, 512)],
        keep,
        "the output reaches 8192 bytes into cc_out",
    );
    // A list variable is never on the device.
    refused(
        &[rec::ptc(ev(), 1, ADD, FP32, 0, 6, CC_OUT, 1)],
        |d| d["var"]["DGETable0"] = json!({"list":[2,1,3],"type":"list","var_id":6}),
        "the input tensor DGETable0 is a list variable, which is not on the device",
    );
}

#[test]
fn elements_scale_with_the_group_where_the_runtime_scales_them() {
    let s = World::new(4).with_steps(&[
        cc::Step::AllReduce(64),
        cc::Step::ReduceScatter(64),
        cc::Step::AllGather(64),
    ]);
    let neff = s
        .shared_synth()
        .open(neffld::container::writer::Producer::V2_21);
    let m = parse::parse(&neff, &ParseOptions::new(Arch::Cayman, 1)).unwrap();
    let counts: Vec<_> = m.kbins[0]
        .collectives()
        .iter()
        .map(|c| (c.op(), c.elements_in(), c.elements_out(), c.bytes_out()))
        .collect();
    assert_eq!(
        counts,
        [
            (CollectiveOp::AllReduce, 64, 64, 256),
            (CollectiveOp::ReduceScatter, 256, 64, 256),
            (CollectiveOp::AllGather, 64, 256, 1024),
        ]
    );
}

#[test]
fn send_and_receive_refusals() {
    let mut bad = rec::psr(ev(), CC_IN, 1, true, 0, 64);
    bad[24] = 2;
    refused(
        &[bad],
        keep,
        "direction byte must be 1 (send) or 0 (receive), found 2",
    );
    refused(
        &[rec::psr(ev(), CC_OUT, 3, false, 4000, 200)],
        keep,
        "the output reaches 4200 bytes into cc_out",
    );
    refused(
        &[rec::psr(ev(), CC_IN, 1, true, u64::MAX, 2)],
        keep,
        "the input reaches beyond 2^64 bytes into cc_in",
    );
    refused(
        &[rec::psr(ev(), 99, 1, true, 0, 2)],
        keep,
        "tensor id 99 names no variable",
    );
}

fn tile(var: u16, offset: u32) -> [u8; 24] {
    rec::tile(var, offset, 4, 16)
}

fn ptc2(chaining: u8, src: [u8; 24], dst: [u8; 24]) -> [Record; 2] {
    rec::ptc2(ev(), 1, ADD, FP32, src, dst, 0, chaining, 0)
}

#[test]
fn ptc2_refusals_follow_the_runtimes_checks() {
    let [p, e] = ptc2(0, tile(0, 0), tile(0, 0x100));
    assert_eq!(refusal(&[p, e], keep), None);
    refused(
        &[p, encode::record(0x01)],
        keep,
        "must be followed by its extension record (0xda); the next record is opcode 0x01",
    );
    refused(
        &[p],
        keep,
        "must be followed by its extension record (0xda); the stream ends",
    );
    refused(
        &[e],
        keep,
        "an extension record (0xda) that follows no PSEUDO_TRIGGER_COLLECTIVE2",
    );
    let mut dge = tile(0, 0);
    dge[7] = 0x20;
    let [p2, e2] = ptc2(0, dge, tile(0, 0));
    refused(
        &[p2, e2],
        keep,
        "the source operand must start with the variable-id marker (0x10), found 0x20",
    );
    let [p2, e2] = ptc2(0, tile(0, 0), tile(0, 1 << 25));
    refused(
        &[p2, e2],
        keep,
        "the destination operand's partition offset 0x2000000 has bits 25 to 31 set",
    );
    let [p2, e2] = ptc2(0, rec::tile(0, 0, 0, 16), tile(0, 0));
    refused(&[p2, e2], keep, "the source tile has no elements (0 × 16)");
    let [p2, e2] = ptc2(0, tile(CC_IN as u16, 4000), tile(0, 0));
    refused(
        &[p2, e2],
        keep,
        "the source reaches 4256 bytes into cc_in (4096 bytes)",
    );
    let [mut p2, e2] = ptc2(0, tile(0, 0), tile(0, 0));
    p2[15] = 2;
    refused(
        &[p2, e2],
        keep,
        "collective dimension 2 (0 partition, 1 free)",
    );
    let [p2, e2] = ptc2(4, tile(0, 0), tile(0, 0));
    refused(&[p2, e2], keep, "chaining 4 (0 to 3)");
    let [p2, e2] = ptc2(3, tile(0, 0), tile(0, 0));
    refused(
        &[p2, e2],
        keep,
        "a final collective of a chain with no initial one before it",
    );
    let [mut p2, e2] = ptc2(0, tile(0, 0), tile(0, 0));
    p2[40..64].copy_from_slice(&tile(55, 0));
    refused(
        &[p2, e2],
        keep,
        "the second source tensor id 55 names no variable",
    );
}

#[test]
fn a_chain_of_ptc2s_is_sealed_with_its_places() {
    let mut records = Vec::new();
    for chaining in [1, 2, 3] {
        records.extend(ptc2(chaining, tile(0, 0), tile(0, 0x100)));
    }
    let mut s = World::new(4).with_steps(&[]).shared_synth();
    let mut pe = vec![encode::record(0xB1)];
    pe.extend(records);
    s.set("sg00/PE.bin", stream(&pe));
    let neff = s.open(neffld::container::writer::Producer::V2_21);
    let m = parse::parse(&neff, &ParseOptions::new(Arch::Cayman, 1)).unwrap();
    let k = &m.kbins[0];
    let chain: Vec<_> = k
        .collectives()
        .iter()
        .map(|c| (c.record(), c.chaining()))
        .collect();
    assert_eq!(
        chain,
        [
            (1, Chaining::Initial),
            (3, Chaining::Body),
            (5, Chaining::Final)
        ]
    );
    assert_eq!(
        k.collectives()[0].priority(),
        Some(0),
        "trn2 reads the priority class"
    );
    // Each PTC2 is one trigger; each extension is deleted.
    let lowerings: Vec<_> = k
        .engine(EngineType::Pe)
        .relocations()
        .iter()
        .map(|r| r.record())
        .collect();
    assert_eq!(lowerings, [1, 2, 3, 4, 5, 6]);
}

#[test]
fn rank_id_and_global_id_refusals() {
    let mut wide = rec::rank_id(0, 3);
    wide[22] = 8;
    refused(
        &[wide],
        keep,
        "the rank id is loaded as 4 bytes only, the record asks for 8",
    );
    refused(
        &[rec::rank_id(2, 3)],
        keep,
        "instruction 1 (opcode 0xdb) of sg00/PE.bin: replica group 2 is beyond",
    );
    let mut marker = rec::gid_to_register(1);
    marker[23] = 0x40;
    refused(
        &[marker],
        keep,
        "the global id's destination marker 0x40 is neither a register (0x80) nor a variable (0x10)",
    );
    refused(
        &[rec::gid_to_memory(CC_OUT as u16, 4094)],
        keep,
        "the destination reaches 4098 bytes into cc_out",
    );
    assert_eq!(
        refusal(
            &[
                rec::rank_id(0, 3),
                rec::gid_to_register(4),
                rec::gid_to_memory(7, 60)
            ],
            keep
        ),
        None
    );
}

/// The writer-built NEFFs vendored for the tests that cannot run the
/// writer (Python's): each is what the writer makes now, byte for byte.
/// `NEFFLD_REWRITE_WRITTEN=1` writes them afresh.
#[test]
fn the_vendored_collectives_neffs_are_the_writers() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/written");
    let every_kind = World::new(2);
    for (name, bytes) in [
        ("collectives_sample.neff", cc::sample_neff()),
        ("collectives_tp2_rank1.neff", every_kind.rank(1)),
    ] {
        let path = dir.join(name);
        if std::env::var_os("NEFFLD_REWRITE_WRITTEN").is_some() {
            std::fs::write(&path, &bytes).unwrap();
        }
        let vendored = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            vendored == bytes,
            "{name} differs from the writer's; rewrite it"
        );
    }
}

/// Every byte of every collectives record, set in turn to 0x00, 0xFF and
/// its value + 1, through the whole load on both chips (the load fuzz
/// target's body: no panic, no validator finding, nothing left on the
/// device): each mutant loads or is refused `NRT_INVALID` with a message.
#[test]
fn every_byte_of_every_collectives_record_mutated_loads_or_is_refused() {
    let base = World::new(4).rank_synth(1);
    let pe = base.members["sg00/PE.bin"].clone();
    let (mut loaded, mut refused) = (0, 0);
    // Record 0 is the ordering record; the rest are the band's.
    for at in 64..pe.len() {
        for value in [0x00, 0xFF, pe[at].wrapping_add(1)] {
            if value == pe[at] {
                continue;
            }
            let mut s = base.clone();
            let mut stream = pe.clone();
            stream[at] = value;
            s.set("sg00/PE.bin", stream);
            let neff = s.write(neffld::container::writer::Producer::V2_21);
            for flag in [0u8, 1] {
                let mut input = vec![flag];
                input.extend_from_slice(&neff);
                match neffld_testkit::fuzz_load(&input) {
                    None => loaded += 1,
                    Some(NrtStatus::Invalid) => refused += 1,
                    Some(other) => panic!("byte {at} = {value:#04x}, flag {flag}: {other:?}"),
                }
            }
        }
    }
    println!("{loaded} mutants loaded, {refused} refused");
    assert!(
        loaded > 0 && refused > 0,
        "{loaded} loaded, {refused} refused"
    );
}

/// def.json's replica groups in the compiler's three levels or the HLO's
/// two (one set) read alike; a list that is neither is refused naming
/// def.json.
#[test]
fn replica_groups_of_two_or_three_levels_read_alike() {
    let groups = |v: Value| {
        let mut s = World::new(4)
            .with_steps(&[cc::Step::AllReduce(16)])
            .shared_synth();
        s.edit("sg00/def.json", |d| d["replica_groups"] = v);
        let neff = s.open(neffld::container::writer::Producer::V2_21);
        parse::parse(&neff, &ParseOptions::new(Arch::Cayman, 1)).map(|m| {
            let k = &m.kbins[0];
            (k.replica_groups().clone(), k.collectives()[0].group_size())
        })
    };
    let want = (vec![vec![vec![0, 1], vec![2, 3]]], 2);
    assert_eq!(groups(json!([[[0, 1], [2, 3]]])).unwrap(), want);
    assert_eq!(groups(json!([[0, 1], [2, 3]])).unwrap(), want);
    assert_eq!(groups(json!([[]])).unwrap(), (vec![vec![]], 1));
    let e = groups(json!([[0, [1]]])).unwrap_err();
    assert_eq!(e.status(), NrtStatus::Invalid);
    assert!(e.to_string().contains("sg00/def.json"), "{e}");
}
