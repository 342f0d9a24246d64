#!/usr/bin/env bash
# Interleaved side-by-side CPU benchmark: llama.cpp's llama-bench vs `xpuinfer bench`, same model (random-weight
# Qwen3-0.6B shape), same threads, same tests, alternating engines (A B A B) so that the load of the shared
# machine hits both alike. Compare ratios of medians, never absolute numbers across runs.
# KV cache: f16 for both (llama.cpp's default; xpuinfer's default is f32, so it is asked for with --kv-dtype;
# env KV overrides it), so at depth both read the same KV bytes; bench's GB/s counts them.
#
# Usage: bench/vs_llamacpp.sh LLAMA_BUILD_DIR GGUF_DIR MODEL_DIR OUT_DIR
#   GGUF_DIR holds q06-BF16.gguf, q06-Q8_0.gguf, q06-Q4_0.gguf (see /work/shared/bench/README.md);
#   MODEL_DIR the same model as safetensors. env: ROUNDS (2), THREADS (2), QUANTS ("bf16:BF16 q8:Q8_0 q4:Q4_0"),
#   DEPTH (4096; 0 skips the depth tests), DEPTH_N (64: tokens generated at depth), DEPTH_QUANTS ("bf16:BF16 q4:Q4_0"), XPI (build/xpuinfer), MEMBW (membw binary), KV (f16)
set -euo pipefail
[ $# -eq 4 ] || { sed -n 2,10p "$0" >&2; exit 2; }
LB=$1/bin/llama-bench; G=$2; M=$3; OUT=$4
ROUNDS=${ROUNDS:-2}; T=${THREADS:-2}; XPI=${XPI:-build/xpuinfer}; DEPTH=${DEPTH:-4096}; DEPTH_N=${DEPTH_N:-64}; KV=${KV:-f16}
QUANTS=${QUANTS:-"bf16:BF16 q8:Q8_0 q4:Q4_0"}; DEPTH_QUANTS=${DEPTH_QUANTS:-"bf16:BF16 q4:Q4_0"}
mkdir -p "$OUT"
{ lscpu | grep -E 'Model name|^CPU\(s\)|Flags'; nproc; uptime; } > "$OUT/machine.txt"
for r in $(seq "$ROUNDS"); do
  [ -n "${MEMBW:-}" ] && "$MEMBW" 1 "$T" | sed "s/^/round $r: /" >> "$OUT/membw.txt"
  for q in $QUANTS; do
    ours=${q%%:*}; theirs=${q##*:}
    echo "round $r $ours/$theirs $(date -u +%T)" >&2
    "$LB" -m "$G/q06-$theirs.gguf" -t "$T" -p 128,512 -n 64 -r 1 -o jsonl 2>/dev/null | sed "s/^{/{\"round\": $r, /" >> "$OUT/llamacpp.jsonl"
    "$XPI" bench -m "$M" --quant "$ours" --kv-dtype "$KV" -t "$T" -p 128,512 -n 64 -r 1 --json | sed "s/^{/{\"round\": $r, /" >> "$OUT/xpuinfer.jsonl"
  done
  if [ "$DEPTH" != 0 ]; then
    for q in $DEPTH_QUANTS; do
      ours=${q%%:*}; theirs=${q##*:}
      echo "round $r depth $DEPTH $ours/$theirs $(date -u +%T)" >&2
      "$LB" -m "$G/q06-$theirs.gguf" -t "$T" -p 0 -n "$DEPTH_N" -d "$DEPTH" -r 1 -o jsonl 2>/dev/null | sed "s/^{/{\"round\": $r, /" >> "$OUT/llamacpp.jsonl"
      "$XPI" bench -m "$M" --quant "$ours" --kv-dtype "$KV" -t "$T" -p 0 -n "$DEPTH_N" -d "$DEPTH" -r 1 --json | sed "s/^{/{\"round\": $r, /" >> "$OUT/xpuinfer.jsonl"
    done
  fi
done
