//! `neffld plan --world`: the loads are the ranks of one collectives
//! world, compared before any load — ranks that agree plan as
//! `nrt_load_collectives` loads them, with the collectives memory the rows
//! leave out named; each disagreement (collectives that differ, a rank
//! outside its groups, a peer that never loads, a NEFF's own world size)
//! refuses the step of the rank that differs, exit 1, naming the group,
//! the collective, both ranks and what differs; worlds larger than one
//! instance span hosts.

use std::path::Path;
use std::process::{Command, Output};

use neffld_testkit::collectives::{Step, World};
use serde_json::Value;

use crate::common::scratch;

fn neffld(args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_neffld"));
    c.args(args);
    for v in neffld::config::VARIABLES {
        c.env_remove(v.name);
    }
    c.output().expect("run neffld")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

fn write(dir: &Path, name: &str, bytes: Vec<u8>) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.to_str().unwrap().to_string()
}

/// A NEFF of `ranks` ranks in one group whose collectives are `steps`.
fn neff(ranks: u32, steps: &[Step]) -> Vec<u8> {
    World::new(ranks).with_steps(steps).shared()
}

#[test]
fn two_ranks_that_agree_plan_and_say_what_memory_is_not_counted() {
    let dir = scratch("world-agree");
    let a = write(&dir, "a.neff", neff(2, &[Step::AllReduce(32)]));
    let args = [
        "plan",
        "--instance",
        "trn2.3xlarge",
        "--world",
        "2",
        &format!("{a}@0"),
        &format!("{a}@1"),
    ];
    let out = neffld(&args);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(
        t.contains(
            "collectives memory not counted: 1 collective in 1 replica group on each of ranks 0-1"
        ),
        "{t}"
    );
    assert!(
        t.contains("world     2 ranks on 1 host of trn2.3xlarge"),
        "{t}"
    );
    assert!(t.contains("agree     yes"), "{t}");
    let mut with_json = args.to_vec();
    with_json.push("--json");
    let doc = json(&neffld(&with_json));
    assert_eq!(doc["fits"], true);
    let w = &doc["world"];
    assert_eq!(
        (w["size"].as_u64(), w["hosts"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(w["root_comm_assumed"], true);
    assert_eq!(w["disagreements"].as_array().unwrap().len(), 0);
    let ranks = w["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 2);
    assert_eq!(
        (ranks[1]["core"].as_u64(), ranks[1]["host"].as_u64()),
        (Some(1), Some(0))
    );
    assert_eq!(ranks[1]["loaded"], true);
    let neffs = doc["neffs"].as_array().unwrap();
    // The map draws the world and names what its bars leave out.
    let map = dir.join("plan.html");
    let mut with_map = args.to_vec();
    with_map.extend(["--map", map.to_str().unwrap()]);
    assert!(neffld(&with_map).status.success());
    let html = std::fs::read_to_string(&map).unwrap();
    assert!(
        html.contains("<h2>World</h2>") && html.contains("the ranks agree"),
        "{html}"
    );
    assert!(
        html.contains("collectives memory not counted: 1 collective in 1 replica group on rank 0"),
        "{html}"
    );
    assert_eq!(neffs[1]["rank"], 1);
    assert_eq!(
        neffs[1]["collectives_not_counted"],
        "collectives memory not counted: 1 collective in 1 replica group on rank 1"
    );
}

/// Rank 1's NEFF holds a second all-reduce: its step is refused naming
/// the group, the collective, both ranks and the runtime's line.
#[test]
fn a_rank_with_another_collective_is_refused_naming_both_ranks() {
    let dir = scratch("world-mismatch");
    let a = write(&dir, "a.neff", neff(2, &[Step::AllReduce(32)]));
    let b = write(
        &dir,
        "b.neff",
        neff(2, &[Step::AllReduce(32), Step::AllReduce(32)]),
    );
    let args = [
        "plan",
        "--instance",
        "trn2.3xlarge",
        "--world",
        "2",
        &format!("{a}@0"),
        &format!("{b}@1"),
    ];
    let out = neffld(&args);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("replica group [0, 1]: collective 1 differs between ranks 0 and 1: rank 0 has none; rank 1 has all-reduce (add) of 32 float32 (128 bytes)"),
        "{t}"
    );
    assert!(t.contains("failed signature check from peer: 1"), "{t}");
    assert!(t.contains("fits      no: step 2 of 2"), "{t}");
    // Under a line that compared only how many collectives each rank has,
    // the runtime's own words for it.
    let mut old = args.to_vec();
    old.extend(["--runtime", "2.30", "--json"]);
    let doc = json(&neffld(&old));
    let d = &doc["world"]["disagreements"][0];
    assert_eq!(d["kind"], "mismatch");
    assert_eq!(
        (d["ranks"][0].as_u64(), d["ranks"][1].as_u64()),
        (Some(0), Some(1))
    );
    assert_eq!(d["index"], 1);
    assert_eq!(d["group"], serde_json::json!([0, 1]));
    assert_eq!(
        d["runtime_log"][0],
        "mismatching number of cc ops, expected 1 received 2. Check if ranks 0 and 1 are using the same neff"
    );
    assert_eq!(doc["steps"][1]["error"]["status"], "NRT_FAILURE");
    assert_eq!(doc["steps"][1]["error"]["stage"], "collectives");
    assert_eq!(doc["error"]["stage"], "collectives");
}

/// The runtime's own sample (one all-reduce on `replica_groups = [[]]`,
/// one group of every rank) as both ranks of two: they agree; when rank
/// 1's PE stream holds the all-reduce twice, its step is refused naming
/// both ranks.
#[test]
fn the_samples_ranks_are_one_group_and_compared() {
    use neffld::container::writer::Producer;
    use neffld_testkit::collectives::{sample, sample_pe};
    let dir = scratch("world-sample");
    let a = write(&dir, "a.neff", sample().write(Producer::V2_21));
    let mut twice = sample();
    twice.set("sg00/pe.bin", [sample_pe(), sample_pe()].concat());
    let b = write(&dir, "b.neff", twice.write(Producer::V2_21));
    let plan = |rank1: &str| {
        neffld(&[
            "plan",
            "--instance",
            "trn2.3xlarge",
            "--world",
            "2",
            &format!("{a}@0"),
            &format!("{rank1}@1"),
        ])
    };
    let out = plan(&a);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("collectives memory not counted"), "{t}");
    let out = plan(&b);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains(
            "replica group [0, 1]: collective 1 differs between ranks 0 and 1: rank 0 has none"
        ),
        "{t}"
    );
}

/// Collectives of one count that differ in kind: a runtime that counts
/// them loads both ranks; the plan says so and still refuses.
#[test]
fn collectives_that_differ_in_kind_are_named_and_the_older_runtime_misses_them() {
    let dir = scratch("world-kind");
    let a = write(&dir, "a.neff", neff(2, &[Step::AllReduce(32)]));
    let b = write(&dir, "b.neff", neff(2, &[Step::AllGather(32)]));
    let out = neffld(&[
        "plan",
        "--instance",
        "trn2.3xlarge",
        "--runtime",
        "2.30",
        "--world",
        "2",
        &format!("{a}@0"),
        &format!("{b}@1"),
    ]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("collective 0 differs between ranks 0 and 1"),
        "{t}"
    );
    assert!(t.contains("the operation differs"), "{t}");
    assert!(
        t.contains("runtime 2.30 compares only how many collectives each rank has"),
        "{t}"
    );
}

/// `--world 3 a.neff@0-2` on groups `[[0,1]]`: rank 2 is in no group, the
/// runtime's own refusal of its load.
#[test]
fn a_rank_outside_its_replica_groups_is_refused() {
    let dir = scratch("world-myself");
    let bytes = World {
        ranks: 3,
        groups: vec![vec![0, 1]],
        steps: vec![Step::AllReduce(32)],
    }
    .shared();
    let a = write(&dir, "a.neff", bytes);
    let out = neffld(&[
        "plan",
        "--instance",
        "trn2.3xlarge",
        "--world",
        "3",
        &format!("{a}@0-2"),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let doc = json(&out);
    let e = &doc["steps"][2]["error"];
    assert_eq!(e["status"], "NRT_RESOURCE");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("replica groups (0/1) does not have myself 2"),
        "{e}"
    );
    assert_eq!(doc["steps"][1]["status"], "ok");
}

/// A world of four with three load steps: every rank waits for rank 3.
#[test]
fn a_rank_whose_peer_never_loads_is_named_as_a_deadlock() {
    let dir = scratch("world-deadlock");
    let a = write(&dir, "a.neff", neff(4, &[Step::AllReduce(32)]));
    let out = neffld(&[
        "plan",
        "--instance",
        "trn2.3xlarge",
        "--world",
        "4",
        &format!("{a}@0-2"),
    ]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("deadlock: rank 0's load waits for rank 3 of its replica group [0, 1, 2, 3], which no step of the plan loads"),
        "{t}"
    );
    assert!(t.contains("refused [NRT_TIMEOUT (5)]"), "{t}");
    assert!(t.contains("ranks     3: no load step"), "{t}");
}

/// A NEFF compiled for another world size than the plan's.
#[test]
fn a_neff_of_another_world_size_is_named() {
    let dir = scratch("world-size");
    let mut s = World {
        ranks: 2,
        groups: vec![vec![0, 1]],
        steps: vec![Step::AllReduce(32)],
    }
    .shared_synth();
    s.edit("sg00/def.json", |d| {
        d["#rank_world_size"] = serde_json::json!(8)
    });
    let a = write(
        &dir,
        "a.neff",
        s.write(neffld::container::writer::Producer::V2_21),
    );
    let out = neffld(&[
        "plan",
        "--instance",
        "trn2.3xlarge",
        "--lnc",
        "1",
        "--world",
        "2",
        &format!("{a}@0-1"),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let doc = json(&out);
    let d = &doc["world"]["disagreements"][0];
    assert_eq!(d["kind"], "world_size");
    assert!(
        d["what"]
            .as_str()
            .unwrap()
            .contains("compiled for a world of 8 ranks"),
        "{d}"
    );
    assert_eq!(doc["steps"][0]["error"]["status"], "NRT_INVALID");
}

/// Each rank's own NEFF sends to the next rank and receives from the one
/// before: a ring that closes plans; one whose sizes disagree is named.
#[test]
fn sends_meet_their_receives_or_the_pair_is_named() {
    let dir = scratch("world-ring");
    let ring = World::new(4).with_steps(&[Step::SendRecvRing(64)]);
    let files: Vec<String> = (0..4)
        .map(|r| write(&dir, &format!("r{r}.neff"), ring.rank(r)))
        .collect();
    let mut args: Vec<String> = ["plan", "--instance", "trn2.3xlarge", "--world", "4"]
        .map(String::from)
        .to_vec();
    args.extend(files.iter().enumerate().map(|(r, f)| format!("{f}@{r}")));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = neffld(&argv);
    assert!(out.status.success(), "{}", text(&out));
    // Rank 2 sends 128 bytes where rank 3 receives 64.
    let wider = World::new(4).with_steps(&[Step::SendRecvRing(128)]);
    let odd = write(&dir, "odd.neff", wider.rank(2));
    args[7] = format!("{odd}@2");
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = neffld(&argv);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("the sends of rank 1 to rank 2 and its receives from rank 1: collective 0 differs between ranks 1 and 2"),
        "{t}"
    );
}

/// A world larger than one instance spans hosts, each with its own
/// devices; the report says which host each rank is on.
#[test]
fn a_world_larger_than_the_instance_spans_hosts() {
    let dir = scratch("world-hosts");
    let a = write(&dir, "a.neff", neff(8, &[Step::AllReduce(1024)]));
    let out = neffld(&[
        "plan",
        "--instance",
        "trn2.3xlarge",
        "--world",
        "8",
        &format!("{a}@0-7"),
        "--json",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let doc = json(&out);
    let w = &doc["world"];
    assert_eq!(
        (w["hosts"].as_u64(), w["cores_per_host"].as_u64()),
        (Some(2), Some(4))
    );
    let hosts: Vec<u64> = w["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["host"].as_u64().unwrap())
        .collect();
    assert_eq!(hosts, [0, 0, 0, 0, 1, 1, 1, 1]);
    // Each host's chip holds its own four ranks' memory.
    let devices = doc["memory"]["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 2);
    assert_eq!(doc["neffs"][4]["device"], 1);
    let map = dir.join("hosts.html");
    let out = neffld(&[
        "plan",
        "--instance",
        "trn2.3xlarge",
        "--world",
        "8",
        &format!("{a}@0-7"),
        "--map",
        map.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("ranks     4-7: "), "{}", text(&out));
    let html = std::fs::read_to_string(&map).unwrap();
    assert!(html.contains("<h2>ND 1 (Trainium2), host 1</h2>"), "{html}");
    // Hosts named; a core past them is the deployment's mistake.
    let out = neffld(&[
        "plan",
        "--instance",
        "trn2.3xlarge",
        "--world",
        "2",
        "--hosts",
        "2",
        &format!("{a}@0"),
        &format!("{a}@9"),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("2 hosts of trn2.3xlarge"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_worlds_own_mistakes_are_named() {
    let dir = scratch("world-mistakes");
    let a = write(&dir, "a.neff", neff(2, &[Step::AllReduce(32)]));
    let cases: [(&[&str], &str); 5] = [
        (
            &["--world", "1", &format!("{a}@0-1")],
            "would be rank 1 of a world of 1",
        ),
        (&["--hosts", "2", &format!("{a}@0")], "name the world too"),
        (&["--world", "0", &format!("{a}@0")], "a world has 1 to"),
        (
            &[
                "--world",
                "8",
                "--env",
                "NEURON_RT_VISIBLE_CORES=0-3",
                &format!("{a}@0"),
            ],
            "restricts one host's runtime",
        ),
        (
            &["--world", "2", &format!("{a}@0-1"), "--solve", &a],
            "ranks beyond it",
        ),
    ];
    for (extra, what) in cases {
        let mut args = vec!["plan", "--instance", "trn2.3xlarge"];
        args.extend_from_slice(extra);
        let out = neffld(&args);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {}", text(&out));
        assert!(text(&out).contains(what), "{extra:?}: {}", text(&out));
    }
}

/// trn1's topology: a world of 24 ranks is the runtime's own refusal.
#[test]
fn trn1_refuses_a_world_of_24() {
    let dir = scratch("world-trn1");
    let a = write(&dir, "a.neff", neffld_testkit::collectives::sample_neff());
    let out = neffld(&[
        "plan",
        "--instance",
        "trn1.32xlarge",
        "--world",
        "24",
        &format!("{a}@0-23"),
    ]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("Unsupported topology. Supported number of Neuron Cores is 1, 2, 8, 16 or a multiple of 32"), "{t}");
    assert!(t.contains("fits      no: step 1 of 24"), "{t}");
    let out = neffld(&[
        "plan",
        "--instance",
        "trn1.32xlarge",
        "--world",
        "32",
        &format!("{a}@0-31"),
    ]);
    assert!(out.status.success(), "{}", text(&out));
}

/// A deployment file says `world = N` and `hosts = K`.
#[test]
fn a_deployment_file_names_its_world() {
    let dir = scratch("world-file");
    let a = write(&dir, "a.neff", neff(2, &[Step::AllReduce(32)]));
    let toml = dir.join("d.toml");
    std::fs::write(
        &toml,
        format!(
            "instance = \"trn2.3xlarge\"\nworld = 2\n\n[[step]]\nload = \"{a}\"\ncores = \"0-1\"\n"
        ),
    )
    .unwrap();
    let out = neffld(&["plan", toml.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(json(&out)["world"]["size"], 2);
    std::fs::write(&toml, "world = 2\nhosts = 0\n").unwrap();
    let out = neffld(&["plan", toml.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}
