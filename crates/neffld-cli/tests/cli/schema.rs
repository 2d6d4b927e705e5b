//! Every command's `--json` output, success and failure, validates against
//! docs/cli-schema.json. The validator below implements the part of JSON
//! Schema the file uses (`$ref`, `allOf`, `anyOf`, `type`, `required`,
//! `properties`, `additionalProperties`, `items`, `enum`, `const`,
//! `minimum`); it refuses any other keyword, so the schema cannot silently
//! say more than is checked.

use std::path::PathBuf;
use std::process::Command;

use neffld_testkit::any_lnc_cayman;
use serde_json::{json, Value};

const KNOWN: [&str; 16] = [
    "$schema",
    "$id",
    "$defs",
    "$ref",
    "title",
    "description",
    "allOf",
    "anyOf",
    "type",
    "required",
    "properties",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "minimum",
];

fn type_ok(t: &str, v: &Value) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => v.is_u64() || v.is_i64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        other => panic!("unknown type {other}"),
    }
}

/// Errors of `v` against `s` (empty: valid), with JSON-pointer-ish paths.
fn check(root: &Value, s: &Value, v: &Value, path: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let obj = s.as_object().expect("a schema is an object");
    for k in obj.keys() {
        assert!(
            KNOWN.contains(&k.as_str()),
            "schema keyword {k} is not implemented"
        );
    }
    if let Some(r) = obj.get("$ref").and_then(Value::as_str) {
        let name = r.strip_prefix("#/$defs/").expect("local refs only");
        errs.extend(check(root, &root["$defs"][name], v, path));
    }
    for sub in obj
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        errs.extend(check(root, sub, v, path));
    }
    if let Some(any) = obj.get("anyOf").and_then(Value::as_array) {
        let all: Vec<Vec<String>> = any.iter().map(|sub| check(root, sub, v, path)).collect();
        if all.iter().all(|e| !e.is_empty()) {
            let best = all.into_iter().min_by_key(Vec::len).unwrap_or_default();
            errs.push(format!("{path}: matches no alternative; closest: {best:?}"));
        }
    }
    if let Some(t) = obj.get("type") {
        let ok = match t {
            Value::String(t) => type_ok(t, v),
            Value::Array(ts) => ts.iter().any(|t| type_ok(t.as_str().unwrap(), v)),
            _ => panic!("bad type"),
        };
        if !ok {
            errs.push(format!("{path}: expected {t}, got {v}"));
            return errs;
        }
    }
    if let Some(e) = obj.get("enum").and_then(Value::as_array) {
        if !e.contains(v) {
            errs.push(format!("{path}: {v} not in {e:?}"));
        }
    }
    if let Some(c) = obj.get("const") {
        if c != v {
            errs.push(format!("{path}: {v} is not {c}"));
        }
    }
    if let (Some(m), Some(x)) = (obj.get("minimum").and_then(Value::as_i64), v.as_i64()) {
        if x < m {
            errs.push(format!("{path}: {x} < {m}"));
        }
    }
    if let Some(o) = v.as_object() {
        for r in obj
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if !o.contains_key(r.as_str().unwrap()) {
                errs.push(format!("{path}: missing {r}"));
            }
        }
        let props = obj.get("properties").and_then(Value::as_object);
        for (k, x) in o {
            match props.and_then(|p| p.get(k)) {
                Some(ps) => errs.extend(check(root, ps, x, &format!("{path}/{k}"))),
                None => match obj.get("additionalProperties") {
                    Some(Value::Bool(false)) => errs.push(format!("{path}: unexpected key {k}")),
                    Some(extra @ Value::Object(_)) => {
                        errs.extend(check(root, extra, x, &format!("{path}/{k}")))
                    }
                    _ => {}
                },
            }
        }
    }
    if let (Some(items), Some(a)) = (obj.get("items"), v.as_array()) {
        for (i, x) in a.iter().enumerate() {
            errs.extend(check(root, items, x, &format!("{path}/{i}")));
        }
    }
    errs
}

fn schema() -> Value {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/cli-schema.json");
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

fn validate(doc: &Value) -> Vec<String> {
    let s = schema();
    check(&s, &s, doc, "")
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs neffld and parses stdout: there must be exactly one JSON document.
fn run(args: &[&str]) -> (Value, Option<i32>) {
    let out = Command::new(env!("CARGO_BIN_EXE_neffld"))
        .args(args)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: stdout is not one JSON document ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    (v, out.status.code())
}

#[test]
fn the_validator_can_fail() {
    let s = schema();
    let good = json!({"schema_version": 1, "command": "pack", "status": "NRT_SUCCESS", "status_code": 0,
                      "error": null, "output": "x", "size": 1, "members": 1, "target": null, "warnings": []});
    assert_eq!(check(&s, &s, &good, ""), Vec::<String>::new());
    for (key, bad) in [
        ("schema_version", json!(2)),
        ("status_code", json!(-1)),
        ("error", json!({"stage": "io"})),
        ("command", json!("frobnicate")),
    ] {
        let mut d = good.clone();
        d[key] = bad;
        assert!(!check(&s, &s, &d, "").is_empty(), "{key} should be refused");
    }
    let mut d = good.clone();
    d.as_object_mut().unwrap().remove("status");
    assert!(!check(&s, &s, &d, "").is_empty());
}

#[test]
fn every_command_output_follows_the_schema() {
    let dir = std::env::temp_dir().join(format!("neffld-schema-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let d = |p: &str| dir.join(p).to_str().unwrap().to_string();
    let demo = root().join("examples/demo.neff");
    let demo = demo.to_str().unwrap();
    let matmul = root().join("testdata/fixtures/matmul_small.neff");
    let matmul = matmul.to_str().unwrap();
    std::fs::write(dir.join("text.neff"), b"not a neff\n").unwrap();
    let missing = "/nonexistent/missing.neff";
    let fused = root().join("testdata/fixtures/kfusion__fused_attention__fused.neff");
    let fused = fused.to_str().unwrap();
    let capture = root().join("testdata/captures/kfusion__fused_attention__fused.ntff");
    let capture = capture.to_str().unwrap().to_string();
    // A capture whose pool and sp images raced the other way
    // (docs/decisions.md): reported as the race, so it agrees.
    let raced = root().join("testdata/fixtures/kfusion__fused_fp32_s512__fused.neff");
    let raced = raced.to_str().unwrap();
    let raced_capture = root().join("testdata/captures/kfusion__fused_fp32_s512__fused.ntff");
    let raced_capture = raced_capture.to_str().unwrap().to_string();
    let tree = d("tree");
    let (text, p, q) = (d("text.neff"), d("p.neff"), d("q.neff"));
    let dense = d("dense.neff");
    std::fs::write(&dense, any_lnc_cayman("dense", 10 << 30, |_| {})).unwrap();
    let noisy = format!("{dense}@0,0");
    let world = d("world.neff");
    std::fs::write(
        &world,
        neffld_testkit::collectives::World::new(2)
            .with_steps(&[
                neffld_testkit::collectives::Step::AllReduce(64),
                neffld_testkit::collectives::Step::SendRecvRing(64),
            ])
            .rank(0),
    )
    .unwrap();
    let ranks = format!("{matmul}@0-63");
    // A copies question whose count memory ends (4 GiB of inputs and
    // outputs a copy): matmul_small's would run to the step ceiling.
    let large = root().join("testdata/fixtures/matmul_large.neff");
    let large = large.to_str().unwrap();
    // A world of two ranks, and a rank 1 with a second all-reduce.
    let (world, two) = (d("world.neff"), d("two.neff"));
    let all_reduce = |n: usize| {
        neffld_testkit::collectives::World::new(2)
            .with_steps(&vec![neffld_testkit::collectives::Step::AllReduce(32); n])
            .shared()
    };
    std::fs::write(&world, all_reduce(1)).unwrap();
    std::fs::write(&two, all_reduce(2)).unwrap();
    let (w0, w1, t1) = (
        format!("{world}@0"),
        format!("{world}@1"),
        format!("{two}@1"),
    );
    let in_world =
        |n: &'static str| vec!["plan", "--json", "--instance", "trn2.3xlarge", "--world", n];
    let bad_toml = d("bad.toml");
    std::fs::write(&bad_toml, "[[step]]\nload = \"x.neff\"\ncores = \"3-1\"\n").unwrap();
    let (monitor, sysfs) = (d("m.json"), d("sysfs"));
    let cases: Vec<(Vec<&str>, i32)> = vec![
        (vec!["inspect", "--json", demo], 0),
        (vec!["inspect", "--json", matmul], 0),
        (vec!["inspect", "--json", &world], 0),
        (vec!["load", "--json", "--quiet", &world], 0),
        (vec!["inspect", "--json", &text], 1),
        (vec!["inspect", "--json", missing], 2),
        (vec!["verify", "--json", demo, matmul], 0),
        (vec!["verify", "--json", demo, &text, missing], 2),
        (vec!["load", "--json", "--quiet", demo], 0),
        (vec!["load", "--json", "--quiet", "--check", matmul], 0),
        (
            vec!["load", "--json", "--quiet", "--arch", "trn1", matmul],
            1,
        ),
        (vec!["load", "--json", "--quiet", &text], 1),
        (vec!["load", "--json", "--quiet", missing], 2),
        (vec!["load", "--json", "--quiet", "--lnc", "2", demo], 2),
        (vec!["load", "--json", "--no-such-flag", demo], 2),
        (vec!["--json"], 2),
        (vec!["--json", "frobnicate"], 2),
        (vec!["extract", "--json", demo, "-o", &tree], 0),
        (vec!["extract", "--json", missing, "-o", &tree], 2),
        (vec!["pack", "--json", &tree, "-o", &p], 0),
        (
            vec!["pack", "--json", &tree, "-o", &q, "--producer", "2.21"],
            1,
        ),
        (vec!["pack", "--json", "/nonexistent", "-o", &q], 2),
        (vec!["plan", "--json", demo], 0),
        (
            vec!["plan", "--json", "--instance", "trn2.48xlarge", &ranks],
            0,
        ),
        (
            vec![
                "plan",
                "--json",
                "--instance",
                "trn2.3xlarge",
                "--lnc",
                "1",
                &noisy,
                "--tensor",
                "kv=4GiB@1",
            ],
            1,
        ),
        (
            vec![
                "plan",
                "--json",
                "--instance",
                "trn2.48xlarge",
                &ranks,
                "--solve",
                "kv@0-63",
            ],
            0,
        ),
        (
            vec![
                "plan",
                "--json",
                "--instance",
                "trn2.3xlarge",
                "--lnc",
                "1",
                &noisy,
                "--tensor",
                "kv=22GiB@1",
                "--solve",
                "kv@2",
            ],
            1,
        ),
        (
            vec![
                "plan",
                "--json",
                "--instance",
                "trn2.48xlarge",
                &ranks,
                "--solve",
                large,
            ],
            0,
        ),
        (
            vec![
                "plan",
                "--json",
                "--monitor",
                &monitor,
                "--sysfs",
                &sysfs,
                demo,
            ],
            0,
        ),
        (vec!["plan", "--json", "--max-inflated", "1000", demo], 1),
        ([in_world("2"), vec![&w0, &w1]].concat(), 0),
        ([in_world("2"), vec![&w0, &t1]].concat(), 1),
        ([in_world("3"), vec![&w0, &w1]].concat(), 1),
        (vec!["plan", "--json", &bad_toml], 2),
        (vec!["plan", "--json", "--env", "NEURON_NOPE=1", demo], 2),
        (vec!["plan", "--json", "--tensor", "kv=2XB@0", demo], 2),
        (vec!["plan", "--json", missing], 2),
        (vec!["compare", "--json", fused, &capture], 0),
        (vec!["compare", "--json", raced, &raced_capture], 0),
        (vec!["compare", "--json", matmul, &capture], 2),
        (vec!["compare", "--json", fused, &text], 1),
        (vec!["compare", "--json", fused, missing], 2),
    ];
    for (args, code) in cases {
        let (v, got) = run(&args);
        assert_eq!(got, Some(code), "{args:?}: {v}");
        let errs = validate(&v);
        assert!(errs.is_empty(), "{args:?}:\n{}\n{v}", errs.join("\n"));
        assert_eq!(v["schema_version"], 1);
        assert_eq!(v["status_code"] == 0, code == 0, "{args:?}: {v}");
        if code != 0 {
            assert!(
                v["error"]["message"]
                    .as_str()
                    .is_some_and(|m| !m.is_empty()),
                "{args:?}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
