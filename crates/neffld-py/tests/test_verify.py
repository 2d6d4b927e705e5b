"""neffld.verify: the verdict and every problem, hash required."""

import hashlib

import pytest

import neffld
from conftest import ALL, PAYLOAD, SMALL


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem)
def test_every_real_fixture_is_sound(path):
    report = neffld.verify(path)
    assert report.ok and bool(report) and report.verdict == "ok"
    assert report.problems == []
    assert (report.status, report.status_name) == (0, "NRT_SUCCESS")
    assert report.gates == ["container", "parse", "stage", "validate"]
    assert report.hash_algorithm == "md5"
    # The header digest is the payload's MD5, stored plain or word-swapped.
    data = path.read_bytes()
    size = int.from_bytes(data[0x10:0x18], "little")
    md5 = hashlib.md5(data[PAYLOAD : PAYLOAD + size]).digest()
    stored = data[0xAC:0xBC]
    swapped = b"".join(md5[i : i + 4][::-1] for i in range(0, 16, 4))
    assert stored in (md5, swapped)
    assert report.hash_result == ("plain" if stored == md5 else "word-swapped")


def test_a_digest_mismatch_is_reported_and_the_other_gates_still_run(small_bytes):
    data = bytearray(small_bytes)
    data[0xAC] ^= 0xFF  # the stored digest, not the payload
    report = neffld.verify(bytes(data))
    assert not report.ok and not bool(report) and report.verdict == "fail"
    assert report.hash_result == "mismatch"
    assert [(p.stage, p.status, p.status_name) for p in report.problems] == [
        ("container", 2, "NRT_INVALID")
    ]
    assert "mismatch" in report.problems[0].message.lower()
    assert (report.status, report.status_name) == (2, "NRT_INVALID")
    # The container gate refused it (the digest is its); the others passed.
    assert report.gates == ["parse", "stage", "validate"]
    # inspect does not require the hash, as nrt_load by default.
    assert neffld.inspect(bytes(data)).target == "trn2"


def test_a_corrupt_payload_gives_the_digest_and_the_inflate_problem(small_bytes):
    data = bytearray(small_bytes)
    for i in range(PAYLOAD + 200, PAYLOAD + 400):
        data[i] ^= 0x5A
    report = neffld.verify(bytes(data))
    assert not report.ok
    assert len(report.problems) >= 2
    assert report.problems[0].status_name == "NRT_INVALID"
    assert all(p.stage == "container" for p in report.problems)
    assert "parse" not in report.gates


def test_a_header_that_does_not_parse_is_one_problem():
    report = neffld.verify(b"\0" * 100)
    assert not report.ok
    assert [(p.stage, p.status) for p in report.problems] == [("container", 2)]
    assert report.gates == []


def test_a_gate_the_load_refuses_is_not_passed(monkeypatch):
    # trn1 cannot take matmul_small's logical-core size: the load's
    # container gate refuses it, though the file reads.
    monkeypatch.setenv("NEFFLD_ARCH", "trn1")
    report = neffld.verify(SMALL)
    assert [p.stage for p in report.problems] == ["container"]
    assert report.gates == []
    assert repr(report) == "VerifyReport(ok=False, 1 problem(s), gates=[])"


def test_verify_without_staging_stops_after_parse():
    assert neffld.verify(SMALL, stage=False).gates == ["container", "parse"]


def test_an_unreadable_input_raises(tmp_path):
    with pytest.raises(neffld.NeffError) as e:
        neffld.verify(tmp_path / "none.neff")
    assert (e.value.status, e.value.stage) == (1, "io")
