#!/usr/bin/env bash
# Runs on the 16-core benchmark host, from the directory bench/bundle16.sh made: builds llama.cpp (llama-bench,
# llama-quantize; GGML_NATIVE=ON), makes the benchmark model (mkrandmodel qwen3-0.6b + the Qwen3 tokenizer, then
# BF16/Q8_0/Q4_0 GGUFs), measures the kernel tables alone (kernel_bench, one thread), then xpuinfer vs llama.cpp at
# each thread count (vs_llamacpp.sh). Results go to RESULTS (default ./results), the note to RESULTS.md.
#   env: THREADS_ALL ("1 2 4 8 16": auto only), THREADS_TABLES ("2 16": every table), ROUNDS (1), STEPS
#   ("build model kernels bench"), J (16)
set -euo pipefail
B=$(cd "$(dirname "$0")" && pwd); cd "$B"
R=${RESULTS:-$B/results}; STEPS=${STEPS:-"build model kernels bench"}; J=${J:-16}
export LD_LIBRARY_PATH=$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p "$R"
t() { echo "== $* $(date -u +%T)" >&2; }
if [[ $STEPS == *build* && ! -x llama.cpp/build/bin/llama-bench ]]; then
  t build llama.cpp
  mkdir -p llama.cpp && tar -C llama.cpp -xJf llama.cpp.tar.xz
  cmake -S llama.cpp -B llama.cpp/build -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_BUILD_APP=OFF > "$R/llama-cmake.log"
  cmake --build llama.cpp/build -j"$J" --target llama-bench llama-quantize > "$R/llama-build.log"
  gcc -O3 -march=native -fopenmp membw.c -o bin/membw || true
fi
if [[ $STEPS == *model* && ! -s gguf/q06-Q4_0.gguf ]]; then
  t model
  bin/mkrandmodel q06 --preset qwen3-0.6b > /dev/null && cp model/* q06/
  mkdir -p gguf
  PYTHONPATH=llama.cpp/gguf-py python3 to_gguf.py q06 gguf/q06-BF16.gguf > "$R/to_gguf.log"
  for q in Q8_0 Q4_0; do llama.cpp/build/bin/llama-quantize gguf/q06-BF16.gguf gguf/q06-$q.gguf $q > /dev/null 2>&1; done
fi
{ lscpu; nproc; } > "$R/lscpu.txt"
if [[ $STEPS == *kernels* ]]; then
  t kernels
  bin/kernel_bench 5 q4,q8,bf16 avx2,avxvnni,avx512,amx > "$R/kernel_bench_1t.txt" 2>&1 || true
fi
if [[ $STEPS == *bench* ]]; then
  export XPI=bin/xpuinfer XPI_COMMIT="$(tr -d '\n' < commit.txt)" ROUNDS=${ROUNDS:-1}
  [ -x bin/membw ] && export MEMBW=bin/membw
  t bench tables
  THREADS="${THREADS_TABLES:-2 16}" TABLES="auto avx2 avx512 amx" ./vs_llamacpp.sh llama.cpp/build gguf q06 "$R/vs" || true
  t bench threads
  THREADS="${THREADS_ALL:-1 4 8}" TABLES=auto ./vs_llamacpp.sh llama.cpp/build gguf q06 "$R/vs" || true
fi
t done
