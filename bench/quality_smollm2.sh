#!/usr/bin/env bash
# Quantization quality, xpuinfer against llama.cpp, on the same bf16 weights and the same tokens: perplexity and
# teacher-forced top-1 agreement with bf16 (bench/2026-12-01-smollm2-quality.md holds a run).
#
# Usage: bench/quality_smollm2.sh LLAMA_DIR MODEL_DIR OUT_DIR [TEXT...]
#   LLAMA_DIR: a llama.cpp checkout with its build (build/bin/llama-quantize, llama-perplexity; gguf-py);
#   MODEL_DIR: the Hugging Face folder (SmolLM2-135M-Instruct: tests/tools/make_smollm2.py builds it);
#   TEXT: text files (default tests/data/smollm2/ppl_text.txt), each read as 4 chunks of 512 tokens.
# env: XPI_PERPLEXITY (build/perplexity: bench/perplexity.c, build command in its header), PYTHON (a Python with
#   numpy: .venv/bin/python), THREADS (2).
# What runs: bench/to_gguf.py writes the folder's bf16 weights as a BF16 GGUF (llama's Q/K row permutation
# applied), llama-quantize makes Q8_0, Q4_0 (its default mix: the tied token_embd/output stays Q8_0, as 576
# columns do not fit Q6_K's 256-blocks) and Q4_0 --pure (every matrix Q4_0, as xpuinfer's q4); for each text
# llama-perplexity -c 512 -b 512 --chunks 4 saves each model's log-probabilities (--kl-divergence-base) and
# bench/perplexity does the same chunks with xpuinfer bf16/q8/q4; bench/quality_smollm2.py makes the table.
# llama.cpp runs with -nr (no weight repacking): its repacked AMX/AVX-512 paths stop with SIGILL in this VM.
set -euo pipefail
[ $# -ge 3 ] || { sed -n 2,9p "$0" >&2; exit 2; }
L=$1; M=$2; OUT=$3; shift 3
TEXTS=("$@"); [ ${#TEXTS[@]} -gt 0 ] || TEXTS=(tests/data/smollm2/ppl_text.txt)
PPL=${XPI_PERPLEXITY:-build/perplexity}; PY=${PYTHON:-.venv/bin/python}; T=${THREADS:-2}
mkdir -p "$OUT/gguf"
{ lscpu | grep -E 'Model name|^CPU\(s\)'; nproc; uptime; } > "$OUT/machine.txt"
G=$OUT/gguf
if [ ! -s "$G/BF16.gguf" ]; then
  PYTHONPATH="$L/gguf-py" "$PY" bench/to_gguf.py "$M" "$G/BF16.gguf" > "$G/to_gguf.log"
  "$L/build/bin/llama-quantize" "$G/BF16.gguf" "$G/Q8_0.gguf" Q8_0 "$T" > "$G/quantize-Q8_0.log" 2>&1
  "$L/build/bin/llama-quantize" "$G/BF16.gguf" "$G/Q4_0.gguf" Q4_0 "$T" > "$G/quantize-Q4_0.log" 2>&1
  "$L/build/bin/llama-quantize" --pure "$G/BF16.gguf" "$G/Q4_0-pure.gguf" Q4_0 "$T" > "$G/quantize-Q4_0-pure.log" 2>&1
fi
for text in "${TEXTS[@]}"; do
  tag=$(basename "$text" .txt); D=$OUT/$tag
  mkdir -p "$D/llama" "$D/ours"
  for q in BF16 Q8_0 Q4_0 Q4_0-pure; do
    echo "$tag llama.cpp $q $(date -u +%T)" >&2
    "$L/build/bin/llama-perplexity" -m "$G/$q.gguf" -f "$text" -c 512 -b 512 --chunks 4 -t "$T" -nr \
      --kl-divergence-base "$D/llama/$q.kld" > "$D/llama/$q.log" 2>&1
  done
  for q in none q8 q4; do
    echo "$tag xpuinfer $q $(date -u +%T)" >&2
    "$PPL" "$M" "$text" "$q" 512 4 "$D/ours/$q.json" 2> "$D/ours/$q.log"
  done
  "$PY" bench/quality_smollm2.py "$D/ours" "$D/llama" | tee "$D/table.md"
  rm -f "$D"/llama/*.kld  # 100 MB each; the table is what is kept
done
