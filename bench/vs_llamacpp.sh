#!/usr/bin/env bash
# Interleaved side-by-side CPU benchmark, one command from the runs to the note: llama.cpp's llama-bench vs
# `xpuinfer bench` with its default kernel choice ("auto") and every forced kernel table, same model (random-weight
# Qwen3-0.6B shape), same threads, tests pp512 and tg64 for bf16/q8/q4, alternating engines within each round so
# that the load of a shared machine hits all alike. Writes OUT_DIR/ (raw JSON lines, machine and version info)
# and OUT_DIR.md, the note (bench/ratios.py: ratios per table, the CPU targets, default vs fastest table); when
# OUT_DIR is bench/runs/NAME the note is bench/NAME.md (where bench/README.md keeps notes and their runs).
# KV cache: f16 for both (llama.cpp's default; xpuinfer is asked with --kv-dtype).
#
# Usage: bench/vs_llamacpp.sh LLAMA_BUILD_DIR GGUF_DIR MODEL_DIR OUT_DIR
#   GGUF_DIR holds q06-BF16.gguf, q06-Q8_0.gguf, q06-Q4_0.gguf (another prefix: GGUF_PREFIX, e.g. moe for
#   moe-BF16.gguf); MODEL_DIR the same model as safetensors
#   (bench/README.md says how to make them). env:
#   ROUNDS (2)   THREADS ("2"; a list runs each count, e.g. "1 2 4 8 16")   QUANTS ("bf16:BF16 q8:Q8_0 q4:Q4_0")
#   TABLES ("auto avx2 avxvnni avx512 amx": xpuinfer's --cpu-isa values; a table the CPU lacks falls back and
#   the note says so)   PP (512)   TG (64)   DEPTH (0; e.g. 4096 adds tg at that depth for DEPTH_QUANTS)
#   DEPTH_QUANTS ("bf16:BF16 q4:Q4_0")   XPI (build/xpuinfer)   MEMBW (a membw binary: bandwidth per round)
#   KV (f16)   LABEL (a title for the note)   XPI_COMMIT (the commit to name, where there is no git checkout)
#   A second run into the same OUT_DIR appends to its results (e.g. more thread counts with fewer tables).
set -euo pipefail
[ $# -eq 4 ] || { sed -n 2,18p "$0" >&2; exit 2; }
LB=$1/bin/llama-bench; G=$2; M=$3; OUT=$4
ROUNDS=${ROUNDS:-2}; THREADS=${THREADS:-2}; XPI=${XPI:-build/xpuinfer}; KV=${KV:-f16}; PP=${PP:-512}; TG=${TG:-64}
QUANTS=${QUANTS:-"bf16:BF16 q8:Q8_0 q4:Q4_0"}; TABLES=${TABLES:-"auto avx2 avxvnni avx512 amx"}
DEPTH=${DEPTH:-0}; DEPTH_QUANTS=${DEPTH_QUANTS:-"bf16:BF16 q4:Q4_0"}; GP=${GGUF_PREFIX:-q06}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
[ -e "$OUT/machine.txt" ] && mv "$OUT/machine.txt" "$OUT/machine.before.txt"
{
  echo "date: $(date -u +%FT%TZ)"
  echo "xpuinfer commit: ${XPI_COMMIT:-$(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$here/.." diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')}"
  echo "llama.cpp: $LB"
  echo "command: ROUNDS=$ROUNDS THREADS=\"$THREADS\" TABLES=\"$TABLES\" QUANTS=\"$QUANTS\" PP=$PP TG=$TG DEPTH=$DEPTH KV=$KV bench/vs_llamacpp.sh $*"
  lscpu | grep -E 'Model name|^CPU\(s\)|Thread\(s\) per core|Flags' || true
  echo "nproc: $(nproc)"; uptime
} > "$OUT/machine.txt"
isas=$(echo $TABLES | tr ' ' ',')
for r in $(seq "$ROUNDS"); do
  for t in $THREADS; do
    [ -n "${MEMBW:-}" ] && "$MEMBW" 1 "$t" | sed "s/^/round $r: /" >> "$OUT/membw.txt"
    for q in $QUANTS; do
      ours=${q%%:*}; theirs=${q##*:}
      echo "round $r threads $t $ours/$theirs $(date -u +%T)" >&2
      { "$LB" -m "$G/$GP-$theirs.gguf" -t "$t" -p "$PP" -n "$TG" -r 1 -o jsonl 2>/dev/null || echo "llama-bench failed: $theirs, $t threads" >&2; } | sed "s/^{/{\"round\": $r, /" >> "$OUT/llamacpp.jsonl"
      "$XPI" bench -m "$M" --quant "$ours" --kv-dtype "$KV" -t "$t" -p "$PP" -n "$TG" -r 1 --cpu-isa "$isas" --json | sed "s/^{/{\"round\": $r, /" >> "$OUT/xpuinfer.jsonl"
    done
    if [ "$DEPTH" != 0 ]; then
      for q in $DEPTH_QUANTS; do
        ours=${q%%:*}; theirs=${q##*:}
        echo "round $r threads $t depth $DEPTH $ours/$theirs $(date -u +%T)" >&2
        { "$LB" -m "$G/$GP-$theirs.gguf" -t "$t" -p 0 -n "$TG" -d "$DEPTH" -r 1 -o jsonl 2>/dev/null || echo "llama-bench failed: $theirs, depth $DEPTH" >&2; } | sed "s/^{/{\"round\": $r, /" >> "$OUT/llamacpp.jsonl"
        "$XPI" bench -m "$M" --quant "$ours" --kv-dtype "$KV" -t "$t" -p 0 -n "$TG" -d "$DEPTH" -r 1 --cpu-isa auto --json | sed "s/^{/{\"round\": $r, /" >> "$OUT/xpuinfer.jsonl"
      done
    fi
  done
done
NOTE="${OUT%/}.md"
[ "$(basename "$(dirname "${OUT%/}")")" = runs ] && NOTE="$(dirname "$(dirname "${OUT%/}")")/$(basename "${OUT%/}").md"
python3 "$here/ratios.py" "$OUT" ${LABEL:+--label "$LABEL"} > "$NOTE"
echo "wrote $NOTE" >&2
