#!/usr/bin/env bash
# Runs on the 16-core host from the folder pack.sh's tar was unpacked in (with tok/ = the Qwen3 tokenizer): one random bf16 model per family at Qwen3-0.6B's shape
# (mkrandmodel --arch A), then rounds of `xpuinfer bench -p PP -n TG -r 1 --json` over every model, interleaved
# (each round visits the models in a rotated order so no family always follows the same one), first at 2 threads,
# then 16, then q8 at 2 threads, until BUDGET_S seconds are spent (a round is never cut: a model's line is
# written only once its run ends). Out: OUT/families.jsonl (one line per test with model, round), OUT/sizes.jsonl
# (tensor bytes per model, sizes.py), OUT/machine.txt (lscpu, nproc, uptime, ldd), OUT/log.txt.
#   usage: run.sh OUT [BUDGET_S]   env: ARCHS, PLAN ("2:bf16:3 16:bf16:2 2:q8:2" = threads:quant:rounds), PP, TG,
#   W (model folder, /tmp/fam), PRESET (qwen3-0.6b; tiny for a local check)
set -u
D=$(cd "$(dirname "$0")" && pwd); O=$1; BUDGET=${2:-270}; T0=$(date +%s)
export LD_LIBRARY_PATH=$D/lib
ARCHS=${ARCHS:-"qwen3 llama qwen2 mistral smollm3 granite phi3 olmo2 gemma2 gemma3_text"}
PLAN=${PLAN:-"2:bf16:3 16:bf16:2 2:q8:2"}; PP=${PP:-512}; TG=${TG:-64}; W=${W:-/tmp/fam}; PRESET=${PRESET:-qwen3-0.6b}
mkdir -p "$O" "$W"
M=$O/machine.txt L=$O/log.txt
{ lscpu; echo "nproc: $(nproc)"; echo "commit: $(cat "$D/commit.txt")"; echo "start: $(date -u +%FT%TZ) $(uptime)"
  ldd "$D/bin/xpuinfer"; } > "$M" 2>&1
if ldd "$D/bin/xpuinfer" | grep -q "not found"; then echo "missing libraries (above)" | tee -a "$L"; exit 1; fi
n=0; for a in $ARCHS; do "$D/bin/mkrandmodel" "$W/$a" --arch "$a" --preset "$PRESET" > /dev/null 2>> "$L" & n=$((n+1)); done; wait
for a in $ARCHS; do cp "$D"/tok/* "$W/$a/"; done
python3 "$D/sizes.py" "$W" $ARCHS > "$O/sizes.jsonl" 2>> "$L"
echo "models made at +$(( $(date +%s) - T0 ))s" >> "$L"
set -- $ARCHS; NA=$#; ARR=("$@")
for step in $PLAN; do
  IFS=: read -r T Q R <<< "$step"
  for ((r = 0; r < R; r++)); do
    for ((i = 0; i < NA; i++)); do
      a=${ARR[$(( (i + r) % NA ))]}
      el=$(( $(date +%s) - T0 )); [ "$el" -lt "$BUDGET" ] || { echo "budget spent at +${el}s: stopped before t$T $Q round $r $a" >> "$L"; break 3; }
      timeout 90 "$D/bin/xpuinfer" bench -m "$W/$a" -p "$PP" -n "$TG" -r 1 -t "$T" --quant "$Q" --json 2>> "$L" |
        sed "s/^{/{\"model\": \"$a\", \"round\": $r, /" >> "$O/families.jsonl"
    done
    echo "t$T $Q round $r done at +$(( $(date +%s) - T0 ))s" >> "$L"
  done
done
echo "end: $(date -u +%FT%TZ) $(uptime)" >> "$M"
