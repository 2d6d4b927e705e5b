//! One test per parse-side reject row (parse.md §9 rows 19–63, plus the
//! KBIN-build rejects of stage.md §14): each damages a synthetic NEFF in one
//! way and asserts the status and a message fragment.

use neffld::container::writer::Producer;
use neffld::kbin::isa::{self, encode, Addr8};
use neffld::parse::{self, ParseOptions};
use neffld::Arch;
use neffld_testkit::{npy_v1, stream, Synth};
use serde_json::{json, Value};

enum Base {
    Sunda,
    Cayman,
}

fn run(base: Base, edit: impl FnOnce(&mut Synth), opts: Option<ParseOptions>) -> String {
    let (mut s, producer, default_opts) = match base {
        Base::Sunda => (
            Synth::static_sunda(),
            Producer::V2_18,
            ParseOptions::new(Arch::Sunda, 1),
        ),
        Base::Cayman => (
            Synth::dynamic_cayman(),
            Producer::V2_21,
            ParseOptions::new(Arch::Cayman, 2),
        ),
    };
    edit(&mut s);
    let neff = s.open(producer);
    let e = match parse::parse(&neff, &opts.unwrap_or(default_opts)) {
        Ok(_) => panic!("expected a reject"),
        Err(e) => e,
    };
    assert_eq!(e.status().code(), 2, "{e}");
    e.to_string()
}

macro_rules! reject {
    ($name:ident, $base:ident, $edit:expr, $frag:expr) => {
        #[test]
        fn $name() {
            let msg = run(Base::$base, $edit, None);
            assert!(msg.contains($frag), "message was: {msg}");
        }
    };
}

fn def(s: &mut Synth, f: impl FnOnce(&mut Value)) {
    s.edit("sg00/def.json", f);
}

fn var(s: &mut Synth, name: &str, f: impl FnOnce(&mut Value)) {
    s.edit("sg00/def.json", |v| f(&mut v["var"][name]));
}

fn neffj(s: &mut Synth, f: impl FnOnce(&mut Value)) {
    s.edit("neff.json", f);
}

fn remove(v: &mut Value, key: &str) {
    if let Some(o) = v.as_object_mut() {
        o.remove(key);
    }
}

/// The first descriptor of the block at `index` of `engine_json`.
fn desc(s: &mut Synth, engine_json: &str, index: usize, f: impl FnOnce(&mut Value)) {
    s.edit(engine_json, |v| f(&mut v["dma"][index]["desc"][0]));
}

fn ucode(s: &mut Synth, entry: Value) {
    s.set("sg00/gpsimd.elf", vec![0x7F, b'E', b'L', b'F']);
    def(s, |v| v["ucode_lib"] = json!([entry]));
}

fn lib(version: &str) -> Value {
    json!({"library":"gpsimd.elf","ulib_to_ucode_version":version,"opcode":1,"cpu_id":0,"total_cpus":8,
           "functions":[{"name":"f","opcode":1,"sub_opcode":0}]})
}

// ---- neff.json (rows 19–29) --------------------------------------------------
reject!(
    row19_no_neff_json,
    Sunda,
    |s| {
        s.remove("neff.json");
    },
    "neff.json is missing"
);
reject!(
    row20_duplicate_key,
    Sunda,
    |s| {
        s.set(
        "kelf-0.json",
        br#"{"graphs":[{"definition":"sg00/def.json","name":"sg00"}],"version":"0.5","version":"0.5","target":"sunda"}"#.to_vec()
    )
    },
    "duplicate key version in kelf-0.json"
);
reject!(
    row20_duplicate_var_name,
    Sunda,
    |s| {
        let text = String::from_utf8(s.members["sg00/def.json"].clone()).unwrap();
        let dup = text.replacen("\"spill_b\"", "\"spill_a\"", 1);
        s.set("sg00/def.json", dup.into_bytes());
    },
    "duplicate key spill_a in sg00/def.json"
);
reject!(
    row20_invalid_json,
    Sunda,
    |s| s.set("neff.json", b"{\"nodes\":".to_vec()),
    "invalid JSON in neff.json"
);
reject!(
    row21_missing_heads,
    Sunda,
    |s| neffj(s, |v| remove(v, "heads")),
    "Missing required fields in NEFF JSON: neff.json has no heads"
);
reject!(
    row22_missing_dltype,
    Sunda,
    |s| neffj(s, |v| remove(&mut v["attrs"], "dltype")),
    "Missing dltype or shape"
);
reject!(
    row23_shape_not_array,
    Sunda,
    |s| neffj(s, |v| v["attrs"]["shape"] = json!("x")),
    "Invalid shape data format"
);
reject!(
    row23_dltype_without_list,
    Sunda,
    |s| neffj(s, |v| v["attrs"]["dltype"] = json!(["list_str"])),
    "Invalid dltype data format"
);
reject!(
    row24_arg_node_outside_nodes,
    Sunda,
    |s| neffj(s, |v| v["arg_nodes"] = json!([7])),
    "Node index 7 out of bounds"
);
reject!(
    row24_head_node_outside_nodes,
    Sunda,
    |s| neffj(s, |v| v["heads"] = json!([[9, 0, 0]])),
    "Output node ID 9 out of bounds"
);
reject!(
    row24_eid_outside_dltypes,
    Sunda,
    |s| neffj(s, |v| v["attrs"]["dltype"][1] = json!(["float16"])),
    "EID 1 out of bounds for dtypes/shapes"
);
reject!(
    row24_index_outside_row_ptr,
    Sunda,
    |s| neffj(s, |v| v["node_row_ptr"] = json!([0])),
    "out of bounds in neff.json: node_row_ptr"
);
reject!(
    row25_short_head,
    Sunda,
    |s| neffj(s, |v| v["heads"] = json!([[1]])),
    "Invalid head entry 0"
);
reject!(
    row25_out_idx_outside_output_names,
    Sunda,
    |s| neffj(s, |v| v["heads"] = json!([[1, 4, 0]])),
    "Invalid head entry 0"
);
reject!(
    row26_too_many_dims,
    Sunda,
    |s| neffj(s, |v| v["attrs"]["shape"][1][0] = json!(vec![1; 33])),
    "Too many dimensions (33)"
);
reject!(
    row27_negative_dim,
    Sunda,
    |s| neffj(s, |v| v["attrs"]["shape"][1][0] = json!([-1, 2])),
    "Invalid shape for a"
);
reject!(
    row27_dim_above_u32,
    Sunda,
    |s| neffj(s, |v| v["attrs"]["shape"][1][0] = json!([4294967296u64])),
    "Invalid shape for a"
);
reject!(
    row27_size_overflow,
    Sunda,
    |s| neffj(s, |v| v["attrs"]["shape"][1][0] =
        json!([4294967295u64, 4294967295u64, 4294967295u64])),
    "overflows u64"
);
reject!(
    row28_no_kelf_node,
    Sunda,
    |s| neffj(s, |v| v["nodes"][1]["attrs"]["func_name"] = json!("tvm")),
    "No KELF node found in NEFF JSON"
);
reject!(
    row29_kelf_attr_missing,
    Sunda,
    |s| neffj(s, |v| remove(&mut v["nodes"][1]["attrs"], "kelf")),
    "KELF node found but missing 'kelf' attribute"
);
reject!(
    row29_kelf_attr_not_string,
    Sunda,
    |s| neffj(s, |v| v["nodes"][1]["attrs"]["kelf"] = json!(5)),
    "KELF attribute is not a string"
);

// ---- kelf json (rows 30–34) ---------------------------------------------------
reject!(
    row30_kelf_member_missing,
    Sunda,
    |s| {
        s.remove("kelf-0.json");
    },
    "Invalid KELF json kelf-0.json: member is missing"
);
reject!(
    row30_version_not_string,
    Sunda,
    |s| s.edit("kelf-0.json", |v| v["version"] = json!(0.5)),
    "version must be a string"
);
reject!(
    row30_graph_without_name,
    Sunda,
    |s| s.edit("kelf-0.json", |v| remove(&mut v["graphs"][0], "name")),
    "graphs[0] needs a string name"
);
reject!(
    row31_version_without_dot,
    Sunda,
    |s| s.edit("kelf-0.json", |v| v["version"] = json!("05")),
    "invalid string (.) in 05"
);
reject!(
    row32_unknown_target,
    Sunda,
    |s| s.edit("kelf-0.json", |v| v["target"] = json!("trn9")),
    "Invalid target 'trn9'"
);
#[test]
fn row33_arch_gate() {
    let msg = run(
        Base::Sunda,
        |_| {},
        Some(ParseOptions::new(Arch::Cayman, 1)),
    );
    assert!(msg.starts_with("Loading a NEFF compiled for a different arch is not allowed, NEFF arch: v2, instance arch: v3"), "{msg}");
    assert!(msg.contains("NEURON_RT_ALLOW_LEGACY_NEFF=1"));
}
reject!(
    row34_duplicate_graph_name,
    Cayman,
    |s| s.edit("kelf-0.json", |v| v["graphs"][1]["name"] = json!("sg00")),
    "Duplicate graph name sg00"
);

// ---- def.json and vars (rows 35–42a, 59) ----------------------------------------
reject!(
    row35_def_missing,
    Sunda,
    |s| {
        s.remove("sg00/def.json");
    },
    "Failed to load subgraph definition sg00/def.json"
);
reject!(
    row35_def_invalid_json,
    Sunda,
    |s| s.set("sg00/def.json", b"[1,".to_vec()),
    "Failed to load subgraph definition sg00/def.json"
);
reject!(
    row36_no_var_table,
    Sunda,
    |s| def(s, |v| remove(v, "var")),
    "no Outputs"
);
reject!(
    row36_no_output_var,
    Sunda,
    |s| var(s, "out", |v| v["type"] = json!("input")),
    "no Outputs"
);
reject!(
    row37_var_without_type,
    Sunda,
    |s| var(s, "spill_a", |v| remove(v, "type")),
    "Failed to parse, key: type"
);
reject!(
    row37_var_without_id,
    Sunda,
    |s| var(s, "spill_a", |v| remove(v, "var_id")),
    "missing <var_id>"
);
reject!(
    row37a_unknown_type,
    Sunda,
    |s| var(s, "spill_a", |v| v["type"] = json!("weird")),
    "Unknown variable type weird for spill_a"
);
reject!(
    row37b_input_without_size,
    Sunda,
    |s| var(s, "a", |v| remove(v, "size")),
    "Missing or invalid size for variable a"
);
reject!(
    row37b_virtual_without_offset,
    Sunda,
    |s| var(s, "spill_a", |v| remove(v, "backing_variable_off")),
    "Missing or invalid backing_variable_off for variable spill_a"
);
reject!(
    row37b_virtual_offset_overflow,
    Sunda,
    |s| var(s, "spill_a", |v| v["backing_variable_off"] =
        json!(u64::MAX)),
    "overflows u64"
);
reject!(
    row37c_pointer_size,
    Sunda,
    |s| def(
        s,
        |v| v["var"]["p"] = json!({"type":"pointer","var_id":6,"size":4,"referenced_var_id":1})
    ),
    "Invalid pointer variable p"
);
reject!(
    row37c_pointer_without_reference,
    Sunda,
    |s| def(s, |v| v["var"]["p"] =
        json!({"type":"pointer","var_id":6,"size":8})),
    "Invalid pointer variable p"
);
reject!(
    row38_alignment_not_power_of_two,
    Sunda,
    |s| var(s, "a", |v| v["alignment"] = json!(3)),
    "alignment provided not power of 2. alignment=3"
);
reject!(
    row39_list_unparsable,
    Cayman,
    |s| var(s, "DGETable0", |v| v["list"] = json!("x")),
    "Failed to parse, key: list"
);
reject!(
    row39a_list_unknown_var_id,
    Cayman,
    |s| var(s, "DGETable0", |v| v["list"] = json!([2, 99])),
    "List of DGETable0 references unknown var_id 99"
);
reject!(
    row40_weight_without_file_name,
    Sunda,
    |s| var(s, "identity_1", |v| remove(v, "file_name")),
    "Failed to get neff weight content for identity_1"
);
reject!(
    row40_weight_member_missing,
    Sunda,
    |s| {
        s.remove("sg00/value_sg0000_identity_1_CRSM.npy");
    },
    "Failed to get neff weight content for identity_1"
);
reject!(
    row40a_weight_too_short,
    Sunda,
    |s| s.set(
        "sg00/value_sg0000_identity_1_CRSM.npy",
        npy_v1("<f2", &[8000], &[0; 16000])
    ),
    "Weight identity_1 has 16000 bytes, variable size is 16384"
);
reject!(
    row41_npy_bad_magic,
    Sunda,
    |s| s.set(
        "sg00/value_sg0000_identity_1_CRSM.npy",
        vec![0x50, 0x4B, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0]
    ),
    "NUMPY sg00/value_sg0000_identity_1_CRSM.npy bad header 4b50 != 0x4e93"
);
reject!(
    row41_npy_header_past_end,
    Sunda,
    |s| s.set(
        "sg00/value_sg0000_identity_1_CRSM.npy",
        b"\x93NUMPY\x01\x00\xff\x7f{}".to_vec()
    ),
    "runs past"
);
reject!(
    row42_var_ids_not_dense,
    Sunda,
    |s| var(s, "spill_b", |v| v["var_id"] = json!(9)),
    "Unexpected var_ids set! max=9, size=6"
);
reject!(
    row42a_duplicate_var_id,
    Sunda,
    |s| var(s, "spill_b", |v| v["var_id"] = json!(4)),
    "Duplicate var_id 4 (spill_a, spill_b)"
);
reject!(
    row59_var_dtype_too_long,
    Sunda,
    |s| var(s, "spill_a", |v| v["dtype"] = json!("float8_e4m3fn_x4xx")),
    "Device print dtype float8_e4m3fn_x4xx has 18 characters"
);
reject!(
    row59_var_shape_too_long,
    Sunda,
    |s| var(s, "spill_a", |v| v["shape"] = json!(vec![1; 9])),
    "shape dimentions of up to 8"
);

// ---- dma_queue (rows 43–46) -----------------------------------------------------
reject!(
    row43_invalid_owner,
    Sunda,
    |s| def(s, |v| v["dma_queue"]["qSPIO0"]["owner"] = json!("pe2")),
    "Invalid owner 'pe2' for DMA queue qSPIO0"
);
reject!(
    row44_queue_without_type,
    Sunda,
    |s| def(s, |v| remove(&mut v["dma_queue"]["qSPIO0"], "type")),
    "missing <type> in qSPIO0"
);
reject!(
    row44a_unknown_queue_type,
    Sunda,
    |s| def(s, |v| v["dma_queue"]["qSPIO0"]["type"] = json!("weird")),
    "Invalid type 'weird' for DMA queue qSPIO0"
);
reject!(
    row44a_too_many_queues,
    Sunda,
    |s| def(s, |v| {
        for i in 0..29 {
            v["dma_queue"][format!("qExtra{i}")] = json!({"owner":"sp","type":"data"});
        }
    }),
    "Too many DMA queues (33 > 32)"
);
reject!(
    row44b_act_load_queue_set,
    Sunda,
    |s| def(s, |v| v["dma_queue"]["qAct"] =
        json!({"owner":"act","type":"act_load","num_queues":2})),
    "Invalid act_load queue qAct"
);
reject!(
    row44b_second_act_load_queue,
    Sunda,
    |s| def(s, |v| {
        v["dma_queue"]["qAct0"] = json!({"owner":"act","type":"act_load"});
        v["dma_queue"]["qAct1"] = json!({"owner":"act","type":"act_load"});
    }),
    "a second act_load queue"
);
reject!(
    row44b_embedding_without_sync,
    Sunda,
    |s| def(s, |v| v["dma_queue"]["qEmb"] =
        json!({"owner":"sp","type":"embedding_update"})),
    "Missing embedding_update_sync_semaphore in qEmb"
);
reject!(
    row46_too_many_semaphores,
    Sunda,
    |s| def(s, |v| v["dma_queue"]["qSPIO0"]["semaphore_set"] =
        json!((0..33).collect::<Vec<u32>>())),
    "maximum of 32 semaphores per queue set, found: 33"
);

// ---- DMA blocks (rows 47–48d) --------------------------------------------------
reject!(
    row47_unknown_op,
    Sunda,
    |s| desc(s, "sg00/SP.json", 0, |d| d["op"] = json!("xor")),
    "Unknown dma operation: xor"
);
reject!(
    row48_cast_without_dtype,
    Sunda,
    |s| desc(s, "sg00/Pool.json", 1, |d| remove(d, "to_dtype")),
    "Invalid cce desc ap without dtype"
);
reject!(
    row48_zero_size,
    Sunda,
    |s| desc(s, "sg00/SP.json", 0, |d| d["from_sizes"] = json!([0, 128])),
    "Size cannot be 0"
);
reject!(
    row48a_block_without_id,
    Sunda,
    |s| s.edit("sg00/SP.json", |v| remove(&mut v["dma"][0], "id")),
    "Malformed DMA block qSPIO0/?"
);
reject!(
    row48a_empty_desc,
    Sunda,
    |s| s.edit("sg00/SP.json", |v| v["dma"][0]["desc"] = json!([])),
    "Malformed DMA block qSPIO0/0"
);
reject!(
    row48a_endpoint_without_off,
    Sunda,
    |s| desc(s, "sg00/SP.json", 0, |d| remove(d, "to_off")),
    "to_off is missing"
);
reject!(
    row48a_sizes_steps_differ,
    Sunda,
    |s| desc(s, "sg00/SP.json", 0, |d| d["from_steps"] = json!([1])),
    "from_sizes has 2 entries and from_steps 1"
);
reject!(
    row48b_unknown_queue,
    Sunda,
    |s| s.edit("sg00/SP.json", |v| v["dma"][0]["queue"] = json!("qNope")),
    "DMA block qNope/0: unknown queue or wrong owner"
);
reject!(
    row48b_wrong_owner,
    Sunda,
    |s| s.edit("sg00/SP.json", |v| v["dma"][0]["queue"] =
        json!("qPoolSpillReload0")),
    "queue owner is pool, block is in sp"
);
reject!(
    row48b_duplicate_block,
    Sunda,
    |s| s.edit("sg00/SP.json", |v| v["dma"][1]["id"] = json!(0)),
    "Duplicate DMA block qSPSpillReload0/0"
);
reject!(
    row48c_unknown_variable,
    Sunda,
    |s| desc(s, "sg00/SP.json", 0, |d| d["from"] = json!("nosuch")),
    "DMA descriptor references unknown variable nosuch"
);
reject!(
    row48d_out_of_bounds,
    Sunda,
    |s| desc(s, "sg00/SP.json", 0, |d| d["from_off"] = json!(1)),
    "DMA descriptor out of bounds of a (16385 > 16384)"
);
reject!(
    row48d_overflow_is_out_of_bounds,
    Sunda,
    |s| desc(s, "sg00/SP.json", 0, |d| d["from_off"] = json!(u64::MAX)),
    "out of bounds of a (18446744073709551615 > 16384)"
);

// ---- carve-outs (rows 49–51) ----------------------------------------------------
reject!(
    row49_carveout_type,
    Cayman,
    |s| def(s, |v| v["runtime_statebuffer_reservation"][0]["type"] =
        json!("other")),
    "Invalid runtime_statebuffer_reservation type other"
);
reject!(
    row50_carveout_malformed,
    Cayman,
    |s| def(s, |v| remove(
        &mut v["runtime_statebuffer_reservation"][0],
        "size"
    )),
    "Missing or corrupted runtime_statebuffer_reservation"
);
reject!(
    row51_carveout_contract,
    Cayman,
    |s| def(s, |v| v["runtime_statebuffer_reservation"][0]
        ["base_partition"] = json!(4)),
    "SB partition must start at 0. Got 4"
);

// ---- ucode libraries (rows 52–56) ------------------------------------------------
reject!(
    row52_ucode_version_mismatch,
    Sunda,
    |s| ucode(s, lib("2.0.0.0")),
    "Mismatch between GPSIMD lib version and NRT version!"
);
reject!(
    row52_ucode_version_missing,
    Sunda,
    |s| {
        let mut l = lib("1.0.0.0");
        remove(&mut l, "ulib_to_ucode_version");
        ucode(s, l)
    },
    "Missing GPSIMD lib version!"
);
reject!(
    row53_ucode_cpu_id,
    Sunda,
    |s| {
        let mut l = lib("1.21.1.0");
        l["cpu_id"] = json!(1);
        ucode(s, l)
    },
    "Invalid cpu_id 1 for UCode Library gpsimd.elf"
);
reject!(
    row54_ucode_total_cpus,
    Sunda,
    |s| {
        let mut l = lib("1.21.1.0");
        l["total_cpus"] = json!(3);
        ucode(s, l)
    },
    "UCode Library gpsimd.elf has invalid number of total cpus 3"
);
reject!(
    row55_ucode_duplicate,
    Sunda,
    |s| {
        s.set("sg00/gpsimd.elf", vec![0x7F]);
        def(s, |v| {
            v["ucode_lib"] = json!([lib("1.21.1.0"), lib("1.21.1.0")])
        });
    },
    "UCode Library gpsimd.elf has already been added"
);
reject!(
    row56_ext_isa_too_many,
    Sunda,
    |s| def(s, |v| v["ext_isa_ucode_lib_def"] =
        json!({"functions": vec![json!({}); 19]})),
    "Number of ExtISA Op trying to load 19 exceeds the maximum 18"
);

// ---- engines (rows 57–58a) ------------------------------------------------------
reject!(
    row57a_partial_record,
    Sunda,
    |s| s.set("sg00/PE.bin", vec![0xB1; 65]),
    "Instruction size 65 for sg00/PE.bin is not a multiple of 64"
);
reject!(
    row58_engine_json_missing,
    Sunda,
    |s| {
        s.remove("sg00/PE.json");
    },
    "Failed to load engine pe of sg00"
);
reject!(
    row58_engine_key_not_string,
    Sunda,
    |s| def(s, |v| v["dve"] = json!(5)),
    "Failed to load engine dve of sg00"
);
reject!(
    row58_instr_member_missing,
    Sunda,
    |s| {
        s.remove("sg00/DVE.bin");
    },
    "Failed to load engine dve of sg00: instruction member sg00/DVE.bin is missing"
);
reject!(
    row58a_unknown_act_set,
    Sunda,
    |s| s.edit("sg00/Activation.json", |v| v["activation_function_sets"] =
        json!(["softplus_and_others"])),
    "Failed to load activation set softplus_and_others"
);
reject!(
    row58a_act_blob_missing,
    Sunda,
    |s| {
        s.remove("sg00/exp_and_others_bkt.bin");
    },
    "Failed to load activation set exp_and_others"
);
reject!(
    row58a_too_many_profiles,
    Sunda,
    |s| s.edit("sg00/exp_and_others.json", |v| v["profile_meta_data"] =
        json!(vec![json!({"func_name":"f"}); 26])),
    "at most 25"
);
reject!(
    row58a_dve_table_missing,
    Sunda,
    |s| {
        s.remove("sg00/default_control_table.bin");
    },
    "Failed to load DVE table control_table of sg00"
);

// ---- post-build (rows 62–63, stage.md §14) ---------------------------------------
reject!(
    row63_no_graphs,
    Sunda,
    |s| s.edit("kelf-0.json", |v| v["graphs"] = json!([])),
    "NEFF has 0 subgraphs, which do not fit one logical core of size 1"
);
reject!(io_size_mismatch, Sunda, |s| neffj(s, |v| v["attrs"]["shape"][1][0] = json!([128, 65])), "I/O tensor a: neff.json gives 16640 bytes but input variable a in sg00/def.json has size 16384");
reject!(
    trigger_without_block,
    Sunda,
    |s| s.set(
        "sg00/SP.bin",
        stream(&[
            encode::record(isa::OP_SET_ORDERING_MODE),
            encode::trigger("qSPSpillReload0", 0),
            encode::trigger("qSPIO0", 0),
            encode::trigger("qSPSpillReload0", 1),
            encode::trigger("qSPIO0", 5),
        ])
    ),
    "DMA trigger qSPIO0/5 in sg00/SP.bin has no matching block"
);
reject!(
    block_never_triggered,
    Sunda,
    |s| s.set(
        "sg00/SP.bin",
        stream(&[
            encode::record(isa::OP_SET_ORDERING_MODE),
            encode::trigger("qSPSpillReload0", 0),
            encode::trigger("qSPIO0", 0),
        ])
    ),
    "DMA block qSPSpillReload0/1 in sg00/SP.bin is never triggered"
);
reject!(
    block_triggered_twice,
    Sunda,
    |s| s.set(
        "sg00/Pool.bin",
        stream(&[
            encode::record(isa::OP_SET_ORDERING_MODE),
            encode::trigger("qPoolSpillReload0", 0),
            encode::trigger("qPoolIO0", 0),
            encode::trigger("qPoolIO0", 0),
        ])
    ),
    "DMA block qPoolIO0/0 in sg00/Pool.bin is triggered 2 times"
);

fn d4(src: Addr8) -> Vec<u8> {
    let sb = Addr8 {
        offset: 0,
        id: 0,
        reserved: 0,
        mode: isa::ADDR8_STATIC_VAR,
    };
    stream(&[
        encode::record(isa::OP_SET_ORDERING_MODE),
        encode::dma_direct2d(src, sb),
    ])
}
reject!(
    addr8_unknown_mode,
    Cayman,
    |s| s.set(
        "sg00/SP.bin",
        d4(Addr8 {
            offset: 0,
            id: 0,
            reserved: 0,
            mode: 0x28
        })
    ),
    "unsupported ADDR8 mode 0x28 in instruction 1 of sg00/SP.bin"
);
reject!(
    addr8_unknown_var_id,
    Cayman,
    |s| s.set(
        "sg00/SP.bin",
        d4(Addr8 {
            offset: 0,
            id: 99,
            reserved: 0,
            mode: 0x10
        })
    ),
    "invalid var_id 99 in instruction 1 of sg00/SP.bin"
);
reject!(
    addr8_dge_index_outside_list,
    Cayman,
    |s| s.set(
        "sg00/SP.bin",
        d4(Addr8 {
            offset: 0,
            id: 3,
            reserved: 0,
            mode: 0x20
        })
    ),
    "invalid DGE index 3"
);
reject!(
    addr8_offset_out_of_bounds,
    Cayman,
    |s| s.set(
        "sg00/SP.bin",
        d4(Addr8 {
            offset: 256,
            id: 2,
            reserved: 0,
            mode: 0x20
        })
    ),
    "invalid offset in o, 256 <= 256"
);

// ---- what is accepted with a warning, not rejected ---------------------------------
#[test]
fn warnings_are_not_rejects() {
    let mut s = Synth::static_sunda();
    def(&mut s, |v| remove(v, "pe"));
    var(&mut s, "a", |v| v["alignment"] = json!(0));
    s.set(
        "sg00/value_sg0000_identity_1_CRSM.npy",
        npy_v1("<f2", &[8200], &[0; 16400]),
    );
    s.edit("sg00/DVE.json", |v| {
        let first = v["dve_tables"][0].clone();
        v["dve_tables"] = json!([first.clone(), first]);
    });
    let neff = s.open(Producer::V2_0_99229);
    let m = parse::parse(&neff, &ParseOptions::new(Arch::Sunda, 1)).unwrap();
    let w = m.warnings().join("\n");
    assert!(
        w.contains("Engine pe not found in NEFF sg00, using empty placeholder"),
        "{w}"
    );
    assert!(w.contains("weight identity_1 has 16400 bytes"), "{w}");
    assert!(w.contains("dve_tables has 2 elements"), "{w}");
    assert!(m.kbins[0].engines()[0].instr().is_none());
    assert_eq!(m.kbins[0].vars().by_name("a").unwrap().alignment, None);
}
