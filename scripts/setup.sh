#!/usr/bin/env bash
# Installs what libxpuinfer needs to build and test on Debian 12. Idempotent; run as root.
set -euo pipefail
APT_PKGS=(build-essential cmake pkg-config git ca-certificates
  libze-dev libze1 libcjson-dev libcurl4-openssl-dev libssl-dev libpcre2-dev libutf8proc-dev
  clang-15 llvm-15 llvm-spirv-15 spirv-tools
  pocl-opencl-icd ocl-icd-opencl-dev opencl-headers ocl-icd-libopencl1
  python3 python3-venv python3-pip)
missing=()
for p in "${APT_PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# Python references for tests only (never used by the library): a private venv.
VENV="${XPI_VENV:-$(cd "$(dirname "$0")/.." && pwd)/.venv}"
if [ ! -x "$VENV/bin/python" ]; then /usr/bin/python3 -m venv "$VENV"; fi
"$VENV/bin/python" -c "import tokenizers, numpy, safetensors" 2>/dev/null || \
  "$VENV/bin/pip" install -q "tokenizers==0.23.2" numpy safetensors
# jinja2 renders the real chat templates as transformers does (tests/tokenizer/test_chat_template.py)
"$VENV/bin/python" -c "import jinja2" 2>/dev/null || "$VENV/bin/pip" install -q jinja2
