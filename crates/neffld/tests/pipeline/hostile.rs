//! Loads of hostile NEFFs on a hostile machine: sizes a NEFF chooses that
//! no device holds, alignments no address meets, host memory that runs
//! out (issue 23's reproducers, each a test that failed before its fix).

use neffld::api::{LoadError, Runtime};
use neffld::config::{RuntimeConfig, Topology};
use neffld::container::writer::Producer;
use neffld::{Arch, NrtStatus};
use neffld_testkit::Synth;
use serde_json::json;

fn sunda() -> RuntimeConfig {
    RuntimeConfig {
        topology: Topology {
            arch: Arch::Sunda,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Loads `s` (a trn1 NEFF) on a fresh trn1 runtime of `config`.
fn load(s: &Synth, config: RuntimeConfig) -> Result<(), LoadError> {
    let rt = Runtime::new(config).unwrap();
    let m = rt.load(&s.write(Producer::V2_18), None)?;
    rt.unload(&m).unwrap();
    Ok(())
}

/// What a load says when `spill_b` sits `offset` bytes into the scratchpad,
/// checked to be the device's refusal for want of room and to contain
/// every one of `parts`.
fn assert_scratchpad_refusal(offset: u64, parts: &[&str]) {
    let mut s = Synth::static_sunda();
    s.edit("sg00/def.json", |v| {
        v["var"]["spill_b"]["backing_variable_off"] = json!(offset)
    });
    let e = load(&s, sunda()).unwrap_err();
    assert_eq!(e.status(), NrtStatus::Resource);
    let text = e.to_string();
    for part in parts {
        assert!(text.contains(part), "{part}: {text}");
    }
}

/// A virtual variable placed 2^63 bytes into the scratchpad: the refusal
/// names the variable that asked, its subgraph and its core, not only a
/// page count.
#[test]
fn a_scratchpad_offset_past_any_device_names_the_variable() {
    assert_scratchpad_refusal(
        1 << 63,
        &[
            "Number of scratchpad pages requested exceeded the max",
            "spill_b",
            "sg00",
            "nc0",
            "backing_variable_off 9223372036854775808",
        ],
    );
}

/// A virtual variable 16 GiB into the scratchpad needs fewer pages than the
/// limit but more than the HBM holds: the device refuses a page part-way,
/// and the refusal names the variable, its subgraph and its core as the
/// page limit's does.
#[test]
fn a_scratchpad_the_device_cannot_hold_names_the_variable() {
    assert_scratchpad_refusal(
        16 << 30,
        &[
            "Failed to allocate virtual scratchpad!",
            "out of device memory",
            "spill_b",
            "sg00",
            "nc0",
            "backing_variable_off 17179869184",
        ],
    );
}

/// An alignment of 2^63 is met by no address of any channel: the request
/// is malformed (`NRT_INVALID`), not a device out of memory, and the
/// message names the variable, its subgraph and its core.
#[test]
fn an_alignment_no_address_meets_is_invalid_not_out_of_memory() {
    let mut s = Synth::static_sunda();
    s.edit("sg00/def.json", |v| {
        v["var"]["identity_1"]["alignment"] = json!(1u64 << 63)
    });
    let e = load(&s, sunda()).unwrap_err();
    let text = e.to_string();
    assert_eq!(e.status(), NrtStatus::Invalid, "{text}");
    assert!(!text.contains("out of device memory"), "{text}");
    for part in ["identity_1", "sg00", "nc0", "alignment 9223372036854775808"] {
        assert!(text.contains(part), "{part}: {text}");
    }
}
