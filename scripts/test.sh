#!/usr/bin/env bash
# Fresh Debian 12 machine: installs dependencies, builds with warnings as errors, runs the whole test suite.
#   scripts/test.sh               release build, all tests
#   scripts/test.sh --sanitize    AddressSanitizer + UndefinedBehaviorSanitizer build (tests labelled slow skipped)
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO bash scripts/setup.sh
dir=build; extra=(); ctest_extra=()
if [ "${1:-}" = "--sanitize" ]; then
  dir=build-asan; extra=(-DXPI_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug); ctest_extra=(-LE slow)
fi
cmake -S . -B "$dir" -DXPI_WERROR=ON "${extra[@]}" >/dev/null
cmake --build "$dir" -j"$(nproc)"
cd "$dir" && ctest --output-on-failure -j"$(nproc)" "${ctest_extra[@]}"
