"""Shared helpers: the vendored real fixtures, and an independent reader of
a NEFF's archive (Python's own gzip/tarfile) to check facts against."""

import io
import json
import tarfile
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[3] / "testdata" / "fixtures"
ALL = sorted(FIXTURES.glob("*.neff"))
KFUSION = sorted(FIXTURES.glob("kfusion__*.neff"))
SMALL = FIXTURES / "matmul_small.neff"
LARGE = FIXTURES / "matmul_large.neff"

# Header offsets of the public NEFF layout (spec/parse.md §2.1).
UUID = slice(0xCC, 0xDC)
NAME = slice(0xDC, 0x1DC)
VERSION_MAJOR = 0x18
PAYLOAD = 0x400


def members(path):
    """Archive members of a NEFF, read with the standard library only."""
    data = Path(path).read_bytes()
    tar = tarfile.open(fileobj=io.BytesIO(data[PAYLOAD:]), mode="r:*")
    out = {}
    for m in tar.getmembers():
        if m.isfile():
            out[m.name.removeprefix("./")] = tar.extractfile(m).read()
    return out


def neff_json(path):
    return json.loads(members(path)["neff.json"])


@pytest.fixture(scope="session")
def small_bytes():
    return SMALL.read_bytes()


def pytest_collection_modifyitems(items):
    # The fixtures are vendored; a missing one is a failure, never a skip.
    assert len(ALL) == 12, f"expected the 12 real fixtures under {FIXTURES}"
