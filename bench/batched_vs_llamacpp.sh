#!/usr/bin/env bash
# Batched decode side by side: llama.cpp's llama-batched-bench vs `xpuinfer bench --parallel`, same model
# (random-weight Qwen3-0.6B shape), same threads, same npp/ntg/npl, alternating engines (A B A B) so that the
# load of a shared machine hits both alike; then the peak RSS of a 32-sequence run with a 1 GiB KV pool; then
# bench/batched_ratios.py writes the complete note (machine, commands, tables, targets) to OUT_DIR/note.md.
# KV cache: f16 for both (llama.cpp's default). Compare ratios of medians, never absolute numbers across runs.
#
# Usage: bench/batched_vs_llamacpp.sh LLAMA_BUILD_DIR GGUF_DIR MODEL_DIR OUT_DIR
#   GGUF_DIR holds q06-BF16.gguf, q06-Q8_0.gguf, q06-Q4_0.gguf (see /work/shared/bench/README.md); MODEL_DIR the
#   same model as safetensors. env: ROUNDS (2), THREADS (2), QUANTS ("bf16:BF16 q4:Q4_0 q8:Q8_0"), NPL (1,8,32),
#   NPP (128), NTG (64), XPI (build/xpuinfer), KV (f16), RSS (1; 0 skips the peak-RSS run)
# llama.cpp built with GGML_NATIVE on a CPU that reports AMX takes its AMX path, which GCC 12 miscompiles
# (_tile_loadconfig: SIGILL for Q8_0/Q4_0, see bench/README.md); build it for the comparison with
# -DGGML_NATIVE=OFF -DGGML_AVX512=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON (and no AMX). The machine is
# shared: uptime before and after goes into the note; a loaded machine's numbers are provisional.
set -uo pipefail
[ $# -eq 4 ] || { sed -n 2,11p "$0" >&2; exit 2; }
LBB=$1/bin/llama-batched-bench; G=$2; M=$3; OUT=$4
ROUNDS=${ROUNDS:-2}; T=${THREADS:-2}; XPI=${XPI:-build/xpuinfer}; KV=${KV:-f16}
NPL=${NPL:-1,8,32}; NPP=${NPP:-128}; NTG=${NTG:-64}
QUANTS=${QUANTS:-"bf16:BF16 q4:Q4_0 q8:Q8_0"}
mkdir -p "$OUT"
: > "$OUT/llamacpp.jsonl"; : > "$OUT/xpuinfer.jsonl"; : > "$OUT/errors.txt"
{ lscpu | grep -E 'Model name|^CPU\(s\)|Flags'; nproc; uptime; git -C "$(dirname "$0")/.." log --oneline -1; } > "$OUT/machine.txt"
cat > "$OUT/commands.txt" <<CMDS
llama.cpp: $LBB -m $G/q06-<Q>.gguf -c 16384 -b 2048 -ub 512 -npp $NPP -ntg $NTG -npl $NPL -t $T -tb $T --output-format jsonl
xpuinfer:  $XPI bench -m $M --quant <q> --kv-dtype $KV -t $T --parallel $NPL -p $NPP -n $NTG -r 1 --json
peak RSS:  /usr/bin/time -v $XPI bench -m $M --quant bf16 --kv-dtype $KV -t $T --parallel 32 -p $NPP -n $NTG -r 1 --kv-pool 1G
CMDS
for r in $(seq "$ROUNDS"); do
  for q in $QUANTS; do
    ours=${q%%:*}; theirs=${q##*:}
    echo "round $r $ours/$theirs $(date -u +%T)" >&2
    "$LBB" -m "$G/q06-$theirs.gguf" -c 16384 -b 2048 -ub 512 -npp "$NPP" -ntg "$NTG" -npl "$NPL" -t "$T" -tb "$T" \
      --output-format jsonl > "$OUT/llamacpp.out" 2> "$OUT/llamacpp.err"
    st=$?
    grep '^{' "$OUT/llamacpp.out" | sed "s/^{/{\"round\": $r, \"quant\": \"$ours\", /" >> "$OUT/llamacpp.jsonl"
    [ $st -eq 0 ] || echo "round $r llama-batched-bench $theirs exited with status $st$([ $st -gt 128 ] && echo " (signal $((st - 128)))")" >> "$OUT/errors.txt"
    if ! "$XPI" bench -m "$M" --quant "$ours" --kv-dtype "$KV" -t "$T" --parallel "$NPL" -p "$NPP" -n "$NTG" -r 1 --json \
        2>>"$OUT/errors.txt" | sed "s/^{/{\"round\": $r, /" >> "$OUT/xpuinfer.jsonl"; then
      echo "round $r xpuinfer $ours failed" >> "$OUT/errors.txt"
    fi
  done
done
# peak resident memory of 32 sequences with the KV pool at 1 GiB (GNU time's "Maximum resident set size", KiB)
# (where GNU time is missing, as on the 16-core host, Python's getrusage of the child gives the same number)
RSS_CMD=("$XPI" bench -m "$M" --quant bf16 --kv-dtype "$KV" -t "$T" --parallel 32 -p "$NPP" -n "$NTG" -r 1 --kv-pool 1G)
if [ "${RSS:-1}" = 0 ]; then
  echo "peak RSS run skipped (RSS=0)" > "$OUT/rss_time.txt"
elif [ -x /usr/bin/time ]; then
  /usr/bin/time -v "${RSS_CMD[@]}" > "$OUT/rss_bench.txt" 2> "$OUT/rss_time.txt" || echo "RSS run failed" >> "$OUT/errors.txt"
else
  python3 -c 'import resource, subprocess, sys
r = subprocess.run(sys.argv[1:])
print("\tMaximum resident set size (kbytes): %d" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)
sys.exit(r.returncode)' "${RSS_CMD[@]}" > "$OUT/rss_bench.txt" 2> "$OUT/rss_time.txt" || echo "RSS run failed" >> "$OUT/errors.txt"
fi
stat -c %s "$M/model.safetensors" > "$OUT/model_bytes.txt"
uptime >> "$OUT/machine.txt"
python3 "$(dirname "$0")/batched_ratios.py" "$OUT" > "$OUT/note.md"
cat "$OUT/note.md"
