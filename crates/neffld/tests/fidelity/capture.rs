//! The capture reader on the ten real captures, checked against facts that
//! come from elsewhere: the vendored NEFF each capture was taken of (its
//! header uuid, its own instruction records), the file names, and the
//! placement docs/reference/capture.md measured; plus the writer's round trip and
//! hostile inputs.

use std::borrow::Cow;

use neffld::capture::{self, Capture, CaptureError, CaptureUuid, Image, MemRow, Subgraph};
use neffld::container::{self, Neff, OpenOptions};
use neffld::kbin::isa::RECORD_LEN;
use neffld::manifest::EngineType;
use neffld::{Arch, NrtStatus};
use neffld_testkit as testkit;

/// Every vendored capture with the NEFF it was taken of.
fn pairs() -> Vec<(String, Vec<u8>, Neff)> {
    let mut v: Vec<(String, Vec<u8>, Neff)> = std::fs::read_dir(testkit::CAPTURES)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "ntff"))
        .map(|p| {
            let stem = p.file_stem().unwrap().to_string_lossy().to_string();
            let neff = container::open(
                &testkit::fixture(&format!("{stem}.neff")),
                &OpenOptions::default(),
            )
            .unwrap();
            (stem, std::fs::read(&p).unwrap(), neff)
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(v.len(), 10, "ten captures are vendored");
    v
}

fn engine_file(e: EngineType) -> &'static str {
    match e {
        EngineType::Pe => "PE",
        EngineType::Act => "Activation",
        EngineType::Pool => "Pool",
        EngineType::Dve => "DVE",
        EngineType::Sp => "SP",
    }
}

/// The NEFF's own instruction stream of `sg`/`engine`.
fn neff_stream<'n>(neff: &'n Neff, sg: &str, e: EngineType) -> &'n [u8] {
    let suffix = format!("{sg}/{}.bin", engine_file(e));
    neff.archive()
        .iter()
        .find(|(n, _)| n.ends_with(&suffix))
        .map(|(_, b)| b)
        .unwrap_or_else(|| panic!("no {suffix}"))
}

#[test]
fn every_capture_reads_with_its_neffs_identity() {
    for (stem, bytes, neff) in pairs() {
        let c = capture::read(&bytes).unwrap_or_else(|e| panic!("{stem}: {e}"));
        assert_eq!(c.version, 6, "{stem}");
        // The runtime saw the file under the last `__` part of its name.
        assert!(
            format!("{stem}.neff").ends_with(&format!("__{}", c.neff_name)),
            "{stem}: {}",
            c.neff_name
        );
        assert_eq!(c.uuid, CaptureUuid::Full(neff.header().uuid), "{stem}");
        assert!(c.uuid.matches(&neff.header().uuid));
        assert_eq!(c.arch(), Some(Arch::Cayman), "{stem}");
        assert_eq!(c.runtime.as_ref().unwrap().to_string(), "2.30.51", "{stem}");
        assert_eq!(c.driver.as_ref().unwrap().to_string(), "2.26.0", "{stem}");
        assert_eq!(c.instance_type.as_deref(), Some("trn2.3xlarge"));
        let names: Vec<(&str, u64)> = c
            .subgraphs
            .iter()
            .map(|s| (s.name.as_str(), s.pcore))
            .collect();
        assert_eq!(names, [("sg00", 4), ("sg01", 5)], "{stem}");
        for s in &c.subgraphs {
            let engines: Vec<EngineType> = s.images.iter().map(|i| i.engine).collect();
            assert_eq!(engines, EngineType::ALL, "{stem} {}", s.name);
            assert!(s.duration_ps.unwrap() > 0);
        }
    }
}

#[test]
fn images_hold_the_neffs_first_record_at_the_measured_slot() {
    // docs/reference/capture.md: the slot of the NEFF's first record, pe act pool dve sp.
    let first = [
        ("sg00", [67, 67, 62, 67, 50]),
        ("sg01", [66, 56, 61, 66, 49]),
    ];
    for (stem, bytes, neff) in pairs() {
        let c = capture::read(&bytes).unwrap();
        for (sg, slots) in first {
            let s = c.subgraphs.iter().find(|s| s.name == sg).unwrap();
            for (e, slot) in EngineType::ALL.into_iter().zip(slots) {
                let img = s.image(e).unwrap();
                assert_eq!(img.bytes.len() % RECORD_LEN, 0, "{stem} {sg} {e:?}");
                let rec = &neff_stream(&neff, sg, e)[..RECORD_LEN];
                let at = slot * RECORD_LEN;
                assert_eq!(
                    &img.bytes[at..at + RECORD_LEN],
                    rec,
                    "{stem} {sg} {e:?} slot {slot}"
                );
                // Images sit on 32 KiB boundaries with the bit-47 tag.
                assert_eq!(img.address % (32 << 10), 0, "{stem} {sg} {e:?}");
                assert_ne!(img.address & (1 << 47), 0, "{stem} {sg} {e:?}");
            }
        }
    }
}

#[test]
fn memory_rows_come_in_the_runtimes_order_and_engine_rows_hold_their_image() {
    let order: Vec<&str> = capture::MEMORY_ROWS.iter().map(|(n, _)| *n).collect();
    for (stem, bytes, _) in pairs() {
        let c = capture::read(&bytes).unwrap();
        for s in &c.subgraphs {
            let names: Vec<&str> = s.memory.iter().map(|r| r.name.as_str()).collect();
            assert_eq!(names, order, "{stem} {}", s.name);
            // The fixed per-engine block docs/reference/capture.md measured.
            let sp_extra = if s.name == "sg00" { 1536 } else { 1280 };
            for (e, extra) in [
                (EngineType::Pe, 1728),
                (EngineType::Act, 1344),
                (EngineType::Pool, 1728),
                (EngineType::Dve, 1344),
                (EngineType::Sp, sp_extra),
            ] {
                let row = s.row(e.key()).unwrap();
                assert_eq!(
                    row.bytes,
                    s.image(e).unwrap().bytes.len() as u64 + extra,
                    "{stem} {} {e:?}",
                    s.name
                );
            }
            assert_eq!(s.row("ucode").unwrap().bytes, 1_744_584);
            assert_eq!(s.row("pe").unwrap().usage_type(), "Tensor Instructions");
            assert_eq!(s.row("act table").unwrap().usage_type(), "Scalar Table");
        }
    }
}

#[test]
fn writer_round_trips_every_capture_in_every_version() {
    for (stem, bytes, _) in pairs() {
        let c = capture::read(&bytes).unwrap();
        let again = round(&c);
        assert_eq!(again, c, "{stem} v6");
        for version in [4, 5] {
            let mut old = c.clone();
            old.version = version;
            let w = capture::writer::write(&old).unwrap();
            let back = capture::read(&w).unwrap();
            // v4 rows are ids only: the reader names them from the order.
            let mut expect = old.clone();
            // Without field 4.5 only the C string survives: a uuid with a
            // zero byte (kfusion__baseline_fp32_s1024 has one) is cut there.
            let full = *c.uuid.full().unwrap();
            if let Some(z) = full.iter().position(|&b| b == 0) {
                expect.uuid = CaptureUuid::Prefix(full[..z].to_vec());
            }
            if version == 4 {
                for s in &mut expect.subgraphs {
                    for (i, r) in s.memory.iter_mut().enumerate() {
                        r.id = Some(i as u64);
                    }
                }
            }
            assert_eq!(back, expect, "{stem} v{version}");
        }
    }
}

/// Written and read back, detached from the written bytes.
fn round(c: &Capture<'_>) -> Capture<'static> {
    capture::read(&capture::writer::write(c).unwrap())
        .unwrap()
        .into_owned()
}

fn small(version: u8) -> Capture<'static> {
    Capture {
        version,
        neff_name: "file.neff".into(),
        uuid: CaptureUuid::Full([7; 16]),
        arch_code: 1,
        runtime: None,
        driver: None,
        collectives: None,
        instance_type: Some("trn1.2xlarge".into()),
        instance_id: None,
        capture_time: Some(1_700_000_000),
        subgraphs: vec![Subgraph {
            name: "sg00".into(),
            device: 0,
            pcore: 0,
            images: vec![Image {
                engine: EngineType::Sp,
                address: 0x1000,
                bytes: Cow::Owned(vec![0xAB; 128]),
            }],
            memory: vec![MemRow {
                id: None,
                name: "dma rings".into(),
                bytes: 64,
            }],
            duration_ps: None,
        }],
    }
}

#[test]
fn old_runtimes_single_dma_row_is_named_from_the_row_count() {
    // 19 id-only rows: id 18 is the old single `dma rings` row.
    let mut c = small(4);
    c.subgraphs[0].memory = (0..19)
        .map(|i| MemRow {
            id: Some(i),
            name: String::new(),
            bytes: i,
        })
        .collect();
    let back = round(&c);
    assert_eq!(back.arch(), Some(Arch::Sunda));
    let rows = &back.subgraphs[0].memory;
    assert_eq!(rows[18].name, "dma rings");
    assert_eq!(rows[18].usage_type(), "DMA Rings");
    assert_eq!(rows[1].name, "pe");
    // With 22 rows id 18 is the runtime's DMA ring row.
    c.subgraphs[0].memory.extend((19..22).map(|i| MemRow {
        id: Some(i),
        name: String::new(),
        bytes: 0,
    }));
    let back = round(&c);
    assert_eq!(back.subgraphs[0].memory[18].name, "dma rings runtime");
    // An id past the list (a newer runtime) is kept, named by its number.
    c.subgraphs[0].memory.push(MemRow {
        id: Some(40),
        name: String::new(),
        bytes: 5,
    });
    let back = round(&c);
    let last = back.subgraphs[0].memory.last().unwrap();
    assert_eq!(
        (last.name.as_str(), last.usage_type(), last.bytes),
        ("id 40", "id 40", 5)
    );
}

#[test]
fn uuid_c_string_caveat() {
    // Field 2 cut at a zero inside the uuid: only a prefix is known.
    let mut c = small(5);
    c.uuid = CaptureUuid::Prefix(vec![1, 2, 3]);
    let back = round(&c);
    assert_eq!(back.uuid, CaptureUuid::Prefix(vec![1, 2, 3]));
    let mut u = [9u8; 16];
    u[..4].copy_from_slice(&[1, 2, 3, 0]);
    assert!(back.uuid.matches(&u));
    u[3] = 4;
    assert!(
        !back.uuid.matches(&u),
        "the byte after the prefix must be the zero"
    );
    // v6 repeats the whole uuid, which wins over field 2's junk.
    let mut c = small(6);
    c.uuid = CaptureUuid::Full([0x11; 16]);
    let mut bytes = capture::writer::write(&c).unwrap();
    // Replace field 2's 16 bytes by 16 + junk with no zero (the real shape).
    let at = bytes
        .windows(18)
        .position(|w| w[0] == 0x12 && w[1] == 16 && w[2..] == [0x11; 16])
        .unwrap();
    bytes[at + 1] = 18;
    bytes.splice(at + 18..at + 18, [0x24, 0x1a]);
    let meta = u32::from_le_bytes(bytes[1..5].try_into().unwrap()) + 2;
    bytes[1..5].copy_from_slice(&meta.to_le_bytes());
    assert_eq!(
        capture::read(&bytes).unwrap().uuid,
        CaptureUuid::Full([0x11; 16])
    );
}

/// A NEFF or the profiler's JSON report given where the capture goes is
/// named as what it is: its first byte read as an NTFF version ("NTFF
/// version 2", the NEFF's packager; "123", a `{`) sent a reader looking
/// for an older profiler.
#[test]
fn what_is_not_a_capture_is_named() {
    let neff = testkit::fixture("kfusion__fused_attention__fused.neff");
    let e = capture::read(&neff).unwrap_err();
    assert!(
        e.to_string()
            .ends_with("; this is a NEFF, not a capture (give the NEFF first, then its capture)"),
        "{e}"
    );
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/captures");
    let json = std::fs::read(dir.join("kfusion__fused_attention__fused.profile.json")).unwrap();
    let e = capture::read(&json).unwrap_err();
    assert!(
        e.to_string().contains("this is JSON text, not a capture"),
        "{e}"
    );
}

#[test]
fn hostile_captures_are_named_errors() {
    let good = capture::writer::write(&small(6)).unwrap();
    let err = |b: &[u8]| capture::read(b).unwrap_err();
    assert_eq!(err(&good[..10]), CaptureError::TooShort { len: 10 });
    let mut b = good.clone();
    b[0] = 7;
    assert_eq!(
        err(&b),
        CaptureError::UnsupportedVersion {
            version: 7,
            what: None
        }
    );
    let mut b = good.clone();
    b[1..5].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(err(&b), CaptureError::MetadataOverrun { .. }));
    // The v6 image points past the data area.
    let cut = &good[..good.len() - 1];
    let e = err(cut);
    assert!(
        matches!(&e, CaptureError::ImageOutOfBounds { path, size: 128, .. } if path == "metadata.4.4.1[0].4[0]"),
        "{e}"
    );
    assert_eq!(e.status(), NrtStatus::Invalid);
    // Every truncation of the metadata is an error or a smaller capture, never a panic.
    let n = u32::from_le_bytes(good[1..5].try_into().unwrap()) as usize;
    for cut in 0..n {
        let mut b = good[..0x80 + cut].to_vec();
        b[1..5].copy_from_slice(&(cut as u32).to_le_bytes());
        let _ = capture::read(&b).map_err(|e| e.to_string());
    }
    // A bad engine index names the field.
    let mut c = small(5);
    c.subgraphs[0].images[0].bytes = Cow::Owned(vec![]);
    let mut b = capture::writer::write(&c).unwrap();
    let at = b.windows(2).position(|w| w == [0x08, 0x04]).unwrap();
    b[at + 1] = 9;
    assert!(matches!(err(&b), CaptureError::BadEngine { value: 9, .. }));
}

#[test]
fn unknown_fields_of_every_wire_type_are_skipped() {
    use neffld::capture::wire::{put, Value};
    let c = small(6);
    let good = capture::writer::write(&c).unwrap();
    let n = u32::from_le_bytes(good[1..5].try_into().unwrap()) as usize;
    let mut meta = good[0x80..0x80 + n].to_vec();
    put(&mut meta, 99, Value::Fixed64(1));
    put(&mut meta, 98, Value::Fixed32(2));
    put(&mut meta, 97, Value::Bytes(b"\xff\xff"));
    put(&mut meta, 96, Value::Varint(u64::MAX));
    let mut b = good[..0x80].to_vec();
    b[1..5].copy_from_slice(&(meta.len() as u32).to_le_bytes());
    b.extend_from_slice(&meta);
    b.extend_from_slice(&good[0x80 + n..]);
    assert_eq!(capture::read(&b).unwrap(), c);
}

#[test]
fn every_byte_of_a_real_metadata_message_mutated_is_read_or_refused() {
    // A deterministic sweep through the fuzz target's body: each metadata
    // byte of one real capture set to 0x00 and flipped in its top bit.
    let bytes = std::fs::read(format!(
        "{}/kfusion__fused_attention__fused.ntff",
        testkit::CAPTURES
    ))
    .unwrap();
    let n = u32::from_le_bytes(bytes[1..5].try_into().unwrap()) as usize;
    let (mut ok, mut refused) = (0, 0);
    let mut b = bytes.clone();
    for i in 0..0x80 + n {
        for v in [0x00, bytes[i] ^ 0x80] {
            b[i] = v;
            match testkit::fuzz_capture(&b) {
                None => ok += 1,
                Some(_) => refused += 1,
            }
        }
        b[i] = bytes[i];
    }
    assert!(ok > 0 && refused > 0, "{ok} read, {refused} refused");
}
