#!/usr/bin/env bash
# Packs what the 16-core benchmark host needs into DIR (bench/remote16.sh runs it there; bench/README.md says how):
# this checkout's xpuinfer, libxpuinfer and the shared libraries they load (the host has no apt), kernel_bench,
# mkrandmodel, llama.cpp's sources (built there with GGML_NATIVE=ON), the Qwen3 tokenizer, to_gguf.py, membw.c and
# the scripts. Run from the repository root after building (build/). Usage: bench/bundle16.sh DIR
#   env: LLAMA_SRC (/work/llama.cpp), SHARED (/work/shared)
set -euo pipefail
[ $# -eq 1 ] || { sed -n 2,6p "$0" >&2; exit 2; }
D=$1; LLAMA_SRC=${LLAMA_SRC:-/work/llama.cpp}; SHARED=${SHARED:-/work/shared}
rm -rf "$D"; mkdir -p "$D/bin" "$D/lib" "$D/model"
cc -O2 -Iinclude -Isrc bench/kernel_bench.c build/libxpuinfer_internal.a -lcjson -lcurl -lcrypto -lpcre2-8 -lutf8proc \
  -lpthread -ldl -lm -o "$D/bin/kernel_bench"
cp -L build/xpuinfer build/mkrandmodel "$D/bin/"
for so in $(ldd build/xpuinfer "$D/bin/kernel_bench" | awk '$3 ~ /^\// {print $3}' | sort -u); do
  case "$(basename "$so")" in libc.so*|libm.so*|ld-linux*) ;; *) cp -L "$so" "$D/lib/" ;; esac
done
cp "$SHARED"/fixtures/tokenizers/qwen3/* "$D/model/"
cp "$SHARED/bench/to_gguf.py" "$SHARED/bench/membw.c" bench/vs_llamacpp.sh bench/ratios.py bench/remote16.sh \
  bench/batched_vs_llamacpp.sh bench/batched_ratios.py "$D/"
git rev-parse --short HEAD > "$D/commit.txt"
git diff --quiet || echo " (with uncommitted changes)" >> "$D/commit.txt"
# llama.cpp: the CPU build's sources (no other backends, models or docs)
tar -C "$LLAMA_SRC" -cJf "$D/llama.cpp.tar.xz" --exclude='ggml/src/ggml-cuda' --exclude='ggml/src/ggml-vulkan' \
  --exclude='ggml/src/ggml-sycl' --exclude='ggml/src/ggml-metal' --exclude='ggml/src/ggml-cann' \
  --exclude='ggml/src/ggml-hip' --exclude='ggml/src/ggml-musa' --exclude='ggml/src/ggml-opencl' \
  --exclude='ggml/src/ggml-webgpu' --exclude='ggml/src/ggml-hexagon' --exclude='tools/server/public*' \
  CMakeLists.txt cmake common ggml gguf-py include src tools vendor licenses LICENSE
du -sh "$D"
