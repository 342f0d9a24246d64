#!/bin/bash
# The run protocol of bench/2026-11-29-onednn-vs-own-gemm.md: 3 repetitions x {1, 2 threads} of the bf16 and
# quantized sets, each in one process with the engines interleaved, plus one run of a second binary.
#   runs.sh OUTDIR LABEL BIN [OTHER_LABEL OTHER_BIN [DEB_BIN]]
# BIN etc. are gemm_bench_pypi builds (make XPI_LIB=... OUT=...); threads are set by taskset (see gemm_bench.c).
set -u
out=$1 label=$2 bin=$3 olabel=${4:-} obin=${5:-} deb=${6:-}
root=$(cd "$(dirname "$0")/../.." && pwd)
export OCL_ICD_FILENAMES=$root/.venv-dnnl/lib/libintelocl.so
mkdir -p "$out"
for r in 1 2 3; do
  for t in 1 2; do
    cpus=0; [ $t = 2 ] && cpus=0,1
    (uptime; taskset -c $cpus "$bin" --reps 7 --M 128,512 --only bf16,norm; uptime) > "$out/$label-bf16-T$t-r$r.txt" 2>&1
    (uptime; taskset -c $cpus "$bin" --reps 7 --M 1,128,512 --only quant; uptime) > "$out/$label-quant-T$t-r$r.txt" 2>&1
  done
done
for t in 1 2; do
  cpus=0; [ $t = 2 ] && cpus=0,1
  [ -n "$obin" ] && (uptime; taskset -c $cpus "$obin" --reps 7 --M 1,128,512 --only bf16,quant; uptime) > "$out/$olabel-all-T$t.txt" 2>&1
  [ -n "$deb" ] && (uptime; taskset -c $cpus "$deb" --reps 7 --M 128 --only bf16; uptime) > "$out/deb26-bf16-T$t.txt" 2>&1
done
