#!/usr/bin/env bash
# amx_gemm_cold over copies of the AMX kernel changed by this folder's NAME.patch (bench/2026-12-03-expert-stream.md
# says what each changes), through bench/runs/2026-12-02-amx-expert-gemm/variants.sh (interleaved, two rounds, the gate/up
# and down shapes of qwen3moe-mini at 34, 64 and 256 tokens); then the committed kernel with its weight pool shrunk
# (POOL_MB) so that a cache level may hold it. From the repository root, after building
# (build/libxpuinfer_internal.a):
#   bash bench/runs/2026-12-03-expert-stream/run.sh OUTDIR [VARIANTS]
set -eu
O=$1; V=${2:-"base tiled tilednp pg l1b"}
H=$(cd "$(dirname "$0")" && pwd)
PATCHES=$H bash "$H/../2026-12-02-amx-expert-gemm/variants.sh" "$O" "$V"
for mb in 4 16 64 128 256 512; do
  echo "== pool $mb MiB, base, 384 1024"; POOL_MB=$mb MS=34,64 "$O/cold-base" 384 1024 | grep "^m"
done
