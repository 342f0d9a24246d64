#!/bin/bash
# Installs the two oneDNN builds that bench/onednn/gemm_bench.c is measured against, inside the checkout
# (both paths are git-ignored). Benchmark-only: the library does not use oneDNN (see the results file).
#   .venv-dnnl/             PyPI onednn + onednn-devel (oneDNN 3.x, SYCL CPU runtime + TBB; ~2.0 GB)
#   .deb-dnnl/root/usr/     Debian libdnnl2 + libdnnl-dev 2.6 unpacked with dpkg -x (OpenMP; ~39 MB), no root
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
if [ ! -x .venv-dnnl/bin/pip ]; then python3 -m venv .venv-dnnl; fi
.venv-dnnl/bin/pip install --quiet onednn onednn-devel
mkdir -p .deb-dnnl && cd .deb-dnnl
apt-get download libdnnl2 libdnnl-dev
for f in libdnnl2_*.deb libdnnl-dev_*.deb; do dpkg -x "$f" root; done
echo "oneDNN PyPI: $root/.venv-dnnl/{include,lib}; Debian 2.6: $root/.deb-dnnl/root/usr"
echo "Run the PyPI build with OCL_ICD_FILENAMES=$root/.venv-dnnl/lib/libintelocl.so (its CPU engine is a SYCL"
echo "device served by Intel's OpenCL CPU runtime, which the system ICD registry does not list)."
