#!/usr/bin/env bash
# amx_gemm_cold over copies of src/ops/cpu/kernels_amx.c + amx_gemm.h changed by patches/NAME.patch:
#   base   as committed: the next 32-row panel prefetched (_MM_HINT_T1), spread over the panel's k steps
#   nopf   no software prefetch (the hardware prefetchers only)      t0 / t2   _MM_HINT_T0 / _MM_HINT_T2
#   pf2    two panels ahead          d4     four panels ahead          burst  the next panel all at its first k step
#   touch  a demand load of each line instead of the prefetch
#   pfb    also the next k step's B tiles (the packed activations, 6 KiB) prefetched into L1; pfab  and its A tiles
#   kb     K blocks of 4 steps outer, groups of 4 panels inner (each block's B tiles stay in L1, the result tiles
#          wait in scratch between blocks: the same sums), each panel prefetching its rows' next K block
# then runs each on the gate/up and down shapes of qwen3moe-mini at 34, 64 and 256 tokens, interleaved, two rounds.
# From the repository root, after building (build/libxpuinfer_internal.a):
#   bash bench/runs/2026-12-02-amx-expert-gemm/variants.sh OUTDIR [VARIANTS]
# env: PATCHES=DIR takes NAME.patch from DIR instead of patches/ (bench/runs/2026-12-03-expert-stream/run.sh)
set -eu
O=$1; V=${2:-"base nopf t0 t2 pf2 d4 burst touch pfb pfab kb"}; mkdir -p "$O"
H=$(cd "$(dirname "$0")" && pwd); PD=${PATCHES:-$H/patches}
F="-mavx2 -mfma -mf16c -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512bf16 -mavx512vnni -mamx-tile -mamx-bf16 -mamx-int8"
L="build/libxpuinfer_internal.a -lcjson -lcurl -lcrypto -lpcre2-8 -lutf8proc -lpthread -ldl -lm"
for v in $V; do
  rm -rf "$O/src-$v"; mkdir -p "$O/src-$v/src/ops/cpu"
  cp src/ops/cpu/kernels_amx.c src/ops/cpu/amx_gemm.h "$O/src-$v/src/ops/cpu/"
  [ $v = base ] || patch -s -d "$O/src-$v" -p1 < "$PD/$v.patch"
  cc -O2 $F -I"$O/src-$v/src" -Iinclude -Isrc -Dxpi_cpu_kernels_amx=amx_variant -c "$O/src-$v/src/ops/cpu/kernels_amx.c" -o "$O/$v.o"
  cc -O2 -Iinclude -Isrc -DAMX_VARIANT=amx_variant bench/amx_gemm_cold.c "$O/$v.o" $L -o "$O/cold-$v"
done
for round in 1 2; do
  for v in $V; do
    for shape in "384 1024" "1024 384"; do
      echo "== round $round, $v, $shape"; MS=34,64,256 "$O/cold-$v" $shape | grep "^m"
    done
  done
done
