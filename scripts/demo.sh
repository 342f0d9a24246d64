#!/usr/bin/env bash
# Fresh Debian 12 machine: installs the Debian packages the build needs (no PyPI), builds the library and the CLI,
# and generates text with the bundled demo model.   scripts/demo.sh ["prompt"]
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO bash scripts/setup.sh
# Library and CLI only: the tests and tools need the test dependencies (scripts/setup.sh --test).
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DXPUINFER_BUILD_TESTS=OFF -DXPUINFER_BUILD_TOOLS=OFF >/dev/null
cmake --build build -j"$(nproc)" --target xpuinfer_cli >/dev/null
./build/xpuinfer generate -m examples/models/tinyfortunes -p "${1:-The meaning of life is}" -n 48
