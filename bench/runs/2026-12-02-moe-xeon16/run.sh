#!/usr/bin/env bash
# Runs on the 16-core host from the folder ../2026-12-01-families-xeon16/pack.sh's tar was unpacked in (RUN=this
# script; tok/ = the Qwen3 tokenizer): the two MoE bench models and their dense peers of equal active size, each
# pair also with sharper random attention (models *b: --qk-norm-scale 4 / --qk-proj-scale 6, with which the random
# routers spread tokens over the experts as a balance-trained router does, mkrandmodel's header), then rounds of
# `xpuinfer bench -p PP -n TG -r 1 --json` over every model, interleaved in a rotated order, per PLAN step
# ("threads:quant:rounds"), under taskset on the first THREADS cores, until BUDGET_S seconds are spent.
#   moe3  = mkrandmodel --preset qwen3moe-mini      dense3 = --arch qwen3 --inter 3072 (same other sizes)
#   moe2  = mkrandmodel --preset qwen2moe-mini      dense2 = --arch qwen2 --heads 8 --kv-heads 8 --inter 2816
# Out: OUT/moe.jsonl (one line per test with model and round), OUT/machine.txt, OUT/log.txt.
#   usage: run.sh OUT [BUDGET_S]   env: PLAN ("2:bf16:4 16:bf16:3 2:q8:2"), PP (512), TG (64), W (/tmp/moe)
set -u
D=$(cd "$(dirname "$0")" && pwd); O=$1; BUDGET=${2:-400}; T0=$(date +%s)
export LD_LIBRARY_PATH=$D/lib
PLAN=${PLAN:-"2:bf16:4 16:bf16:3 2:q8:2"}; PP=${PP:-512}; TG=${TG:-64}; W=${W:-/tmp/moe}
mkdir -p "$O" "$W"
M=$O/machine.txt L=$O/log.txt
{ lscpu; echo "nproc: $(nproc)"; echo "commit: $(cat "$D/commit.txt")"; echo "start: $(date -u +%FT%TZ) $(uptime)"
  ldd "$D/bin/xpuinfer"; } > "$M" 2>&1
if ldd "$D/bin/xpuinfer" | grep -q "not found"; then echo "missing libraries (above)" | tee -a "$L"; exit 1; fi
G=$D/bin/mkrandmodel
B3="--qk-norm-scale 4" B2="--qk-proj-scale 6"
declare -A ARGS=([moe3]="--preset qwen3moe-mini" [dense3]="--preset qwen3moe-mini --arch qwen3"
  [moe2]="--preset qwen2moe-mini" [dense2]="--preset qwen2moe-mini --arch qwen2"
  [moe3b]="--preset qwen3moe-mini $B3" [dense3b]="--preset qwen3moe-mini --arch qwen3 $B3"
  [moe2b]="--preset qwen2moe-mini $B2" [dense2b]="--preset qwen2moe-mini --arch qwen2 $B2")
NAMES="moe3 dense3 moe2 dense2 moe3b dense3b moe2b dense2b"
for m in $NAMES; do $G "$W/$m" ${ARGS[$m]} > /dev/null 2>> "$L" & done; wait
for m in $NAMES; do cp "$D"/tok/* "$W/$m/"; grep -h '"model_type"\|"intermediate_size"\|"num_experts"' "$W/$m/config.json" | tr -d '\n ' | sed "s/^/$m: /" >> "$L"; echo >> "$L"; done
echo "models made at +$(( $(date +%s) - T0 ))s" >> "$L"
set -- $NAMES; NA=$#; ARR=("$@")
for step in $PLAN; do
  IFS=: read -r T Q R <<< "$step"
  for ((r = 0; r < R; r++)); do
    for ((i = 0; i < NA; i++)); do
      m=${ARR[$(( (i + r) % NA ))]}
      el=$(( $(date +%s) - T0 )); [ "$el" -lt "$BUDGET" ] || { echo "budget spent at +${el}s: stopped before t$T $Q round $r $m" >> "$L"; break 3; }
      timeout 120 taskset -c 0-$((T - 1)) "$D/bin/xpuinfer" bench -m "$W/$m" -p "$PP" -n "$TG" -r 1 -t "$T" --quant "$Q" --json 2>> "$L" |
        sed "s/^{/{\"model\": \"$m\", \"round\": $r, /" >> "$O/moe.jsonl"
    done
    echo "t$T $Q round $r done at +$(( $(date +%s) - T0 ))s" >> "$L"
  done
done
echo "end: $(date -u +%FT%TZ) $(uptime)" >> "$M"
