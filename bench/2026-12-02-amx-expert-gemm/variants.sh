#!/usr/bin/env bash
# amx_gemm_cold over copies of src/ops/cpu/kernels_amx.c + amx_gemm.h with the weight-panel prefetch changed:
#   base  as committed (the next 32-row panel, _MM_HINT_T1, spread over the panel's k steps)
#   nopf  no software prefetch (the hardware prefetchers only)
#   t0    _MM_HINT_T0 (into L1)      t2  _MM_HINT_T2
#   pf2   the panel after next (two panels ahead)
# then runs each on the gate/up and down shapes of qwen3moe-mini, interleaved. From the repository root, after
# building (build/libxpuinfer_internal.a):  bash bench/2026-12-02-amx-expert-gemm/variants.sh OUTDIR
set -eu
O=$1; mkdir -p "$O"
F="-mavx2 -mfma -mf16c -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512bf16 -mavx512vnni -mamx-tile -mamx-bf16 -mamx-int8"
L="build/libxpuinfer_internal.a -lcjson -lcurl -lcrypto -lpcre2-8 -lutf8proc -lpthread -ldl -lm"
for v in base nopf t0 t2 pf2; do
  d=$O/src-$v/ops/cpu; mkdir -p "$d"; cp src/ops/cpu/kernels_amx.c src/ops/cpu/amx_gemm.h "$d/"
  case $v in
    nopf) sed -i 's|#define AMX_PREFETCH(p) _mm_prefetch((const char \*)(p), _MM_HINT_T1)|#define AMX_PREFETCH(p) ((void)(p))|' "$d/kernels_amx.c" ;;
    t0) sed -i 's|_MM_HINT_T1)|_MM_HINT_T0)|' "$d/kernels_amx.c" ;;
    t2) sed -i 's|_MM_HINT_T1)|_MM_HINT_T2)|' "$d/kernels_amx.c" ;;
    pf2) sed -i 's|r1 - r - 2 \* XPI_AMX_TR; /\* rows after this panel \*/|r1 - r - 4 * XPI_AMX_TR;|; s|f.p = (const char \*)W + (r + 2 \* XPI_AMX_TR) \* rb;|f.p = (const char *)W + (r + 4 * XPI_AMX_TR) * rb;|' "$d/amx_gemm.h" ;;
  esac
  [ $v = base ] || ! cmp -s src/ops/cpu/kernels_amx.c "$d/kernels_amx.c" || ! cmp -s src/ops/cpu/amx_gemm.h "$d/amx_gemm.h" || { echo "$v: sed changed nothing"; exit 1; }
  cc -O2 $F -I"$O/src-$v" -Iinclude -Isrc -Dxpi_cpu_kernels_amx=amx_variant -c "$d/kernels_amx.c" -o "$O/$v.o"
  cc -O2 -Iinclude -Isrc -DAMX_VARIANT=amx_variant bench/amx_gemm_cold.c "$O/$v.o" $L -o "$O/cold-$v"
done
for round in 1 2; do
  for v in base nopf t0 t2 pf2; do
    for shape in "384 1024" "1024 384"; do
      echo "== round $round, $v, $shape"; MS=34,64 "$O/cold-$v" $shape | grep "^m"
    done
  done
done
