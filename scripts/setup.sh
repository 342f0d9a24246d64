#!/usr/bin/env bash
# Installs what libxpuinfer needs to build and test on Debian 12. Idempotent; run as root.
set -euo pipefail
APT_PKGS=(build-essential cmake pkg-config git ca-certificates
  libze-dev libze1 libcjson-dev libcurl4-openssl-dev libssl-dev libpcre2-dev libutf8proc-dev libmicrohttpd-dev
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
# jinja2 renders the real chat templates as transformers does (tests/jinja, tests/tokenizer/test_chat_template.py);
# pinned: the chat-template goldens were made with 3.1.6
"$VENV/bin/python" -c "import jinja2, sys; sys.exit(jinja2.__version__ != '3.1.6')" 2>/dev/null || "$VENV/bin/pip" install -q "jinja2==3.1.6"
# the official OpenAI client drives `xpuinfer serve` in tests/serve
"$VENV/bin/python" -c "import openai; assert openai.__version__ == '3.57.0'" 2>/dev/null || \
  "$VENV/bin/pip" install -q "openai==3.57.0"
# Intel's CPU OpenCL runtime (not a Debian package; ~0.8 GB, ~90 s to install here): zesim runs the Intel-tuned
# kernels on it in the tests (tests/xpu_intel). Its own venv, versions pinned as tested. A failed install does not
# fail setup: CMake then does not find it and those tests are skipped, saying why.
IOCL_VENV="${XPI_IOCL_VENV:-$(cd "$(dirname "$0")/.." && pwd)/.venv-iocl}"
IOCL_PKGS=(intel-opencl-rt==2026.2.0 intel-cmplr-lib-rt==2026.2.0 intel-cmplr-lic-rt==2026.2.0 tbb==2023.2.0 tcmlib==1.6.0)
iocl_ok() {
  [ -e "$IOCL_VENV/lib/libintelocl.so" ] && [ -e "$IOCL_VENV/lib/libimf.so" ] &&
    [ "$("$IOCL_VENV/bin/pip" freeze 2>/dev/null | grep -cxF -f <(printf '%s\n' "${IOCL_PKGS[@]}"))" = "${#IOCL_PKGS[@]}" ]
}
if ! iocl_ok; then
  if ! { { [ -x "$IOCL_VENV/bin/pip" ] || /usr/bin/python3 -m venv "$IOCL_VENV"; } &&
         "$IOCL_VENV/bin/pip" install -q --no-cache-dir "${IOCL_PKGS[@]}"; }; then
    echo "setup.sh: WARNING: could not install Intel's CPU OpenCL runtime into $IOCL_VENV;" \
         "the xpu_intel tests will be skipped (PoCL still runs the portable kernels)" >&2
  fi
fi
