#!/usr/bin/env bash
# Regenerates include/nrt/{nrt_status,nrt,nrt_experimental}.h from src/abi/*.rs
# with the pinned cbindgen, or with --check verifies that the committed headers
# are what the pinned cbindgen produces now (exit 1 and a diff when stale).
# With --install, installs the pinned cbindgen first when it is missing.
set -euo pipefail

CBINDGEN_VERSION=0.29.4
crate="$(cd "$(dirname "$0")/.." && pwd)"
mode=write
install=no
for arg in "$@"; do
  case "$arg" in
    --check) mode=check ;;
    --install) install=yes ;;
    *) echo "usage: $0 [--check] [--install]" >&2; exit 2 ;;
  esac
done

have_pinned() {
  command -v cbindgen >/dev/null 2>&1 &&
    [ "$(cbindgen --version 2>/dev/null)" = "cbindgen $CBINDGEN_VERSION" ]
}
if ! have_pinned; then
  if [ "$install" = yes ]; then
    cargo install cbindgen --version "$CBINDGEN_VERSION" --locked
  else
    echo "cbindgen $CBINDGEN_VERSION is required (run with --install, or: cargo install cbindgen --version $CBINDGEN_VERSION --locked)" >&2
    exit 1
  fi
fi

out="$crate/include/nrt"
if [ "$mode" = check ]; then
  out="$(mktemp -d)"
  trap 'rm -rf "$out"' EXIT
fi

cd "$crate"
# header name : config : source
for spec in nrt_status:cbindgen-status.toml:src/abi/nrt_status.rs \
            nrt:cbindgen-nrt.toml:src/abi/nrt.rs \
            nrt_experimental:cbindgen-experimental.toml:src/abi/nrt_experimental.rs; do
  IFS=: read -r name config src <<<"$spec"
  # Types defined in a sibling header are reported as unknown; that is expected.
  cbindgen --quiet --config "$config" --output "$out/$name.h" "$src"
done

if [ "$mode" = check ]; then
  if ! diff -ru "$crate/include/nrt" "$out"; then
    echo "include/nrt is stale: run crates/neffld-nrt/scripts/gen-headers.sh and commit the result" >&2
    exit 1
  fi
  echo "include/nrt headers are up to date"
fi
