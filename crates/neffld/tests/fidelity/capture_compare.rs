//! Comparing captures with what neffld staged: the alignment of a capture's
//! images against the NEFF's own records reproduces the placement
//! docs/reference/capture.md measured; a capture compared with itself agrees, and with
//! a writer-built variant reports exactly the injected difference; neffld
//! rewrites and deletes as many records as the real runtime did.

use std::borrow::Cow;
use std::collections::BTreeMap;

use neffld::capture::{self, Capture};
use neffld::container::{self, OpenOptions};
use neffld::kbin::isa::{OP_PSEUDO_BRANCH_LABEL, RECORD_LEN};
use neffld::manifest::{EngineType, ParseOptions};
use neffld::report::align::{align, Fate};
use neffld::report::compare::{self, neff_streams};
use neffld::report::staged::from_capture as staged_from_capture;
use neffld::{parse, Arch};
use neffld_testkit as testkit;

struct Case {
    stem: String,
    neff: Vec<u8>,
    capture: Vec<u8>,
}

fn cases() -> Vec<Case> {
    let mut v: Vec<Case> = std::fs::read_dir(testkit::CAPTURES)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "ntff"))
        .map(|p| {
            let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
            Case {
                neff: testkit::fixture(&format!("{stem}.neff")),
                capture: std::fs::read(&p).unwrap(),
                stem,
            }
        })
        .collect();
    v.sort_by(|a, b| a.stem.cmp(&b.stem));
    assert_eq!(v.len(), 10);
    v
}

/// The NEFF's streams, owned.
fn streams(neff: &[u8]) -> BTreeMap<(String, EngineType), Vec<u8>> {
    let n = container::open(neff, &OpenOptions::default()).unwrap();
    let p = parse::parse(&n, &ParseOptions::new(Arch::Cayman, 2)).unwrap();
    neff_streams(&n, &p)
        .into_iter()
        .map(|(k, v)| (k, v.to_vec()))
        .collect()
}

fn borrowed(s: &BTreeMap<(String, EngineType), Vec<u8>>) -> BTreeMap<(String, EngineType), &[u8]> {
    s.iter().map(|(k, v)| (k.clone(), &v[..])).collect()
}

#[test]
fn alignment_reproduces_the_measured_placement() {
    // docs/reference/capture.md: the first record's slot (pe act pool dve sp) and 11
    // slots after the last kept record (9 for sp), the 0xCC label deleted.
    let first = [
        ("sg00", [67, 67, 62, 67, 50]),
        ("sg01", [66, 56, 61, 66, 49]),
    ];
    for case in cases() {
        let c = capture::read(&case.capture).unwrap();
        let streams = streams(&case.neff);
        for (sg, slots) in first {
            let s = c.subgraphs.iter().find(|s| s.name == sg).unwrap();
            for (e, slot) in EngineType::ALL.into_iter().zip(slots) {
                let img = s.image(e).unwrap();
                let stream = &streams[&(sg.to_string(), e)];
                let a = align(&img.bytes, stream);
                let what = format!("{} {sg} {e:?}", case.stem);
                assert_eq!(a.preamble_slots, slot, "{what}");
                let post = if e == EngineType::Sp { 9 } else { 11 };
                assert_eq!(a.postamble_slots, post, "{what}");
                let r = &a.records;
                assert_eq!(r.fates.len() * RECORD_LEN, stream.len(), "{what}");
                assert_eq!(a.main_slots, r.kept() + r.rewritten(), "{what}");
                assert_eq!(
                    (a.preamble_slots + a.main_slots + a.postamble_slots) as usize * RECORD_LEN,
                    img.bytes.len(),
                    "{what}"
                );
                // Every label is deleted; every kept record is byte-equal where it sits.
                for (i, f) in r.fates.iter().enumerate() {
                    let rec = &stream[i * RECORD_LEN..][..RECORD_LEN];
                    if rec[0] == OP_PSEUDO_BRANCH_LABEL {
                        assert_eq!(*f, Fate::Deleted, "{what} record {i}");
                    }
                    if let Fate::Kept(at) = f {
                        assert_eq!(&img.bytes[*at as usize * RECORD_LEN..][..RECORD_LEN], rec);
                    }
                }
            }
        }
    }
}

#[test]
fn a_capture_compared_with_itself_agrees() {
    for case in cases().iter().take(3) {
        let c = capture::read(&case.capture).unwrap();
        let owned = streams(&case.neff);
        let s = borrowed(&owned);
        let cmp = compare::compare(&c, &staged_from_capture(&c, &s), &s);
        assert!(cmp.agrees(), "{}: {cmp:?}", case.stem);
        assert_eq!(cmp.cores.len(), 2);
        assert!(cmp.cores.iter().all(|k| k.memory.len() == 22));
    }
}

#[test]
fn a_modified_capture_reports_exactly_the_injected_differences() {
    let case = &cases()[0];
    let c = capture::read(&case.capture).unwrap();
    let owned = streams(&case.neff);
    let s = borrowed(&owned);
    // The variant: one row changed, one image moved, one word of a
    // rewritten act record changed; written and read back.
    let mut m: Capture<'static> = c.clone().into_owned();
    let sg0 = &mut m.subgraphs[0];
    sg0.memory
        .iter_mut()
        .find(|r| r.name == "act table")
        .unwrap()
        .bytes += 64;
    sg0.images[EngineType::Pe.index()].address += 0x8000;
    let act = &sg0.images[EngineType::Act.index()];
    let a = align(&act.bytes, s[&(sg0.name.clone(), EngineType::Act)]);
    let slot = a
        .records
        .fates
        .iter()
        .find_map(|f| match f {
            Fate::Rewritten(s) => Some(*s as usize),
            _ => None,
        })
        .expect("sg00 act has rewritten records");
    let mut bytes = act.bytes.to_vec();
    bytes[slot * RECORD_LEN + 16] ^= 0xff;
    sg0.images[EngineType::Act.index()].bytes = Cow::Owned(bytes);
    // And one byte of dve's preamble: runtime code no record comparison
    // sees, only the comparison of every word.
    let dve = &sg0.images[EngineType::Dve.index()];
    let mut bytes = dve.bytes.to_vec();
    bytes[3] ^= 0x01;
    sg0.images[EngineType::Dve.index()].bytes = Cow::Owned(bytes);
    let written = capture::writer::write(&m).unwrap();
    let m = capture::read(&written).unwrap();

    let cmp = compare::compare(&c, &staged_from_capture(&m, &s), &s);
    assert!(!cmp.agrees());
    let core0 = &cmp.cores[0];
    let bad_rows: Vec<&str> = core0
        .memory
        .iter()
        .filter(|r| !r.equal())
        .map(|r| r.usage_type.as_str())
        .collect();
    assert_eq!(bad_rows, ["Scalar Table"]);
    let bad_images: Vec<EngineType> = core0
        .images
        .iter()
        .filter(|i| !i.agrees())
        .map(|i| i.engine)
        .collect();
    assert_eq!(
        bad_images,
        [EngineType::Pe, EngineType::Act, EngineType::Dve]
    );
    let words_off: Vec<(EngineType, u32)> = core0
        .images
        .iter()
        .map(|i| (i.engine, i.words - i.words_equal))
        .filter(|&(_, n)| n > 0)
        .collect();
    assert_eq!(
        words_off,
        [(EngineType::Act, 1), (EngineType::Dve, 1)],
        "the moved pe image keeps its bytes"
    );
    let dve = &core0.images[3];
    assert_eq!(
        dve.rewritten_words, dve.rewritten_words_equal,
        "no record changed"
    );
    let pe = &core0.images[0];
    assert_eq!(
        pe.ours.as_ref().unwrap().address,
        pe.capture.as_ref().unwrap().address + 0x8000
    );
    let act = &core0.images[1];
    assert_eq!(
        act.same_fate, act.records,
        "a changed word keeps the record rewritten"
    );
    assert_eq!(act.rewritten_words - act.rewritten_words_equal, 1);
    assert!(cmp.cores[1].agrees(), "the other core is untouched");
}

#[test]
fn neffld_rewrites_and_deletes_as_many_records_as_the_runtime() {
    for case in cases() {
        let c = capture::read(&case.capture).unwrap();
        let (cmp, ours) = compare::load_and_compare(&case.neff, &c).unwrap();
        let pcores: Vec<u32> = ours.cores.iter().map(|k| k.pcore).collect();
        assert_eq!(
            pcores,
            [4, 5],
            "{}: loaded on the capture's logical core",
            case.stem
        );
        for core in &cmp.cores {
            assert_eq!(core.pcore_ours.map(u64::from), core.pcore_capture);
            for i in &core.images {
                let (o, t) = (i.ours.as_ref().unwrap(), i.capture.as_ref().unwrap());
                assert_eq!(
                    o.rewritten + o.deleted,
                    t.rewritten + t.deleted,
                    "{} {} {:?}: ours {o:?} capture {t:?}",
                    case.stem,
                    core.subgraph,
                    i.engine
                );
            }
        }
    }
}

#[test]
fn our_patches_and_the_alignment_of_our_own_bytes_agree() {
    // Two derivations of our records' fates: the relocation's patch list,
    // and `align` run over the bytes read back from the device.
    for case in cases().iter().take(4) {
        let c = capture::read(&case.capture).unwrap();
        let owned = streams(&case.neff);
        let (_, ours) = compare::load_and_compare(&case.neff, &c).unwrap();
        for core in &ours.cores {
            for img in &core.images {
                let a = align(&img.bytes, &owned[&(core.subgraph.clone(), img.engine)]);
                let what = format!("{} {} {:?}", case.stem, core.subgraph, img.engine);
                assert_eq!(a.records.kept(), img.records.kept(), "{what}");
                assert_eq!(a.records.deleted(), img.records.deleted(), "{what}");
                assert_eq!(a.records.rewritten(), img.records.rewritten(), "{what}");
                assert_eq!(a.preamble_slots, img.preamble_slots, "{what}");
            }
        }
    }
}

#[test]
fn a_load_written_as_a_capture_reads_back_and_compares_equal() {
    let case = &cases()[5];
    let c = capture::read(&case.capture).unwrap();
    let owned = streams(&case.neff);
    let s = borrowed(&owned);
    let (load, ours) = compare::load_and_compare(&case.neff, &c).unwrap();
    let mine = ours.to_capture();
    let bytes = capture::writer::write(&mine).unwrap();
    let back = capture::read(&bytes).unwrap();
    assert_eq!(back, mine);
    assert_eq!(back.arch(), Some(Arch::Cayman));
    // Our capture against our load: everything agrees, the fates placed by
    // alignment included.
    let cmp = compare::compare(&back, &ours.cores, &s);
    assert!(cmp.agrees(), "{cmp:?}");
    // And against the real capture it agrees or differs as the load does.
    let real = compare::compare(&c, &staged_from_capture(&back, &s), &s);
    assert_eq!(real.agrees(), load.agrees());
}

/// The two cores' pool and sp images hold each other's addresses in five
/// of the ten captures: the runtime's own race (docs/decisions.md), reported
/// as such and not as a disagreement, so all ten agree. Only a swap between
/// the cores of the racing engines counts as the race.
#[test]
fn the_pool_sp_race_is_reported_as_the_race_and_all_ten_agree() {
    use neffld::report::compare::{load_and_compare, AddressMatch};
    let mut raced_captures = 0;
    for case in cases() {
        let cap = capture::read(&case.capture).unwrap();
        let (cmp, _) = load_and_compare(&case.neff, &cap).unwrap();
        assert!(cmp.agrees(), "{}", case.stem);
        let mut raced = Vec::new();
        for core in &cmp.cores {
            for i in &core.images {
                match i.address {
                    AddressMatch::Same => {}
                    AddressMatch::Raced => raced.push((core.subgraph.clone(), i.engine)),
                    AddressMatch::Differs => panic!("{} {:?}", case.stem, i.engine),
                }
            }
        }
        if !raced.is_empty() {
            raced_captures += 1;
            raced.sort();
            assert_eq!(
                raced,
                [
                    ("sg00".into(), EngineType::Pool),
                    ("sg00".into(), EngineType::Sp),
                    ("sg01".into(), EngineType::Pool),
                    ("sg01".into(), EngineType::Sp)
                ],
                "{}",
                case.stem
            );
        }
    }
    assert_eq!(raced_captures, 5);
}

/// An address that is neither the capture's nor a swap with the other
/// core's image of a racing engine differs.
#[test]
fn an_address_moved_elsewhere_differs() {
    use neffld::report::compare::{load_and_compare, AddressMatch};
    let case = &cases()[0];
    let mut cap = capture::read(&case.capture).unwrap().into_owned();
    let pe = cap.subgraphs[0]
        .images
        .iter_mut()
        .find(|i| i.engine == EngineType::Pe)
        .unwrap();
    pe.address += 0x8000;
    let (cmp, _) = load_and_compare(&case.neff, &cap).unwrap();
    assert!(!cmp.agrees());
    let image = cmp.cores[0]
        .images
        .iter()
        .find(|i| i.engine == EngineType::Pe)
        .unwrap();
    assert_eq!(image.address, AddressMatch::Differs);
}

/// A capture names the NEFF it was taken of (its uuid and name): compared
/// with another NEFF it is refused, naming both, instead of producing a
/// wall of differences.
#[test]
fn a_capture_of_another_neff_is_refused() {
    use neffld::report::compare::{load_and_compare, CompareError};
    let cases = cases();
    let cap = capture::read(&cases[0].capture).unwrap();
    for other in [cases[1].neff.clone(), testkit::fixture("matmul_small.neff")] {
        let e = load_and_compare(&other, &cap).unwrap_err();
        assert!(matches!(e, CompareError::OtherNeff { .. }), "{e}");
        let text = e.to_string();
        assert!(text.contains(&cap.neff_name), "{text}");
        assert!(text.contains("uuid"), "{text}");
        assert_eq!(e.status(), neffld::NrtStatus::Invalid);
    }
}
