//! NEFFs with collectives, written by the project's own writer: no public
//! NEFF with collectives exists (spec/collectives.md §5), so these are the
//! test data of tensor-parallel loads.
//!
//! * [`sample`] — the small NEFF libnrt carries inside itself (one
//!   all-reduce on PE, two DMA triggers and a semaphore wait on Pool),
//!   rebuilt from the public reverse-engineering notes that print it: its
//!   two engine streams byte for byte, its manifests with the keys and
//!   values the notes give.
//! * [`World`] — a world of ranks whose NEFFs carry all-reduce,
//!   all-gather, reduce-scatter, send/receive and PTC2 records, the rank-id
//!   and global-id loads: one NEFF per rank ([`World::rank`]) or one every
//!   rank loads ([`World::shared`]).

use serde_json::{json, Value};

use neffld::container::writer::{NeffWriter, Producer};
use neffld::kbin::collective::encode as cc;
use neffld::kbin::isa::{self, encode, RECORD_LEN};

use crate::{stream, Synth};

/// The sample's PE stream as the notes print it (`xxd` of `pe.bin`, 64
/// bytes).
pub const SAMPLE_PE_XXD: &str = "
c810 0000 040a 1316 0000 0000 040a 0000
0300 0000 0400 0000 2000 0000 0000 0000
0100 0000 0000 0000 0000 0000 0000 0000
0000 0000 0000 0000 0000 0000 0000 0000";

/// The sample's Pool stream as the notes print it (`xxd` of `pool.bin`,
/// 192 bytes).
pub const SAMPLE_POOL_XXD: &str = "
c110 0000 0000 0000 0000 0000 715f 6772
6164 6965 6e74 5f69 6e00 0000 0000 0000
0000 0000 0000 0000 0000 0000 0000 0000
0000 0000 0000 0000 0000 0000 0000 0000
c110 0000 0416 0000 0000 0000 715f 6772
6164 6965 6e74 5f6f 7574 0000 0000 0000
0000 0000 0000 0000 0000 0000 0000 0000
0000 0000 0000 0000 0000 0000 0000 0000
a010 0000 040b 0000 0000 0000 0000 0000
0000 0000 0000 0000 0000 0000 0000 0000
0000 0000 0000 0000 0000 0000 0000 0000
0000 0000 0000 0000 0000 0000 0000 0000";

/// The first four bytes of each stream's MD5, as the notes print them
/// beside the member (`pe.bin f5c01e49…`, `pool.bin 25daba76…`).
pub const SAMPLE_PE_MD5_PREFIX: [u8; 4] = [0xf5, 0xc0, 0x1e, 0x49];
pub const SAMPLE_POOL_MD5_PREFIX: [u8; 4] = [0x25, 0xda, 0xba, 0x76];

/// Bytes of a hex dump (white space ignored).
pub fn unhex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(u8::is_ascii_hexdigit).collect();
    digits
        .chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap_or("00"), 16).unwrap_or(0))
        .collect()
}

/// The sample's PE stream, from the project's own encoders and the
/// fields the notes decode: a PTC that waits for semaphore 10, increments
/// 22 on completion, and all-reduces (ADD, fp32, group 0) 32 elements of
/// var 3 into var 4.
pub fn sample_pe() -> Vec<u8> {
    stream(&[cc::ptc(
        cc::events(Some(10), Some(22)),
        1,
        0x04,
        0x0A,
        0,
        3,
        4,
        32,
    )])
}

/// The sample's Pool stream: trigger `q_gradient_in` block 0, trigger
/// `q_gradient_out` block 0 once semaphore 22 is set, wait for
/// semaphore 11.
pub fn sample_pool() -> Vec<u8> {
    let waits = |mut r: [u8; RECORD_LEN], sem: u8| {
        r[4] = 0x04;
        r[5] = sem;
        r
    };
    stream(&[
        encode::trigger("q_gradient_in", 0),
        waits(encode::trigger("q_gradient_out", 0), 22),
        waits(encode::record(isa::OP_EVENT_SEMAPHORE), 11),
    ])
}

/// The runtime's own sample NEFF (see the module doc). The header carries
/// the notes' name (`x`) and compiler build string; the payload is this
/// writer's.
pub fn sample() -> Synth {
    let mut s = Synth::new();
    s.set_json(
        "kelf-a.json",
        &json!({"graphs":[{"definition":"sg00/def.json","name":"sg00"}],"version":"0.5","target":"*"}),
    );
    s.set_json(
        "neff.json",
        &json!({
            "nodes": [
                {"op":"null","name":"input","inputs":[],"is_param":"0"},
                {"op":"tvm_op","name":"sg_tonga0",
                 "attrs":{"func_name":"__kelf","kelf":"kelf-a.json","num_inputs":"1","num_outputs":"1"},
                 "inputs":[[0,0,0]],"output_names":["output"]}
            ],
            "arg_nodes":[0],
            "heads":[[1,0,0]],
            "attrs":{"shape":["list_shape",[[32],[32]]],"storage_id":["list_int",[0,1]],
                     "dltype":["list_str",["float32","float32"]]},
            "node_row_ptr":[0,1,2]
        }),
    );
    let io = |ty: &str, id: u64| {
        json!({"#transfer-type":ty,"type":ty,"size":128,"element_size":4,
               "internal_shape":[1,1,1,32],"var_id":id})
    };
    let mut output = io("output", 2);
    output["#file-name"] = json!("value_nn__output:0-simout.npy");
    s.set_json(
        "sg00/def.json",
        &json!({
            "act":"act.json","dve":"dve.json","pe":"pe.json","pool":"pool.json","sp":"sp.json",
            "debug_info":{"wavegraph":"wavegraph-bin.json"},
            "dma_queue":{
                "q_gradient_in":{"owner":"pool","semaphore":10,"type":"in"},
                "q_gradient_out":{"owner":"pool","semaphore":11,"type":"out"}
            },
            "git_version":"","name":"definition","version":"0.6-",
            "replica_groups":[[]],
            "runtime_statebuffer_reservation":[],
            "var":{
                "SB":{"type":"state-buffer","var_id":1},
                "input":io("input",0),
                "output":output,
                "gradient_in":{"#transfer-type":"tmp-buf","type":"tmp-buf","size":128,"var_id":3},
                "gradient_out":{"#transfer-type":"tmp-buf","type":"tmp-buf","size":128,"var_id":4}
            }
        }),
    );
    for e in ["pe", "dve", "sp"] {
        s.set_json(
            &format!("sg00/{e}.json"),
            &json!({"dma":[],"instr":format!("{e}.bin"),"name":format!("{e}_array_json")}),
        );
    }
    s.set_json(
        "sg00/act.json",
        &json!({"act_info":"act_info.json","act_semaphore":9,"dma":[],"instr":"act.bin",
                "name":"act_array_json"}),
    );
    // The notes give each descriptor's ends, sizes and steps; the offsets
    // (0: whole variables) are this writer's.
    let copy = |from: &str, to: &str| {
        json!({"from":from,"to":to,"from_off":0,"to_off":0,"from_sizes":[128,1],
               "from_steps":[1,128],"to_sizes":[128,1],"to_steps":[1,128]})
    };
    s.set_json(
        "sg00/pool.json",
        &json!({"dma":[
            {"id":0,"queue":"q_gradient_in","desc":[copy("input","gradient_in")]},
            {"id":0,"queue":"q_gradient_out","desc":[copy("gradient_out","output")]}
        ],"instr":"pool.bin","name":"pool_array_json"}),
    );
    s.set("sg00/pe.bin", sample_pe());
    s.set("sg00/pool.bin", sample_pool());
    s.set(
        "sg00/pe.asm",
        b"PSEUDO_TRIGGER_COLLECTIVE $S[10]>0 $S[22]++@complete ctype=ALL_REDUCE\n  \
input_tensor_id=3 output_tensor_id=4 num_elements=32 dtype=fp32 op=ADD group_id=0;\n"
            .to_vec(),
    );
    s.set(
        "sg00/pool.asm",
        b"PSEUDO_DMA_TRIGGER q_gradient_in block_id=0;\nPSEUDO_DMA_TRIGGER $S[22]>0 q_gradient_out block_id=0;\nEVENT_SEMAPHORE $S[11]>0;\n"
            .to_vec(),
    );
    for e in ["act", "dve", "sp"] {
        s.set(&format!("sg00/{e}.bin"), Vec::new());
        s.set(&format!("sg00/{e}.asm"), Vec::new());
    }
    s
}

/// The members of the sample's tar in the order the notes list them,
/// the `sg00/` directory entry among them.
const SAMPLE_ORDER: [&str; 19] = [
    "kelf-a.json",
    "neff.json",
    "sg00/",
    "sg00/pe.json",
    "sg00/def.json",
    "sg00/pool.bin",
    "sg00/sp.asm",
    "sg00/pe.bin",
    "sg00/dve.json",
    "sg00/act.json",
    "sg00/dve.bin",
    "sg00/dve.asm",
    "sg00/act.bin",
    "sg00/sp.bin",
    "sg00/sp.json",
    "sg00/pool.asm",
    "sg00/pe.asm",
    "sg00/pool.json",
    "sg00/act.asm",
];

/// The sample written as a NEFF in the container the notes describe: NEFF
/// 2.0, a plain MD5 of the payload, a GNU-dialect tar (mode 0644, owner
/// names and member mtime as printed) with the members in the notes'
/// order and the `sg00/` directory entry, the header's name `x`, its
/// compiler build string, one TPB, no feature bits, logical-core size 1.
/// Not the runtime's bytes: the notes do not print the JSON members' text,
/// the owner ids or the whole uuid.
pub fn sample_neff() -> Vec<u8> {
    use neffld::container::integrity::DigestForm;
    use neffld::container::writer::{gzip_with_mtime, tar_of, TarEntry, TarFormat};
    let members = sample().members;
    let entries: Vec<TarEntry> = SAMPLE_ORDER
        .iter()
        .map(|&name| {
            let mut e = TarEntry::file(name, members.get(name).map_or(&[][..], Vec::as_slice));
            if name.ends_with('/') {
                e.typeflag = b'5';
            }
            e.mode = 0o644;
            e.uid = 0;
            e.gid = 0;
            e.uname = "imminkin".into();
            e.gname = "domain^users".into();
            e.mtime = 0o14714250600;
            e.format = TarFormat::Gnu;
            e
        })
        .collect();
    let payload = gzip_with_mtime(&tar_of(&entries), 9, 0);
    let mut h = Producer::V2_0_99229.default_header();
    h.version_major = 2;
    h.version_minor = 0;
    h.set_name("x");
    let build = b"2.0.21884.0%kaena-tools/develop@6c66f4b";
    h.build_version = [0; 128];
    h.build_version[..build.len()].copy_from_slice(build);
    h.requested_tpb_count = 1;
    h.feature_bits = 0;
    h.vnc_size = 1;
    let mut w = NeffWriter::with_header(Producer::V2_0_99229, h);
    w.digest_form = Some(DigestForm::Plain);
    w.finish(payload)
}

/// One collective of a [`World`]'s NEFFs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// A PTC all-reduce (ADD) of `n` fp32 elements of `cc_in` into `cc_out`.
    AllReduce(u64),
    /// A PTC all-gather of `n` elements per rank.
    AllGather(u64),
    /// A PTC reduce-scatter (MAX) leaving `n` elements per rank.
    ReduceScatter(u64),
    /// A PTC2 all-reduce of a `rows × cols` tile of the state buffer.
    Ptc2AllReduce { rows: u32, cols: u32 },
    /// A send of `bytes` to the next rank and a receive of as many from the
    /// previous one (per-rank NEFFs only: a send names its peer).
    SendRecvRing(u64),
    /// The rank-id load of the group and the global-id load into a
    /// register and into `cc_out`.
    Ids,
}

/// The var ids of a [`World`] NEFF's collective buffers (beside
/// [`Synth::dynamic_cayman_n`]'s vars 0..=6).
pub const CC_IN: u32 = 8;
pub const CC_OUT: u32 = 9;

/// Bytes of an fp32 element.
const F32: u64 = 4;
const FP32: u8 = 0x0A;
const ADD: u8 = 0x04;
const MAX: u8 = 0x08;

/// A world of `ranks` ranks over one replica group of all of them (or
/// the groups given), whose NEFFs carry `steps` on PE, in order: trn2
/// NEFFs of one subgraph that load at either logical-core size
/// ([`crate::any_lnc_cayman`]'s form).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct World {
    pub ranks: u32,
    /// One replica group set (def.json's `replica_groups` is a list of
    /// them); by default one group of every rank.
    pub groups: Vec<Vec<u32>>,
    pub steps: Vec<Step>,
}

impl World {
    /// `ranks` ranks in one group, with every kind of step: an all-reduce
    /// of 1024 elements, an all-gather and a reduce-scatter of 256 per
    /// rank, a PTC2 all-reduce of 8 × 64, a send and a receive of 512
    /// bytes around the ring, the id loads.
    pub fn new(ranks: u32) -> World {
        World {
            ranks,
            groups: vec![(0..ranks).collect()],
            steps: vec![
                Step::AllReduce(1024),
                Step::AllGather(256),
                Step::ReduceScatter(256),
                Step::Ptc2AllReduce { rows: 8, cols: 64 },
                Step::SendRecvRing(512),
                Step::Ids,
            ],
        }
    }

    /// Only these steps.
    pub fn with_steps(mut self, steps: &[Step]) -> World {
        self.steps = steps.to_vec();
        self
    }

    fn group_size(&self) -> u64 {
        self.groups.first().map_or(1, |g| g.len().max(1) as u64)
    }

    /// Bytes the collective buffers need: the largest input and output.
    fn buffer_bytes(&self) -> u64 {
        let r = self.group_size();
        self.steps
            .iter()
            .map(|s| match *s {
                Step::AllReduce(n) => n * F32,
                Step::AllGather(n) | Step::ReduceScatter(n) => n * r * F32,
                Step::SendRecvRing(b) => b,
                Step::Ptc2AllReduce { .. } | Step::Ids => F32,
            })
            .max()
            .unwrap_or(F32)
    }

    /// The PE records of `rank` (`None`: the shared NEFF, whose records
    /// may not name a peer).
    fn records(&self, rank: Option<u32>) -> Vec<[u8; RECORD_LEN]> {
        let mut out = vec![encode::record(isa::OP_SET_ORDERING_MODE)];
        // Each collective waits for the one before (semaphore 30 + i) and
        // sets its own on completion.
        let mut sem = 30u8;
        let mut next = || {
            let e = cc::events(Some(sem), Some(sem + 1));
            sem = sem.wrapping_add(1);
            e
        };
        for s in &self.steps {
            match *s {
                Step::AllReduce(n) => out.push(cc::ptc(next(), 1, ADD, FP32, 0, CC_IN, CC_OUT, n)),
                Step::ReduceScatter(n) => {
                    out.push(cc::ptc(next(), 2, MAX, FP32, 0, CC_IN, CC_OUT, n))
                }
                Step::AllGather(n) => out.push(cc::ptc(next(), 3, 0, FP32, 0, CC_IN, CC_OUT, n)),
                Step::Ptc2AllReduce { rows, cols } => {
                    let src = cc::tile(0, 0, rows, cols);
                    let dst = cc::tile(0, 0x1_0000, rows, cols);
                    out.extend(cc::ptc2(next(), 1, ADD, FP32, src, dst, 0, 0, 0));
                }
                Step::SendRecvRing(bytes) => {
                    let Some(r) = rank else {
                        continue;
                    };
                    let n = u64::from(self.ranks.max(1));
                    let r = u64::from(r);
                    out.push(cc::psr(next(), CC_IN, (r + 1) % n, true, 0, bytes));
                    out.push(cc::psr(next(), CC_OUT, (r + n - 1) % n, false, 0, bytes));
                }
                Step::Ids => {
                    out.push(cc::rank_id(0, 3));
                    out.push(cc::gid_to_register(4));
                    out.push(cc::gid_to_memory(CC_OUT as u16, 0));
                }
            }
        }
        out
    }

    fn synth(&self, rank: Option<u32>) -> Synth {
        let mut s = Synth::dynamic_cayman_n(1);
        let bytes = self.buffer_bytes();
        let groups = json!([self.groups]);
        s.edit("sg00/def.json", |d| {
            d["var"]["cc_in"] = json!({"ops":[],"size":bytes,"type":"tmp-buf","var_id":CC_IN});
            d["var"]["cc_out"] = json!({"ops":[],"size":bytes,"type":"tmp-buf","var_id":CC_OUT});
            // var ids stay dense: 7 is a small buffer of its own.
            d["var"]["cc_flag"] = json!({"ops":[],"size":64,"type":"tmp-buf","var_id":7});
            d["replica_groups"] = groups;
            d["#rank_world_size"] = json!(self.ranks);
        });
        s.set("sg00/PE.bin", stream(&self.records(rank)));
        s
    }

    /// The NEFF rank `rank` loads.
    pub fn rank_synth(&self, rank: u32) -> Synth {
        self.synth(Some(rank))
    }

    /// One NEFF every rank loads (a send or receive, which names its
    /// peer, is left out).
    pub fn shared_synth(&self) -> Synth {
        self.synth(None)
    }

    fn write(s: &Synth, name: &str) -> Vec<u8> {
        let mut h = Producer::V2_21.default_header();
        h.feature_bits &= !neffld::container::header::FEATURE_VNC;
        h.set_name(name);
        NeffWriter::with_header(Producer::V2_21, h).write(&s.member_list())
    }

    /// Rank `rank`'s NEFF, written.
    pub fn rank(&self, rank: u32) -> Vec<u8> {
        World::write(&self.rank_synth(rank), &format!("rank{rank}"))
    }

    /// The shared NEFF, written.
    pub fn shared(&self) -> Vec<u8> {
        World::write(&self.shared_synth(), "world")
    }

    /// Every rank's own NEFF.
    pub fn ranks(&self) -> Vec<Vec<u8>> {
        (0..self.ranks).map(|r| self.rank(r)).collect()
    }
}

/// def.json's `replica_groups` for one set of `groups`.
pub fn replica_groups(groups: &[Vec<u32>]) -> Value {
    json!([groups])
}
