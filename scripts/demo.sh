#!/usr/bin/env bash
# Fresh Debian 12 machine: installs dependencies, builds, and generates text with the bundled demo model.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
./build/xpuinfer generate -m examples/models/tinyfortunes -p "${1:-The meaning of life is}" -n 48
