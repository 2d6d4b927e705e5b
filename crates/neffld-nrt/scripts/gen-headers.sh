#!/usr/bin/env bash
# Regenerates include/nrt/*.h with the pinned cbindgen, or with --check
# verifies that the committed headers are what it produces now (exit 1 and a
# diff when stale). With --install, installs the pinned cbindgen first when
# it is missing.
#
# Each header is generated from its leaf declarations (src/abi/<header>.rs)
# and the domain modules holding its functions, fed to cbindgen as one file
# (module-level doc comments and attributes removed); the configuration is
# cbindgen/<header>.toml.
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
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if [ "$mode" = check ]; then
  out="$work/out"
  mkdir -p "$out"
fi

cd "$crate"
# header : sources (declarations first, then the domain modules)
headers=(
  "nrt_status:src/abi/nrt_status.rs src/status.rs"
  "nrt:src/abi/nrt.rs src/runtime.rs src/model.rs src/tensor.rs src/tensor_ops.rs src/tensor_set.rs src/execute.rs src/device.rs"
  "nrt_experimental:src/abi/nrt_experimental.rs src/model_info.rs src/experimental.rs"
  "nrt_version:src/abi/nrt_version.rs src/version.rs"
  "nrt_profile:src/profile.rs"
  "nrt_sys_trace:src/trace.rs"
  "nrt_async:src/abi/nrt_async.rs src/nrta.rs"
  "nrt_async_sendrecv:src/sendrecv.rs"
  "ndebug_stream:src/abi/ndebug_stream.rs src/debug_stream.rs"
  "nec:src/abi/nec.rs src/nec.rs"
)
for spec in "${headers[@]}"; do
  name="${spec%%:*}"
  read -r -a sources <<<"${spec#*:}"
  grep -hv -e '^//!' -e '^#!\[' "${sources[@]}" >"$work/$name.rs"
  # Types defined in a sibling header are reported as unknown; that is expected.
  cbindgen --quiet --config "cbindgen/$name.toml" --output "$out/$name.h" "$work/$name.rs"
  # A trailing `[T; 0]` is the SDK's flexible array member (`T name[];`):
  # cbindgen writes `name[0]`, which ISO C refuses under -pedantic.
  sed -i -E 's/^(  [^;]*[A-Za-z0-9_])\[0\];$/\1[];/' "$out/$name.h"
done

if [ "$mode" = check ]; then
  if ! diff -ru "$crate/include/nrt" "$out"; then
    echo "include/nrt is stale: run crates/neffld-nrt/scripts/gen-headers.sh and commit the result" >&2
    exit 1
  fi
  echo "include/nrt headers are up to date"
fi
