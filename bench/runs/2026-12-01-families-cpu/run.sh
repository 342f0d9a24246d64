#!/bin/bash
# Issue 15's per-family bench: one random model per family at Qwen3-0.6B's shape (mkrandmodel --arch, bf16),
# xpuinfer bench on the CPU; qwen3 (the reference shape) is run before every family so each family's ratio is
# against the qwen3 run right before it (the machine is shared: see the note).
# usage: bench/runs/2026-12-01-families-cpu/run.sh BUILD_DIR WORK_DIR OUT_FILE [THREADS]
set -u
B=$1 W=$2 OUT=$3 T=${4:-2}
TOK=$(dirname "$0")/../../../tests/data/tokenizers/qwen3
mkdir -p "$W"
lscpu | grep -E "Model name|^CPU\(s\)" > "$OUT"; uptime >> "$OUT"
"$B/mkrandmodel" "$W/qwen3" --arch qwen3 2>/dev/null; cp "$TOK"/* "$W/qwen3/"
for a in llama mistral smollm3 granite phi3 olmo2 gemma2 gemma3_text; do
  "$B/mkrandmodel" "$W/$a" --arch "$a" 2>/dev/null; cp "$TOK"/* "$W/$a/"
  for m in qwen3 "$a"; do
    echo "== $m (before/after: $a)" >> "$OUT"
    "$B/xpuinfer" bench -m "$W/$m" -p 64 -n 16 -r 3 -t "$T" 2>&1 | grep -E "pp64|tg16" >> "$OUT"
  done
  rm -rf "${W:?}/$a"
done
uptime >> "$OUT"
