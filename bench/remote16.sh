#!/usr/bin/env bash
# Runs on the 16-core benchmark host, from the directory bench/bundle16.sh made: builds llama.cpp (llama-bench,
# llama-quantize; GGML_NATIVE=ON), makes the benchmark model (mkrandmodel qwen3-0.6b + the Qwen3 tokenizer, then
# BF16/Q8_0/Q4_0 GGUFs), measures the kernel tables alone (kernel_bench, one thread), then xpuinfer vs llama.cpp at
# each thread count (vs_llamacpp.sh), and batched decode against llama-batched-bench (batched_vs_llamacpp.sh,
# step "batched", not in the default STEPS). Results go to RESULTS (default ./results).
#   env: THREADS_ALL ("1 4 8": auto only; empty: none), THREADS_TABLES ("2 16"), TABLES_T ("auto avx2 avx512 amx":
#   the tables at THREADS_TABLES), THREADS_BATCHED ("2 16"), ROUNDS (1), ROUNDS_BATCHED (ROUNDS), QUANTS (both
#   scripts' default), QUANTS_BATCHED (QUANTS), STEPS ("build model kernels bench"; add "batched", and "ab": the q8 decode A/B of
#   bin/kernel_bench_base (the previous commit's kernels, if carried) vs this one, bin/q8dot_vs_ggml if carried,
#   and XPI_CPU_HUGEPAGES=0 vs default in xpuinfer bench tg64 at 2 threads), J (16)
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
  cmake --build llama.cpp/build -j"$J" --target llama-bench llama-batched-bench llama-quantize > "$R/llama-build.log"
  gcc -O3 -march=native -ffast-math -fopenmp membw.c -o bin/membw || true
fi
if [[ $STEPS == *model* && ! -s gguf/q06-Q4_0.gguf ]]; then
  t model
  bin/mkrandmodel q06 --preset qwen3-0.6b > /dev/null && cp model/* q06/
  mkdir -p gguf
  PYTHONPATH=llama.cpp/gguf-py python3 to_gguf.py q06 gguf/q06-BF16.gguf > "$R/to_gguf.log"
  for q in Q8_0 Q4_0; do llama.cpp/build/bin/llama-quantize gguf/q06-BF16.gguf gguf/q06-$q.gguf $q > /dev/null 2>&1; done
fi
LLAMA=llama.cpp/build
# llama.cpp's AMX path (Q8_0/Q4_0 prefill) loads its tile configuration with _tile_loadconfig, whose stores GCC 12
# drops (the tiles stay unconfigured: SIGILL at the first tile instruction). If it fails here, llama.cpp is
# rebuilt with every feature of this CPU but AMX, and the note says so.
if [[ $STEPS == *build* ]] && ! llama.cpp/build/bin/llama-bench -m gguf/q06-Q4_0.gguf -t 2 -p 64 -n 0 -r 1 > /dev/null 2>&1; then
  echo "llama.cpp (GGML_NATIVE=ON) failed on Q4_0 here: rebuilt without AMX" | tee "$R/llama-noamx.txt" >&2
  cmake -S llama.cpp -B llama.cpp/build-noamx -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON \
    -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX_VNNI=ON -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON \
    -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_BUILD_APP=OFF > "$R/llama-cmake-noamx.log"
  cmake --build llama.cpp/build-noamx -j"$J" --target llama-bench llama-batched-bench > "$R/llama-build-noamx.log"
fi
[ -x llama.cpp/build-noamx/bin/llama-bench ] && LLAMA=llama.cpp/build-noamx
{ lscpu; nproc; gcc --version | head -1; } > "$R/lscpu.txt" 2>&1
if [[ $STEPS == *kernels* ]]; then
  t kernels
  bin/kernel_bench 5 q4,q8,bf16 avx2,avxvnni,avx512,amx > "$R/kernel_bench_1t.txt" 2>&1 || true
fi
if [[ $STEPS == *bench* ]]; then
  export XPI=bin/xpuinfer XPI_COMMIT="$(tr -d '\n' < commit.txt)" ROUNDS=${ROUNDS:-1}
  [ -x bin/membw ] && export MEMBW=bin/membw
  t bench tables
  THREADS="${THREADS_TABLES:-2 16}" TABLES="${TABLES_T:-auto avx2 avx512 amx}" ./vs_llamacpp.sh "$LLAMA" gguf q06 "$R/vs" || true
  t bench threads
  [ -n "${THREADS_ALL-1 4 8}" ] && { THREADS="${THREADS_ALL:-1 4 8}" TABLES=auto ./vs_llamacpp.sh "$LLAMA" gguf q06 "$R/vs" || true; }
fi
if [[ $STEPS == *batched* ]]; then
  export XPI=bin/xpuinfer
  for T in ${THREADS_BATCHED:-2 16}; do
    t batched "$T" threads
    QUANTS=${QUANTS_BATCHED:-${QUANTS:-bf16:BF16 q4:Q4_0 q8:Q8_0}} ROUNDS=${ROUNDS_BATCHED:-${ROUNDS:-1}} THREADS=$T ./batched_vs_llamacpp.sh "$LLAMA" gguf q06 "$R/batched-t$T" || true
  done
fi
if [[ $STEPS == *ab* ]]; then
  t ab kernels
  for th in 1 2; do
    for kb in bin/kernel_bench_base bin/kernel_bench; do
      [ -x $kb ] || continue
      for h in 0 1; do
        echo "$kb HUGE=$h THREADS=$th: $(THREADS=$th HUGE=$h MB=512 PATH_=decode $kb 3 q8 avx512)" >> "$R/ab_kernel.txt"
      done
    done
  done
  for N in 8 16; do
    for kb in bin/kernel_bench_base bin/kernel_bench; do
      [ -x $kb ] || continue
      echo "$kb N=$N THREADS=2: $(THREADS=2 N=$N PATH_=prefill $kb 3 q8 amx)" >> "$R/ab_kernel.txt"
    done
  done
  # the q8 row dot against llama.cpp's (built where the bundle was made, its libggml carried in lib/)
  [ -x bin/q8dot_vs_ggml ] && { bin/q8dot_vs_ggml 5 8; bin/q8dot_vs_ggml 3 512; } >> "$R/q8dot_vs_ggml.txt" 2>&1
  t ab hugepages
  for i in 1 2 3; do
    for h in 0 1; do
      XPI_CPU_HUGEPAGES=$h bin/xpuinfer bench -m q06 --quant q8 --kv-dtype f16 -t 2 -p 0 -n 64 -r 1 --json \
        | sed "s/^{/{\"round\": $i, \"hugepages\": $h, /" >> "$R/ab_hugepages.jsonl"
    done
  done
fi
t done
