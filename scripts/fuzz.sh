#!/usr/bin/env bash
# Runs the libFuzzer harnesses of tests/fuzz for longer than CI does (CI: 25 s each, in scripts/test.sh --fuzz).
#   scripts/fuzz.sh [SECONDS_EACH] [NAME...]     default 600 s each; every harness, or those named (fuzz_hub ...)
# Builds build-fuzz with clang-15 (ASan + UBSan + libFuzzer; Debian: clang-15, libclang-common-15-dev), then
# runs the harnesses' ctests (fuzz/NAME_corpus, fuzz/NAME) as many at a time as there are cores. New inputs
# accumulate in build-fuzz/fuzz-corpus/NAME between runs; a crash fails that harness and leaves the input in
# build-fuzz/fuzz-artifacts/ (reproduce: build-fuzz/tests/fuzz/NAME FILE). Fix the bug, then commit the input
# into the harness's tests/fuzz/corpus/ folder so that every CI run replays it.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-600}
shift || true
CC=clang-15 cmake -S . -B build-fuzz -DXPUINFER_FUZZ=ON -DXPI_FUZZ_SECONDS="$secs" -DXPUINFER_XPU=OFF \
  -DXPUINFER_BUILD_TESTS=OFF -DXPUINFER_BUILD_TOOLS=OFF -DXPUINFER_BUILD_CLI=OFF -DXPUINFER_INSTALL=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz -j"$(nproc)"
filter=()
if [ $# -gt 0 ]; then
  re=$(printf '|%s' "$@")
  filter=(-R "^fuzz/(${re:1})(_corpus)?\$")
fi
cd build-fuzz && ctest -L fuzz -j"$(nproc)" --output-on-failure "${filter[@]}"
