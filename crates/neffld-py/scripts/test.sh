#!/usr/bin/env bash
# Builds the Python package into a fresh virtual environment exactly as a
# user would (`pip install ./crates/neffld-py`, maturin fetched from PyPI as
# the build backend) and runs its pytest suite on the real fixtures.
# Exits non-zero if the install or any test fails.
#
#   crates/neffld-py/scripts/test.sh [pytest args...]
#
# PYTHON picks the interpreter (default: python3, 3.11 or later).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
# The venv goes where cargo builds (CARGO_TARGET_DIR, or the workspace's
# target directory), never into a checkout whose build is elsewhere.
target="$(cargo metadata --format-version 1 --no-deps --manifest-path "$root/Cargo.toml" |
  sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
venv="$target/py-venv"
python="${PYTHON:-python3}"

export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
rm -rf "$venv"
"$python" -m venv "$venv"
start=$(date +%s)
# numpy is not named: the package's own dependency must bring it.
echo "neffld-py: building the package (a release build of the library, minutes; pip install -v shows cargo's progress)"
"$venv/bin/python" -m pip install --quiet "$root/crates/neffld-py" pytest
"$venv/bin/python" -c 'import numpy' || { echo "neffld-py: the package did not bring numpy" >&2; exit 1; }
# Test-only: an independent bfloat16 conversion to check tensor_cast against.
"$venv/bin/python" -m pip install --quiet ml_dtypes
echo "neffld-py: fresh-venv install took $(($(date +%s) - start)) s"

cd "$root"
# pytest's cache and Python's bytecode go there too.
PYTHONPYCACHEPREFIX="$target/py-cache" \
  "$venv/bin/python" -m pytest -q -o cache_dir="$target/pytest-cache" crates/neffld-py/tests "$@"
