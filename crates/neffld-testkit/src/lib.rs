//! Synthetic NEFFs for tests of every stage: a member table built from JSON
//! values and instruction records, editable before it is written with the
//! container writer in any producer family's format.
//!
//! Two starting points cover what the real fixtures lack and what they have:
//! * [`Synth::static_sunda`] — a trn1 single-graph NEFF in the style of the
//!   2.0.99229 / 2.18 producers: static DMA blocks in the engine json, `0xC1`
//!   triggers, the single sunda `control_table`, no EVTACCEL reservation.
//! * [`Synth::dynamic_cayman`] — a trn2 LNC-2 NEFF in the style of the 2.23
//!   producers: `0xD4` records with ADDR8 operands, a `dge-table`, dynamic
//!   queues, the EVTACCEL reservation and fp8 config, an idle second graph.
//!
//! Beside them: the real fixtures and captures vendored under `testdata/`
//! ([`FIXTURES`], [`CAPTURES`], [`fixture`], [`real_fixtures`]), and the
//! body of each fuzz target (`fuzz_*`), which the fuzzers and the regression
//! tests of their findings share.
//!
//! This is a crate of its own beside the library, not a module of it, so
//! the shipped library carries none of it. It depends on `neffld` with the
//! `testkit` feature, which opens the pipeline's modules; the library's
//! integration tests, benches and examples, the other crates' tests and the
//! fuzzers depend on it. The library's unit tests cannot (they are the
//! library), so what they need of it they have locally.

use std::collections::BTreeMap;

pub mod collectives;

use serde_json::{json, Value};

use neffld::container::writer::{NeffWriter, Producer};
use neffld::container::{self, Neff, OpenOptions};
use neffld::device::Geometry;
use neffld::kbin::isa::{self, encode, Addr8};

/// A NEFF's members before writing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Synth {
    pub members: BTreeMap<String, Vec<u8>>,
}

/// An `.npy` v1.0 member whose data starts on a 64-byte boundary, as numpy
/// writes it.
pub fn npy_v1(descr: &str, shape: &[u64], payload: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    let tuple = if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    npy_v1_with_header(
        &format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {tuple}, }}"),
        payload,
    )
}

/// An `.npy` v1.0 member with `dict` as its header text, padded as in
/// [`npy_v1`]: for headers that function would not write.
pub fn npy_v1_with_header(dict: &str, payload: &[u8]) -> Vec<u8> {
    let mut h = dict.to_string();
    while !(10 + h.len() + 1).is_multiple_of(64) {
        h.push(' ');
    }
    h.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(h.len() as u16).to_le_bytes());
    out.extend_from_slice(h.as_bytes());
    out.extend_from_slice(payload);
    out
}

/// Concatenates 64-byte records into a stream.
pub fn stream(records: &[[u8; isa::RECORD_LEN]]) -> Vec<u8> {
    records.iter().flatten().copied().collect()
}

fn sems(start: u64) -> Value {
    json!((start..start + 16).collect::<Vec<u64>>())
}

/// A TVM-style neff.json: inputs `(name, dtype, shape)`, then `heads` output
/// entries (the same outputs once per graph, as LNC-2 producers write them).
pub fn neff_json(
    inputs: &[(&str, &str, &[u64])],
    outputs: &[(&str, &str, &[u64])],
    copies: usize,
    kelf: &str,
) -> Value {
    let mut nodes = Vec::new();
    let mut dltype = Vec::new();
    let mut shape = Vec::new();
    let mut row_ptr = Vec::new();
    for (i, (name, dt, sh)) in inputs.iter().enumerate() {
        nodes.push(
            json!({"op":"null","name":name,"inputs":[],"output_names":[name],"is_param":"0"}),
        );
        dltype.push(json!(dt));
        shape.push(json!(sh));
        row_ptr.push(json!(i));
    }
    let kelf_node = inputs.len();
    row_ptr.push(json!(kelf_node));
    let mut output_names = Vec::new();
    let mut heads = Vec::new();
    for _ in 0..copies {
        for (name, dt, sh) in outputs {
            heads.push(json!([kelf_node, output_names.len(), 0]));
            output_names.push(json!(name));
            dltype.push(json!(dt));
            shape.push(json!(sh));
        }
    }
    row_ptr.push(json!(kelf_node + output_names.len()));
    nodes.push(json!({
        "op":"tvm_op","name":"sg_coreV10",
        "attrs":{"func_name":"__kelf","flatten_data":"0","num_inputs":inputs.len().to_string(),
                 "kelf":kelf,"num_outputs":output_names.len().to_string()},
        "inputs": (0..inputs.len()).map(|i| json!([i,0,0])).collect::<Vec<_>>(),
        "output_names": output_names,
    }));
    let n = dltype.len();
    json!({
        "nodes": nodes,
        "arg_nodes": (0..inputs.len()).collect::<Vec<_>>(),
        "heads": heads,
        "attrs": {"shape":["list_shape", shape], "storage_id":["list_int", (0..n).collect::<Vec<_>>()],
                  "dltype":["list_str", dltype]},
        "node_row_ptr": row_ptr,
        "metadata": {"signatures":{"default":{"inputs":{},"outputs":{}}}}
    })
}

fn act_info() -> Value {
    json!({
        "pwp_file_keys": ["bkt_bin","ctrl_bin","profile_json"],
        "act_func_sets": [
            {"name":"exp_and_others","bkt_bin":"exp_and_others_bkt.bin","ctrl_bin":"exp_and_others_ctrl.bin",
             "profile_json":"exp_and_others.json","act":{"exp":400,"identity":1}},
            {"name":"softplus_and_others","bkt_bin":"softplus_and_others_bkt.bin",
             "ctrl_bin":"softplus_and_others_ctrl.bin","profile_json":"softplus_and_others.json",
             "act":{"softplus":40}}
        ]
    })
}

fn act_profile() -> Value {
    json!({
        "bkt_bin":"exp_and_others_bkt.bin","ctl_bin":"exp_and_others_ctrl.bin",
        "bkt_entry_cnt": 4, "ctl_entry_cnt": 2,
        "profile_meta_data": [
            {"func_name":"exp_400p","func_id":7,"use_multipass":false},
            {"func_name":"identity","func_id":1,"use_multipass":false}
        ]
    })
}

fn engine_keys(def: &mut Value) {
    for (k, j, b) in [
        ("pe", "PE.json", "PE.bin"),
        ("act", "Activation.json", "Activation.bin"),
        ("pool", "Pool.json", "Pool.bin"),
        ("dve", "DVE.json", "DVE.bin"),
        ("sp", "SP.json", "SP.bin"),
    ] {
        def[k] = json!(j);
        def[format!("{k}_instr")] = json!(b);
        def[format!("{k}_dbg")] = json!([format!("debug_info_backend_{k}.dbg")]);
    }
}

impl Synth {
    pub fn new() -> Synth {
        Synth::default()
    }

    pub fn set_json(&mut self, name: &str, v: &Value) {
        self.members.insert(
            name.to_string(),
            serde_json::to_vec_pretty(v).unwrap_or_default(),
        );
    }

    pub fn set(&mut self, name: &str, bytes: Vec<u8>) {
        self.members.insert(name.to_string(), bytes);
    }

    pub fn remove(&mut self, name: &str) -> Option<Vec<u8>> {
        self.members.remove(name)
    }

    /// The member parsed as JSON (`Null` when absent or not JSON).
    pub fn json(&self, name: &str) -> Value {
        self.members
            .get(name)
            .and_then(|b| serde_json::from_slice(b).ok())
            .unwrap_or(Value::Null)
    }

    /// Edits a JSON member in place.
    pub fn edit(&mut self, name: &str, f: impl FnOnce(&mut Value)) {
        let mut v = self.json(name);
        f(&mut v);
        self.set_json(name, &v);
    }

    /// Sets `key` of the JSON object `member` to an array of `n` copies of
    /// `element` (JSON text), written as text: an array of millions of
    /// values would cost gigabytes built as a `Value`.
    pub fn set_long_array(&mut self, member: &str, key: &str, element: &str, n: usize) {
        let mut v = self.json(member);
        if let Some(o) = v.as_object_mut() {
            o.remove(key);
        }
        let mut text = serde_json::to_string(&v).unwrap_or_default();
        text.pop();
        if text.len() > 1 {
            text.push(',');
        }
        text.reserve(n * (element.len() + 1) + key.len() + 8);
        text.push_str(&format!("{key:?}:["));
        for i in 0..n {
            if i > 0 {
                text.push(',');
            }
            text.push_str(element);
        }
        text.push_str("]}");
        self.set(member, text.into_bytes());
    }

    /// Appends `n` elements, `element(i)` each (JSON text), to the array
    /// under `key` of the JSON object `member` (made if absent), keeping
    /// the elements it had; written as text, as [`Synth::set_long_array`].
    pub fn extend_array(
        &mut self,
        member: &str,
        key: &str,
        n: usize,
        element: impl Fn(usize) -> String,
    ) {
        let mut v = self.json(member);
        let kept = v
            .as_object_mut()
            .and_then(|o| o.remove(key))
            .unwrap_or_else(|| json!([]));
        let mut text = serde_json::to_string(&v).unwrap_or_default();
        text.pop();
        if text.len() > 1 {
            text.push(',');
        }
        let kept = serde_json::to_string(&kept).unwrap_or_default();
        text.push_str(&format!("{key:?}:{}", &kept[..kept.len() - 1]));
        for i in 0..n {
            if i > 0 || kept.len() > 2 {
                text.push(',');
            }
            text.push_str(&element(i));
        }
        text.push_str("]}");
        self.set(member, text.into_bytes());
    }

    /// Moves a member.
    pub fn rename(&mut self, from: &str, to: &str) {
        if let Some(b) = self.members.remove(from) {
            self.members.insert(to.to_string(), b);
        }
    }

    /// Renames the kelf member and points the `__kelf` node at it.
    pub fn rename_kelf(&mut self, to: &str) {
        let tier1 = if self.members.contains_key("neff.json") {
            "neff.json"
        } else {
            "kelp.json"
        };
        let mut from = String::new();
        self.edit(tier1, |v| {
            if let Some(nodes) = v["nodes"].as_array_mut() {
                for n in nodes {
                    if n["attrs"]["func_name"] == "__kelf" {
                        from = n["attrs"]["kelf"].as_str().unwrap_or_default().to_string();
                        n["attrs"]["kelf"] = json!(to);
                    }
                }
            }
        });
        self.rename(&from, to);
    }

    /// The members as the writer takes them.
    pub fn member_list(&self) -> Vec<(&str, &[u8])> {
        self.members
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_slice()))
            .collect()
    }

    /// A whole NEFF in `producer`'s format.
    pub fn write(&self, producer: Producer) -> Vec<u8> {
        NeffWriter::new(producer).write(&self.member_list())
    }

    /// Writes and opens (with the hash verified).
    pub fn open(&self, producer: Producer) -> Neff {
        let bytes = self.write(producer);
        match container::open(
            &bytes,
            &OpenOptions {
                verify_hash: true,
                ..Default::default()
            },
        ) {
            Ok(n) => n,
            Err(e) => panic!("synthetic NEFF does not open: {e}"),
        }
    }

    /// A trn1 single-graph NEFF with static DMA (see the module doc).
    ///
    /// IO: input `a` f16 `[128,64]` and output `out` f16 `[128,64]` (16 KiB each);
    /// a 16 KiB fp16 weight `identity_1`; two overlapping 4 KiB virtual spill
    /// vars (local scratchpad extent 6 KiB). Queues `qSPIO0`/`qPoolIO0` (in)
    /// and `qSPSpillReload0`/`qPoolSpillReload0` (data); five blocks, each
    /// triggered once by a `0xC1` in its owner's stream.
    pub fn static_sunda() -> Synth {
        let mut s = Synth::new();
        s.set_json(
            "neff.json",
            &neff_json(
                &[("a", "float16", &[128, 64])],
                &[("out", "float16", &[128, 64])],
                1,
                "kelf-0.json",
            ),
        );
        s.set_json(
            "kelf-0.json",
            &json!({"graphs":[{"definition":"sg00/def.json","name":"sg00"}],"version":"0.5","target":"sunda"}),
        );
        s.set_json(
            "info.json",
            &json!({"tool_version":"2.0.99229.0a0+1897edc9","kelp_version":"Dynamic","name":"file.neff",
                    "num_tpb":1,"num_tpb_requested":1}),
        );
        let mut def = json!({
            "version":"0.6","name":"definition","debug_info":{},
            "neff_features":[], "runtime_event_count":12, "runtime_semaphore_count":3,
            "var": {
                "SB": {"type":"state-buffer","var_id":0},
                "a": {"ops":[],"size":16384,"type":"input","var_id":1},
                "out": {"ops":[],"size":16384,"type":"output","var_id":2},
                "identity_1": {"alignment":16384,"fabric_path":"main","file_name":"value_sg0000_identity_1_CRSM.npy",
                               "ops":[],"size":16384,"type":"file","var_id":3},
                "spill_a": {"backing_variable_off":0,"fabric_path":"main","ops":[],"size":4096,"type":"virtual","var_id":4},
                "spill_b": {"backing_variable_off":2048,"fabric_path":"main","ops":[],"size":4096,"type":"virtual","var_id":5}
            },
            "dma_queue": {
                "qSPIO0": {"fabric_path":"main","num_queues":16,"owner":"sp","semaphore_set":sems(8),"type":"in"},
                "qPoolIO0": {"fabric_path":"main","num_queues":16,"owner":"pool","semaphore_set":sems(24),"type":"in"},
                "qSPSpillReload0": {"fabric_path":"main","num_queues":16,"owner":"sp","semaphore_set":sems(40),"type":"data"},
                "qPoolSpillReload0": {"fabric_path":"main","num_queues":16,"owner":"pool","semaphore_set":sems(56),"type":"data"}
            }
        });
        engine_keys(&mut def);
        s.set_json("sg00/def.json", &def);

        let row = |from: &str, to: &str, foff: u64, toff: u64| {
            json!({"from":from,"from_dtype":"float16","from_off":foff,"from_sizes":[128,128],"from_steps":[1,128],
                   "num_tiling_dimensions":1,"op":"copy",
                   "to":to,"to_dtype":"float16","to_off":toff,"to_sizes":[128,128],"to_steps":[1,262144]})
        };
        let sb_to = |from: &str, to: &str| {
            json!({"from":from,"from_dtype":"float16","from_off":0,"from_sizes":[128,128],"from_steps":[1,262144],
                   "num_tiling_dimensions":1,"op":"copy",
                   "to":to,"to_dtype":"float16","to_off":0,"to_sizes":[128,128],"to_steps":[1,128]})
        };
        let spill = |from: &str, to: &str, op: &str| {
            json!({"from":from,"from_dtype":"float32","from_off":0,"from_sizes":[4096],"from_steps":[1],
                   "op":op,"to":to,"to_dtype":"float16","to_off":0,"to_sizes":[4096],"to_steps":[1]})
        };
        let block = |q: &str, id: u64, sem: u64, desc: Value| json!({"#comment":format!("{q}-{id}-block-1"),"desc":[desc],"id":id,"queue":q,"semaphore":sem});
        s.set_json(
            "sg00/SP.json",
            &json!({"dma":[
                block("qSPIO0",0,8,row("a","SB",0,0)),
                block("qSPSpillReload0",1,41,spill("spill_a","SB","copy")),
                block("qSPSpillReload0",0,40,row("identity_1","SB",0,32768)),
            ],"instr":"SP.bin","name":"SP.json"}),
        );
        s.set_json(
            "sg00/Pool.json",
            &json!({"dma":[
                block("qPoolIO0",0,24,sb_to("SB","out")),
                block("qPoolSpillReload0",0,56,spill("SB","spill_b","cast")),
            ],"instr":"Pool.bin","name":"Pool.json"}),
        );
        s.set_json(
            "sg00/PE.json",
            &json!({"dma":[],"instr":"PE.bin","name":"PE.json"}),
        );
        s.set_json(
            "sg00/Activation.json",
            &json!({"act_info":"act_info.json","act_semaphore":12,"activation_function_sets":["exp_and_others"],
                    "dma":[],"instr":"Activation.bin","name":"Activation.json"}),
        );
        s.set_json(
            "sg00/DVE.json",
            &json!({"dma":[],"dve_tables":[{"control_table":"default_control_table.bin",
                    "datapath_table":"default_datapath_table.bin","opcode_table":"default_opcode_table.bin"}],
                    "instr":"DVE.bin","name":"DVE.json"}),
        );
        s.set(
            "sg00/SP.bin",
            stream(&[
                encode::record(isa::OP_SET_ORDERING_MODE),
                encode::trigger("qSPSpillReload0", 0),
                encode::trigger("qSPIO0", 0),
                encode::record(isa::OP_EVENT_SEMAPHORE),
                encode::trigger("qSPSpillReload0", 1),
            ]),
        );
        s.set(
            "sg00/Pool.bin",
            stream(&[
                encode::record(isa::OP_SET_ORDERING_MODE),
                encode::trigger("qPoolSpillReload0", 0),
                encode::trigger("qPoolIO0", 0),
                encode::record(isa::OP_NOP),
            ]),
        );
        s.set(
            "sg00/PE.bin",
            stream(&[encode::record(isa::OP_SET_ORDERING_MODE)]),
        );
        s.set(
            "sg00/Activation.bin",
            stream(&[
                encode::record(isa::OP_SET_ORDERING_MODE),
                encode::record(0x23),
                encode::record(0x21),
            ]),
        );
        s.set(
            "sg00/DVE.bin",
            stream(&[
                encode::record(isa::OP_SET_ORDERING_MODE),
                encode::record(0x46),
            ]),
        );
        s.set_json("sg00/act_info.json", &act_info());
        s.set_json("sg00/exp_and_others.json", &act_profile());
        s.set("sg00/exp_and_others_bkt.bin", vec![1; 256]);
        s.set("sg00/exp_and_others_ctrl.bin", vec![2; 128]);
        s.set("sg00/default_control_table.bin", vec![3; 2048]);
        s.set("sg00/default_datapath_table.bin", vec![4; 8192]);
        s.set("sg00/default_opcode_table.bin", vec![5; 2048]);
        let identity: Vec<u8> = (0..8192u32)
            .flat_map(|i| if i % 65 == 0 { [0x00, 0x3C] } else { [0, 0] })
            .collect();
        s.set(
            "sg00/value_sg0000_identity_1_CRSM.npy",
            npy_v1("<f2", &[128, 64, 1, 1], &identity),
        );
        s
    }

    /// A trn2 LNC-2 NEFF with static DMA, the shape of the compiler-2.21
    /// NEFFs that runtime 2.27 was captured on: [`Synth::static_sunda`]'s
    /// sg00 (IO and data queues on pool and sp, act tables, `0xC1`
    /// triggers) with trn2's four DVE tables and the EVTACCEL reservation,
    /// and an idle sg01 holding the IO variables and the DVE tables.
    pub fn static_cayman() -> Synth {
        let mut s = Synth::static_sunda();
        s.set_json(
            "neff.json",
            &neff_json(
                &[("a", "float16", &[128, 64])],
                &[("out", "float16", &[128, 64])],
                2,
                "kelf-0.json",
            ),
        );
        s.set_json(
            "kelf-0.json",
            &json!({"graphs":[{"definition":"sg00/def.json","name":"sg00"},
                              {"definition":"sg01/def.json","name":"sg01"}],
                    "version":"0.5","target":"cayman"}),
        );
        let idle = stream(&[
            encode::record(isa::OP_SET_ORDERING_MODE),
            encode::record(isa::OP_PSEUDO_BRANCH_LABEL),
        ]);
        let mut sg01 = s.json("sg00/def.json");
        sg01["var"] = json!({
            "SB": {"type":"state-buffer","var_id":0},
            "a": {"ops":[],"size":16384,"type":"input","var_id":1},
            "out": {"ops":[],"size":16384,"type":"output","var_id":2}
        });
        sg01["dma_queue"] = json!({});
        s.set_json("sg01/def.json", &sg01);
        for b in ["PE", "Activation", "Pool", "DVE", "SP"] {
            s.set_json(
                &format!("sg01/{b}.json"),
                &json!({"dma":[],"instr":format!("{b}.bin"),"name":format!("{b}.json")}),
            );
            s.set(&format!("sg01/{b}.bin"), idle.clone());
        }
        for sg in ["sg00", "sg01"] {
            s.edit(&format!("{sg}/def.json"), |d| {
                d["runtime_statebuffer_reservation"] = json!([{"base_partition":0,"offset":229368,
                    "partitions":128,"size":8,"type":"evtaccel"}]);
            });
            s.edit(&format!("{sg}/DVE.json"), |d| {
                d["dve_tables"] = json!([{"control_fast_table":"default_control_fast_table.bin",
                    "control_slow_table":"default_control_slow_table.bin",
                    "datapath_table":"default_datapath_table.bin","opcode_table":"default_opcode_table.bin"}]);
            });
            s.remove(&format!("{sg}/default_control_table.bin"));
            s.set(
                &format!("{sg}/default_control_fast_table.bin"),
                vec![1; 4096],
            );
            s.set(
                &format!("{sg}/default_control_slow_table.bin"),
                vec![2; 4096],
            );
            s.set(&format!("{sg}/default_datapath_table.bin"), vec![3; 16384]);
            s.set(&format!("{sg}/default_opcode_table.bin"), vec![4; 1024]);
        }
        s.edit("sg01/Activation.json", |a| {
            a["activation_function_sets"] = json!([]);
        });
        s
    }

    /// A trn2 LNC-2 NEFF with dynamic DMA (see the module doc).
    ///
    /// IO: inputs `q`, `k` and output `o`, all f32 `[4,16]` (256 B). sg00 has
    /// a 256-byte f32 weight `w`, a 512-byte virtual `v`, `DGETable0` with
    /// list `[2, 1, 3]` (k, q, o: first-use order), and `0xD4` records using
    /// both ADDR8 modes. sg01 is idle.
    pub fn dynamic_cayman() -> Synth {
        let mut s = Synth::new();
        s.set_json(
            "neff.json",
            &neff_json(
                &[("q", "float32", &[4, 16]), ("k", "float32", &[4, 16])],
                &[("o", "float32", &[4, 16])],
                2,
                "kelf-0.json",
            ),
        );
        s.set_json(
            "kelf-0.json",
            &json!({"graphs":[{"definition":"sg00/def.json","name":"sg00"},
                              {"definition":"sg01/def.json","name":"sg01"}],
                    "version":"0.5","target":"cayman"}),
        );
        let base_vars = json!({
            "SB": {"type":"state-buffer","var_id":0},
            "q": {"ops":[],"size":256,"type":"input","var_id":1},
            "k": {"ops":[],"size":256,"type":"input","var_id":2},
            "o": {"ops":[],"size":256,"type":"output","var_id":3},
            "w_sg0000": {"alignment":256,"fabric_path":"main","file_name":"value_sg0000_w_CRSM.npy",
                         "ops":[],"size":256,"type":"file","var_id":4}
        });
        for (sg, active) in [("sg00", true), ("sg01", false)] {
            let mut vars = base_vars.clone();
            let mut queues = json!({});
            if active {
                vars["DGETable0"] = json!({"list":[2,1,3],"type":"dge-table","var_id":6});
                vars["v_sg0000"] = json!({"backing_variable_off":0,"ops":[],"size":512,"type":"virtual","var_id":5});
                queues = json!({
                    "qPoolDynamic": {"dynamic_dma":{"SB_scratch_partition_offset":0,"SB_scratch_partition_size":16384},
                                     "fabric_path":"main","num_queues":16,"owner":"pool","semaphore_set":sems(24),"type":"dynamic"},
                    "qSPDynamicHW": {"fabric_path":"main","num_queues":16,"owner":"sp","semaphore_set":sems(8),"type":"dynamic"}
                });
            }
            let mut def = json!({
                "#rank_world_size":0, "version":"0.6", "name":"definition", "debug_info":{},
                "cc_streams":{"num_streams":0}, "neff_features":["neff_feature_vnc"],
                "runtime_event_count":12, "runtime_semaphore_count":3,
                "runtime_statebuffer_reservation":[{"base_partition":0,"offset":229368,"partitions":128,"size":8,"type":"evtaccel"}],
                "fp8_conversion_config":{"emax_fp8_e4m3":8,"emax_fp8_e5m2":15,"fp8_range_extension":true,
                                         "fp8_sis":false,"fp8_sns":false,"ocp_sat":true},
                "var": vars, "dma_queue": queues
            });
            engine_keys(&mut def);
            s.set_json(&format!("{sg}/def.json"), &def);
            for (j, b) in [
                ("PE.json", "PE.bin"),
                ("Pool.json", "Pool.bin"),
                ("SP.json", "SP.bin"),
            ] {
                s.set_json(&format!("{sg}/{j}"), &json!({"dma":[],"instr":b,"name":j}));
            }
            s.set_json(
                &format!("{sg}/Activation.json"),
                &json!({"act_info":"act_info.json","act_semaphore":12,
                        "activation_function_sets": if active { json!(["exp_and_others"]) } else { json!([]) },
                        "dma":[],"instr":"Activation.bin","name":"Activation.json"}),
            );
            s.set_json(
                &format!("{sg}/DVE.json"),
                &json!({"dma":[],"dve_tables":[{"control_fast_table":"default_control_fast_table.bin",
                        "control_slow_table":"default_control_slow_table.bin",
                        "datapath_table":"default_datapath_table.bin","opcode_table":"default_opcode_table.bin"}],
                        "instr":"DVE.bin","name":"DVE.json"}),
            );
            s.set_json(&format!("{sg}/act_info.json"), &act_info());
            s.set(
                &format!("{sg}/default_control_fast_table.bin"),
                vec![1; 4096],
            );
            s.set(
                &format!("{sg}/default_control_slow_table.bin"),
                vec![2; 4096],
            );
            s.set(&format!("{sg}/default_datapath_table.bin"), vec![3; 16384]);
            s.set(&format!("{sg}/default_opcode_table.bin"), vec![4; 1024]);
            s.set(
                &format!("{sg}/value_sg0000_w_CRSM.npy"),
                npy_v1("<f4", &[4, 16], &[0u8; 256]),
            );
            let idle = stream(&[
                encode::record(isa::OP_SET_ORDERING_MODE),
                encode::record(isa::OP_PSEUDO_BRANCH_LABEL),
            ]);
            for b in ["PE.bin", "Activation.bin", "Pool.bin", "DVE.bin", "SP.bin"] {
                s.set(&format!("{sg}/{b}"), idle.clone());
            }
            if active {
                let var = |id: u16, offset: u32| Addr8 {
                    offset,
                    id,
                    reserved: 0,
                    mode: isa::ADDR8_STATIC_VAR,
                };
                let dge = |id: u16, offset: u32| Addr8 {
                    offset,
                    id,
                    reserved: 0,
                    mode: isa::ADDR8_DGE_INDEX,
                };
                let head = [
                    encode::record(isa::OP_SET_ORDERING_MODE),
                    encode::record(isa::OP_PSEUDO_BRANCH_LABEL),
                ];
                let mut sp = head.to_vec();
                sp.push(encode::dma_direct2d(dge(0, 0), var(0, 0x100)));
                sp.push(encode::dma_direct2d(dge(1, 0), var(0, 0x200)));
                sp.push(encode::dma_direct2d(var(4, 0), var(0, 0x300)));
                s.set("sg00/SP.bin", stream(&sp));
                let mut pool = head.to_vec();
                pool.push(encode::dma_direct2d(var(0, 0x400), var(5, 256)));
                pool.push(encode::dma_direct2d(var(0, 0x400), dge(2, 0xFC)));
                pool.push(encode::record(isa::OP_NOP));
                s.set("sg00/Pool.bin", stream(&pool));
                let mut pe = head.to_vec();
                pe.push(encode::record(0x01));
                pe.push(encode::record(0x02));
                s.set("sg00/PE.bin", stream(&pe));
                s.set_json("sg00/exp_and_others.json", &act_profile());
                s.set("sg00/exp_and_others_bkt.bin", vec![1; 256]);
                s.set("sg00/exp_and_others_ctrl.bin", vec![2; 128]);
            }
        }
        s
    }
}

/// A non-zero byte pattern of `len` bytes (period 251) for synthetic weights:
/// it survives the sparse device's zero-page skip and compresses well.
pub fn weight_pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8 | 1).collect()
}

impl Synth {
    /// A trn2 NEFF with `n` subgraphs: [`Synth::dynamic_cayman`]'s active
    /// sg00 and `n - 1` copies of its idle sg01, a kelf listing all of them,
    /// one output head per graph. Write it with [`lnc_writer`] for an LNC of
    /// `n`.
    pub fn dynamic_cayman_n(n: usize) -> Synth {
        assert!(n >= 1);
        let mut s = Synth::dynamic_cayman();
        let idle: Vec<(String, Vec<u8>)> = s
            .members
            .iter()
            .filter_map(|(k, v)| k.strip_prefix("sg01/").map(|r| (r.to_string(), v.clone())))
            .collect();
        s.members.retain(|k, _| !k.starts_with("sg01/"));
        let sg = |i: usize| format!("sg{i:02}");
        for i in 1..n {
            for (rest, v) in &idle {
                s.set(&format!("{}/{rest}", sg(i)), v.clone());
            }
        }
        let graphs: Vec<Value> = (0..n)
            .map(|i| json!({"definition": format!("{}/def.json", sg(i)), "name": sg(i)}))
            .collect();
        s.edit("kelf-0.json", |v| v["graphs"] = json!(graphs));
        s.set_json(
            "neff.json",
            &neff_json(
                &[("q", "float32", &[4, 16]), ("k", "float32", &[4, 16])],
                &[("o", "float32", &[4, 16])],
                n,
                "kelf-0.json",
            ),
        );
        s
    }

    /// [`Synth::dynamic_cayman_n`] with an f32 weight `w_sg0000` of
    /// `weight_bytes` (a multiple of 4) non-zero bytes in every graph.
    pub fn cayman_weights(subgraphs: usize, weight_bytes: u64) -> Synth {
        let mut s = Synth::dynamic_cayman_n(subgraphs);
        let weight = npy_v1(
            "<f4",
            &[weight_bytes / 4],
            &weight_pattern(weight_bytes as usize),
        );
        for g in 0..subgraphs {
            s.edit(&format!("sg{g:02}/def.json"), |v| {
                v["var"]["w_sg0000"]["size"] = json!(weight_bytes);
            });
            s.set(&format!("sg{g:02}/value_sg0000_w_CRSM.npy"), weight.clone());
        }
        s
    }
}

/// A one-subgraph trn1 NEFF named `name` whose two virtual variables are
/// `vars`, each `(backing_variable_off, size)`: the writer's static NEFF
/// with its spill variables resized, for the device-memory documentation's
/// two-NEFF scratchpad example (`spill_a` is var 4, `spill_b` var 5).
pub fn scratchpad_example(name: &str, vars: [(u64, u64); 2]) -> Vec<u8> {
    let mut s = Synth::static_sunda();
    s.edit("sg00/def.json", |d| {
        for (key, (off, size)) in ["spill_a", "spill_b"].into_iter().zip(vars) {
            d["var"][key]["backing_variable_off"] = serde_json::json!(off);
            d["var"][key]["size"] = serde_json::json!(size);
        }
    });
    let mut header = Producer::V2_18.default_header();
    header.set_name(name);
    NeffWriter::with_header(Producer::V2_18, header).write(&s.member_list())
}

/// A one-subgraph trn2 NEFF named `name` whose header declares no LNC (it
/// loads at either), with a private buffer (`tmp-buf`) of `tmp` bytes
/// (none for 0) beside [`Synth::dynamic_cayman`]'s small weights, and `edit`
/// applied to its def.json: what deployments of several NEFFs are planned
/// with, a buffer standing for gigabytes of memory without gigabytes of file.
pub fn any_lnc_cayman(name: &str, tmp: u64, edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut s = Synth::dynamic_cayman_n(1);
    s.edit("sg00/def.json", |v| {
        if tmp > 0 {
            v["var"]["big"] = json!({"ops":[],"size":tmp,"type":"tmp-buf","var_id":7});
        }
        edit(v);
    });
    let mut h = Producer::V2_21.default_header();
    h.feature_bits &= !neffld::container::header::FEATURE_VNC;
    h.set_name(name);
    h.uuid = [0; 16];
    let n = name.len().min(16);
    h.uuid[..n].copy_from_slice(&name.as_bytes()[..n]);
    NeffWriter::with_header(Producer::V2_21, h).write(&s.member_list())
}

/// `len` incompressible bytes (xorshift64): weights whose gzip is as large
/// as they are, for payloads of a given window size.
pub fn noise(len: usize) -> Vec<u8> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut out: Vec<u8> = (0..len.div_ceil(8))
        .flat_map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()
        })
        .collect();
    out.truncate(len);
    out
}

/// A fresh directory of this test process's, one per call (the tests of a
/// harness share its process, so the process id alone does not set two
/// apart). Removed when dropped, unless the test is failing: what it wrote
/// is then left to look at.
pub struct ScratchDir(std::path::PathBuf);

impl ScratchDir {
    /// A new empty directory named after `tag`.
    pub fn new(tag: &str) -> ScratchDir {
        static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let d = std::env::temp_dir().join(format!("neffld-{tag}-{}-{call}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        ScratchDir(d)
    }
}

impl std::ops::Deref for ScratchDir {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl AsRef<std::path::Path> for ScratchDir {
    fn as_ref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Set in a child process to the name of the one test it runs ([`Alone`]).
const ALONE: &str = "NEFFLD_TEST_ALONE";

/// One test of the running test binary, run again alone in a child process
/// of its own: for a test of what is the whole process's (its resident
/// memory, libnrt's state, an address-space limit, the environment), which
/// must not share its process with the harness's other tests.
///
/// The test calls [`Alone::is_child`] first: in the parent it starts the
/// child ([`Alone::passed`] or [`Alone::output`]) and checks what the child
/// said; in the child it runs the body.
pub struct Alone {
    name: String,
    envs: Vec<(std::ffi::OsString, Option<std::ffi::OsString>)>,
    address_space_kib: Option<u64>,
}

impl Alone {
    /// The test `test` of the module `module` (its `module_path!()`, whose
    /// first segment is the test binary's crate and not in test names).
    pub fn new(module: &str, test: &str) -> Alone {
        let name = match module.split_once("::") {
            Some((_, m)) => format!("{m}::{test}"),
            None => test.to_string(),
        };
        Alone {
            name,
            envs: Vec::new(),
            address_space_kib: None,
        }
    }

    /// This process is the child that runs the test.
    pub fn is_child(&self) -> bool {
        std::env::var(ALONE).as_deref() == Ok(self.name.as_str())
    }

    /// Sets a variable in the child's environment.
    pub fn env(
        mut self,
        key: impl AsRef<std::ffi::OsStr>,
        value: impl AsRef<std::ffi::OsStr>,
    ) -> Alone {
        self.envs
            .push((key.as_ref().to_owned(), Some(value.as_ref().to_owned())));
        self
    }

    /// Removes a variable from the child's environment.
    pub fn env_remove(mut self, key: impl AsRef<std::ffi::OsStr>) -> Alone {
        self.envs.push((key.as_ref().to_owned(), None));
        self
    }

    /// Runs the child under an address-space limit of `kib` KiB
    /// (`ulimit -v`).
    pub fn address_space(mut self, kib: u64) -> Alone {
        self.address_space_kib = Some(kib);
        self
    }

    /// The command that runs the child, for a caller that starts it
    /// itself ([`Alone::output`] runs it).
    pub fn command(&self) -> std::process::Command {
        let exe = std::env::current_exe().expect("the test binary's path");
        let mut cmd = match self.address_space_kib {
            None => std::process::Command::new(&exe),
            Some(kib) => {
                let mut sh = std::process::Command::new("sh");
                sh.arg("-c")
                    .arg(format!("ulimit -v {kib} && exec \"$0\" \"$@\""))
                    .arg(&exe);
                sh
            }
        };
        cmd.args([
            self.name.as_str(),
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ALONE, &self.name);
        for (k, v) in &self.envs {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        cmd
    }

    /// Runs the child and returns what it printed and how it ended.
    pub fn output(&self) -> std::process::Output {
        self.command().output().expect("the test binary runs again")
    }

    /// Runs the child and checks that it ran the test and passed; returns
    /// what it printed.
    pub fn passed(&self) -> std::process::Output {
        let out = self.output();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "{}, alone in its own process, failed ({}):\n{stdout}\n{stderr}",
            self.name,
            out.status
        );
        // A name that matched no test would pass having run nothing.
        assert!(
            stdout.contains("test result: ok. 1 passed"),
            "{}: the child ran no test:\n{stdout}",
            self.name
        );
        out
    }
}

/// Runs `test` of `module` alone in a child process and checks that it
/// passed: `true` in the parent, which then has nothing left to do, and
/// `false` in the child, which runs the body ([`Alone`]).
pub fn ran_alone(module: &str, test: &str) -> bool {
    let alone = Alone::new(module, test);
    if alone.is_child() {
        return false;
    }
    alone.passed();
    true
}

/// A new empty file open for reading and writing, already unlinked (it is
/// gone once closed), for tests that map or truncate a real file.
pub fn scratch_file(tag: &str) -> std::fs::File {
    let path = std::env::temp_dir().join(format!("neffld-{tag}-{}", std::process::id()));
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let _ = std::fs::remove_file(&path);
    f
}

/// A 2.21-family writer whose header declares logical-core size `lnc`.
pub fn lnc_writer(lnc: u32) -> NeffWriter {
    let mut h = Producer::V2_21.default_header();
    h.vnc_size = lnc;
    NeffWriter::with_header(Producer::V2_21, h)
}

/// The real fixtures' folder: the copies vendored under `testdata/fixtures`
/// (licence notices beside them), so a fresh clone tests on real NEFFs.
pub const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/fixtures");

/// The hardware captures of the kfusion fixtures, vendored under
/// `testdata/captures` (see its README for provenance).
pub const CAPTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/captures");

/// One real fixture's bytes; panics naming the file it could not read.
pub fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{FIXTURES}/{name}");
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every real fixture (`*.neff`) with its bytes, sorted by name; panics
/// when the vendored folder cannot be read.
pub fn real_fixtures() -> Vec<(String, Vec<u8>)> {
    let dir = std::fs::read_dir(FIXTURES).unwrap_or_else(|e| panic!("{FIXTURES}: {e}"));
    let mut v: Vec<(String, Vec<u8>)> = dir
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "neff"))
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let name = p.file_name().unwrap_or_default().to_string_lossy().into();
            (name, bytes)
        })
        .collect();
    v.sort();
    assert_eq!(v.len(), 12, "{FIXTURES} holds the 12 real fixtures");
    v
}

/// Members the `manifest` fuzz target can replace, indexed by its flag
/// byte; the seed writer (`examples/fuzz_seeds.rs`) must use the same order.
pub const FUZZ_MANIFEST_MEMBERS: [&str; 8] = [
    "neff.json",
    "kelf-0.json",
    "sg00/def.json",
    "sg00/PE.json",
    "sg00/SP.json",
    "sg00/act_info.json",
    "sg00/exp_and_others.json",
    "sg01/def.json",
];

/// The body of the `capture` fuzz target: reads `input` as an NTFF capture;
/// a failure must carry a message and the invalid-input status; a capture
/// that reads, written again as version 6, must read back equal. Returns the
/// error of a failed read.
pub fn fuzz_capture(input: &[u8]) -> Option<neffld::capture::CaptureError> {
    use neffld::capture::{self, writer};

    match capture::read(input) {
        Err(e) => {
            assert!(!e.to_string().is_empty());
            assert_eq!(e.status(), neffld::NrtStatus::Invalid);
            Some(e)
        }
        Ok(mut c) => {
            c.version = 6;
            let bytes = writer::write(&c).expect("a read capture is writable");
            let back = capture::read(&bytes).expect("a written capture reads");
            assert_eq!(back, c, "version-6 round trip");
            None
        }
    }
}

/// The body of the `deployment` fuzz target, shared with the replay of
/// kept inputs: the input as a deployment file, and each of its lines as
/// the command line's short forms (LOAD, `--tensor`, `--unload`, `--env`,
/// a size, a core list). A mistake must name where and what; a file that
/// parses expands to at most [`neffld::plan::deployment::MAX_STEPS`] steps. Returns
/// the deployment file's error, if any.
pub fn fuzz_deployment(input: &[u8]) -> Option<neffld::plan::DeploymentError> {
    use neffld::plan::{self, DeploymentError};
    let check = |e: &DeploymentError| {
        assert!(!e.place.is_empty() && !e.what.is_empty(), "{e:?}");
    };
    let text = String::from_utf8_lossy(input);
    for line in text.lines().take(64) {
        for r in [
            plan::parse_load(line),
            plan::parse_tensor(line),
            plan::parse_unload(line),
        ] {
            match r {
                Ok(steps) => assert!(steps.len() <= 1 << 16, "{line}"),
                Err(e) => check(&e),
            }
        }
        if let Err(e) = plan::parse_env(line) {
            check(&e);
        }
        if let Err(e) = plan::parse_size(line) {
            assert!(!e.is_empty());
        }
        if let Ok(cores) = plan::parse_cores(line) {
            assert!(cores.len() <= 1 << 16, "{line}");
        }
    }
    // The whole file under a small ceiling: what parses stays within it,
    // and a refusal for the ceiling names its variable (each step is
    // counted before it is expanded, so this is as quick as the parse).
    let small = 1 + usize::from(input.first().copied().unwrap_or(0)) * 4;
    let mut budget = plan::StepBudget::new(small);
    match plan::parse_toml_within(&text, "fuzz.toml", std::path::Path::new("."), &mut budget) {
        Ok(d) => assert!(d.steps.len() <= small, "{} > {small}", d.steps.len()),
        Err(e) => {
            check(&e);
            if e.what.contains("would expand to more than") {
                assert!(e.what.contains("NEFFLD_MAX_STEPS"), "{e}");
            }
        }
    }
    match plan::parse_toml(&text, "fuzz.toml", std::path::Path::new(".")) {
        Ok(d) => {
            assert!(d.steps.len() <= plan::deployment::MAX_STEPS);
            None
        }
        Err(e) => {
            check(&e);
            Some(e)
        }
    }
}

/// The body of the `dump_names` fuzz target: the input as a subgraph's
/// name (the kelf json's graph name, which the runtime takes as any
/// label), made into the file names `load --dump` writes
/// (`<subgraph>_<engine>.bin`) and written by the dump's policy
/// ([`neffld::tree::plain_name`], [`neffld::tree::Dest::write_plain`]) into
/// a destination beside a folder that must stay empty. Checks: a name the
/// policy passes is one file in the destination itself, holding the bytes
/// written; a refused name writes nothing; nothing is ever written outside
/// the destination. Returns whether the names were written.
pub fn fuzz_dump_names(input: &[u8]) -> bool {
    use std::os::unix::ffi::OsStrExt;

    use neffld::tree::{plain_name, Dest};

    let scratch = std::env::temp_dir().join(format!("neffld-fuzz-dump-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let (dest_path, outside) = (scratch.join("a/b/dump"), scratch.join("outside"));
    std::fs::create_dir_all(&outside).expect("scratch");
    let dest = Dest::create(&dest_path).expect("scratch");
    let mut written = Vec::new();
    for engine in ["pe", "act", "pool", "dve", "sp"] {
        let name = [input, b"_", engine.as_bytes(), b".bin"].concat();
        let passed = plain_name(&name).is_ok();
        let wrote = dest.write_plain(&name, engine.as_bytes());
        assert_eq!(passed, wrote.is_ok(), "{name:?}: {wrote:?}");
        if passed {
            written.push(name);
        }
    }
    // Nothing beside or above the destination, nothing beneath it but the
    // files written, each under its exact name.
    let listed = |d: &std::path::Path| -> Vec<Vec<u8>> {
        let mut v: Vec<Vec<u8>> = std::fs::read_dir(d)
            .expect("scratch")
            .map(|e| e.expect("scratch").file_name().as_bytes().to_vec())
            .collect();
        v.sort();
        v
    };
    assert_eq!(listed(&scratch), vec![b"a".to_vec(), b"outside".to_vec()]);
    assert_eq!(listed(&scratch.join("a")), vec![b"b".to_vec()]);
    assert_eq!(listed(&scratch.join("a/b")), vec![b"dump".to_vec()]);
    assert!(listed(&outside).is_empty());
    let mut expected = written.clone();
    expected.sort();
    expected.dedup();
    assert_eq!(listed(&dest_path), expected);
    let _ = std::fs::remove_dir_all(&scratch);
    !written.is_empty()
}

/// A field of this process's `/proc/self/status` in KiB (`VmRSS`,
/// `VmHWM`), 0 where there is none.
pub fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            let rest = l.strip_prefix(field)?.strip_prefix(':')?;
            rest.trim().trim_end_matches(" kB").trim().parse().ok()
        })
        .unwrap_or(0)
}

/// Live allocations of `dev` other than those a started runtime holds for
/// itself (runtime-owned, except the shared scratchpad pages, which the
/// models on a core bring and take): with no model loaded and no load in
/// progress, a runtime that leaks nothing leaves none.
pub fn beyond_start(dev: &neffld::device::Device) -> Vec<neffld::device::LiveAlloc> {
    use neffld::device::{MemUsage, Owner};
    dev.live_allocations()
        .into_iter()
        .filter(|a| a.owner != Owner::Runtime || a.usage == MemUsage::Scratchpad)
        .collect()
}

/// The runtime line the `load` fuzz target's flag byte names: bits 3 to 7,
/// their value modulo the number of lines indexing
/// [`neffld::line::RuntimeLine::ALL`], so every line is reached (up to 32).
pub fn runtime_line_of_flag(flag: u8) -> neffld::line::RuntimeLine {
    use neffld::line::RuntimeLine;
    RuntimeLine::ALL[usize::from(flag >> 3) % RuntimeLine::ALL.len()]
}

/// The `load` fuzz target's body, shared with the replay of kept inputs.
///
/// The first byte is a flag byte (bit 0: trn1 instead of trn2; bit 1: verify
/// the payload hash; bit 2: allow legacy NEFFs; bits 3 to 7: the runtime
/// line, [`runtime_line_of_flag`]), the rest is the NEFF. It
/// loads on a `NullDevice` with a small inflate ceiling and the staged-model
/// validator on, unloads, and checks that the device and the registry are
/// empty either way. Returns the status of a failed load, `None` when the
/// input loaded (or is empty).
pub fn fuzz_load(input: &[u8]) -> Option<neffld::NrtStatus> {
    use std::sync::Arc;

    use neffld::api::{LoadError, Runtime};
    use neffld::config::{DeviceKind, Libnrt, Loader, RuntimeConfig, Topology};
    use neffld::device::NullDevice;
    use neffld::Arch;

    /// Keeps each execution bounded in memory.
    const MAX_INFLATED: u64 = 8 << 20;

    let (&flag, neff) = input.split_first()?;
    let arch = if flag & 1 == 1 {
        Arch::Sunda
    } else {
        Arch::Cayman
    };
    let dev = Arc::new(NullDevice::new(Geometry::for_arch(arch)));
    let cfg = RuntimeConfig {
        topology: Topology {
            arch,
            ..Default::default()
        },
        libnrt: Libnrt {
            line: Some(runtime_line_of_flag(flag)),
            validate_hash: flag & 2 != 0,
            allow_legacy_neff: flag & 4 != 0,
            ..Default::default()
        },
        loader: Loader {
            device: DeviceKind::Null,
            max_inflated: Some(MAX_INFLATED),
            check: true,
            ..Default::default()
        },
    };
    let rt = Runtime::with_device(cfg, dev.clone()).expect("runtime");
    let status = match rt.load(neff, None) {
        Ok(m) => {
            assert_eq!(rt.loaded_models(), 1);
            rt.unload(&m).expect("unload of a loaded model");
            None
        }
        Err(e) => {
            // A validator finding is a neffld bug, never a bad NEFF.
            assert!(!matches!(e, LoadError::Validation(_)), "{e}");
            assert!(!e.to_string().is_empty());
            Some(e.status())
        }
    };
    assert_eq!(beyond_start(&*dev), []);
    assert_eq!(rt.loaded_models(), 0);
    status
}

/// The `compare` fuzz target's body: an arbitrary capture held against one
/// real load (kfusion fused_attention's, staged once per process). Every
/// input either fails to read as a capture, or compares without a panic
/// and consistently: an image agrees only with its address the same or
/// raced, only a racing engine races, and the counts stay within the
/// images. Returns whether the input read as a capture.
pub fn fuzz_compare(input: &[u8]) -> bool {
    use std::collections::BTreeMap;
    use std::sync::OnceLock;

    use neffld::line::RACING_ENGINES;
    use neffld::manifest::engine::EngineType;
    use neffld::report::compare::{compare, neff_streams, AddressMatch};
    use neffld::report::staged::StagedCore;

    type Streams = BTreeMap<(String, EngineType), Vec<u8>>;
    static OURS: OnceLock<(Vec<StagedCore>, Streams)> = OnceLock::new();
    let (ours, streams) = OURS.get_or_init(|| {
        let stem = "kfusion__fused_attention__fused";
        let neff = fixture(&format!("{stem}.neff"));
        let cap = std::fs::read(format!("{CAPTURES}/{stem}.ntff")).expect("the capture");
        let cap = neffld::capture::read(&cap).expect("a real capture reads");
        let (_, ours) =
            neffld::report::compare::load_and_compare(&neff, &cap).expect("the pair compares");
        let opened = container::open(&neff, &OpenOptions::default()).expect("opens");
        let parsed = neffld::parse::parse(
            &opened,
            &neffld::manifest::ParseOptions::new(neffld::Arch::Cayman, 2),
        )
        .expect("parses");
        let streams = neff_streams(&opened, &parsed)
            .into_iter()
            .map(|(k, v)| (k, v.to_vec()))
            .collect();
        (ours.cores, streams)
    });
    let Ok(capture) = neffld::capture::read(input) else {
        return false;
    };
    let borrowed = streams.iter().map(|(k, v)| (k.clone(), &v[..])).collect();
    let cmp = compare(&capture, ours, &borrowed);
    for core in &cmp.cores {
        for i in &core.images {
            assert!(!i.agrees() || i.address != AddressMatch::Differs, "{i:?}");
            assert!(
                i.address != AddressMatch::Raced || RACING_ENGINES.contains(&i.engine),
                "{i:?}"
            );
        }
    }
    let t = cmp.tally();
    assert!(t.addresses_equal + t.addresses_raced <= t.images);
    assert!(t.records_equal <= t.images && t.rows_equal <= t.rows);
    true
}

/// The `tree` fuzz target's body: a directory tree described by the input
/// (files, directories, symbolic links, FIFOs) packed by the one
/// file-system policy ([`neffld::tree`]), written as a NEFF, read back and
/// extracted; then every name of the input extracted as it is into a
/// destination holding a link to a directory outside it.
///
/// Input: a flag byte (bit 0: follow symbolic links), then entries of a
/// kind byte (0 file, 1 directory, 2 symbolic link, 3 FIFO), a name length
/// byte, the name, a data length byte and the data (a link's target).
/// Checks: a tree is packed only when every entry the walk meets is a
/// regular file or a directory (links only when followed); the members are
/// the files with their exact names and bytes; extracting them writes each
/// back; no name, however hostile, writes anything outside the destination.
/// Returns whether the tree packed.
pub fn fuzz_tree(input: &[u8]) -> bool {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    use neffld::tree::{read_tree, Dest};

    let Some((&flag, mut rest)) = input.split_first() else {
        return false;
    };
    let follow = flag & 1 != 0;
    let scratch = std::env::temp_dir().join(format!("neffld-fuzz-tree-{}", std::process::id()));
    let (root, dest, outside) = (
        scratch.join("tree"),
        scratch.join("dest"),
        scratch.join("outside"),
    );
    let _ = std::fs::remove_dir_all(&scratch);
    for d in [&root, &outside] {
        std::fs::create_dir_all(d).expect("scratch");
    }
    let mut raw_names = Vec::new();
    let mut specials = false;
    while let [kind, len, tail @ ..] = rest {
        let (name, tail) = tail.split_at((*len as usize).min(tail.len()));
        let Some((&dlen, tail)) = tail.split_first() else {
            break;
        };
        let (data, tail) = tail.split_at((dlen as usize).min(tail.len()));
        rest = tail;
        raw_names.push(name.to_vec());
        // The entry's own path, kept inside the tree.
        let parts: Vec<&[u8]> = name
            .split(|&b| b == b'/')
            .filter(|p| !p.is_empty() && *p != b"." && *p != b"..")
            .collect();
        let Some((leaf, dirs)) = parts.split_last() else {
            continue;
        };
        let mut at = root.clone();
        for d in dirs {
            at.push(OsStr::from_bytes(
                &d.iter().map(|&b| b.max(1)).collect::<Vec<_>>(),
            ));
        }
        let _ = std::fs::create_dir_all(&at);
        at.push(OsStr::from_bytes(
            &leaf.iter().map(|&b| b.max(1)).collect::<Vec<_>>(),
        ));
        let made = match kind % 4 {
            // Non-blocking: the path may already be a FIFO (or lead to one).
            0 => {
                use std::io::Write;
                use std::os::unix::fs::OpenOptionsExt;
                std::fs::OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(&at)
                    .and_then(|mut f| f.write_all(data))
                    .is_ok()
            }
            1 => std::fs::create_dir(&at).is_ok(),
            2 => {
                // A target inside the tree (no root, no `..`), so that a
                // followed link never reads the rest of the machine; `.` and
                // links to links still make loops.
                let target: Vec<u8> = data
                    .split(|&b| b == b'/')
                    .filter(|p| !p.is_empty() && *p != b"..")
                    .collect::<Vec<_>>()
                    .join(&b'/')
                    .iter()
                    .map(|&b| b.max(1))
                    .collect();
                !target.is_empty()
                    && std::os::unix::fs::symlink(OsStr::from_bytes(&target), &at).is_ok()
            }
            _ => std::ffi::CString::new(at.as_os_str().as_bytes())
                // SAFETY: a NUL-terminated path, alive for the call.
                .is_ok_and(|c| unsafe { libc::mkfifo(c.as_ptr(), 0o600) } == 0),
        };
        specials |= made && (kind % 4 == 3 || (kind % 4 == 2 && !follow));
    }
    let packed = read_tree(&root, follow);
    if let Ok(files) = &packed {
        assert!(!specials || follow, "a special entry was packed");
        for (name, bytes) in files {
            let path = root.join(OsStr::from_bytes(name));
            if !follow {
                let meta = std::fs::symlink_metadata(&path).expect("a packed file exists");
                assert!(meta.is_file(), "{path:?}");
            }
            assert_eq!(&std::fs::read(&path).expect("readable"), bytes);
        }
        let members: Vec<(&[u8], &[u8])> = files
            .iter()
            .map(|(n, b)| (n.as_slice(), b.as_slice()))
            .collect();
        let neff = NeffWriter::new(Producer::Pkg1).write(&members);
        let opened = container::open(&neff, &OpenOptions::default()).expect("a packed tree opens");
        let mut back: Vec<(&[u8], &[u8])> = opened
            .archive()
            .members()
            .iter()
            .map(|m| (m.name_bytes(), opened.archive().body(m)))
            .collect();
        back.sort();
        let mut want = members.clone();
        want.sort();
        assert_eq!(back, want, "names and bytes survive the container");
        let d = Dest::create(&dest).expect("destination");
        for (name, bytes) in &members {
            d.write(name, bytes).expect("a tree's own name is written");
            assert_eq!(
                &std::fs::read(dest.join(OsStr::from_bytes(name))).expect("written"),
                bytes
            );
        }
    }
    // Hostile names, into a destination with a link leading outside it.
    let _ = std::fs::remove_dir_all(&dest);
    let d = Dest::create(&dest).expect("destination");
    std::os::unix::fs::symlink(&outside, dest.join("out")).expect("link");
    for name in raw_names {
        for prefix in [&b""[..], b"out/", b"../", b"/"] {
            let _ = d.write(&[prefix, &name].concat(), b"z");
        }
    }
    assert!(
        std::fs::read_dir(&outside)
            .expect("outside")
            .next()
            .is_none(),
        "something was written outside the destination"
    );
    let _ = std::fs::remove_dir_all(&scratch);
    packed.is_ok()
}

/// The `tar` fuzz target's body: the tar walker over arbitrary decoded
/// bytes; every listed member can be looked up by its exact name, and by
/// its text when that is its name (UTF-8). Returns the member count of a
/// tar that walks.
pub fn fuzz_tar(input: &[u8]) -> Option<usize> {
    let a = neffld::container::Archive::from_tar(input.to_vec()).ok()?;
    for m in a.members() {
        let body = a.body(m);
        assert_eq!(
            a.get_exact(m.name_bytes()).map(<[u8]>::len),
            Some(body.len())
        );
        if m.raw_name.is_none() {
            assert_eq!(a.get(&m.name).map(<[u8]>::len), Some(body.len()));
        }
    }
    Some(a.len())
}

/// Bytes a runtime of `line` takes at start on each logical core beyond
/// the captured rows its line carries over: its row's start-up deltas
/// (2.35's reservation for DMA profiling), all counted per logical core.
/// What a plan under `line` holds more than under a line without them.
pub fn reserved_per_logical_core(line: neffld::RuntimeLine) -> u64 {
    line.facts()
        .start
        .iter()
        .map(|d| {
            assert_eq!(
                d.per,
                neffld::lines::Per::LogicalCore,
                "{line}: {} is not per logical core; count it per physical core",
                d.what
            );
            d.bytes
        })
        .sum()
}
