#!/usr/bin/env bash
# Runs on the 16-core host from the folder pack.sh's tar was unpacked in, in the repository root of the sent tree
# (its tests/data/tokenizers/qwen3 is the tokenizer): makes the four models with mkrandmodel (qwen3moe-mini MoE
# and its dense peer, with --qk-norm-scale 1 and 4), then rounds until BUDGET_S seconds are spent, each round
# visiting (model, binary) in a rotated order: `xpuinfer bench -p 512 -n 64 -r 3 -t 2 --json` pinned to 2 cores
# (taskset -c 2,3); the MoE models with the base and the new binary, the dense ones (unchanged code) with the new.
# Out: OUT/runs.jsonl (bench's lines with round, model, bin, cpu_s = user+sys of the run), OUT/machine.txt, OUT/log.txt.
#   usage: run.sh OUT [BUDGET_S]
set -u
D=$(cd "$(dirname "$0")" && pwd); O=$1; BUDGET=${2:-300}; T0=$(date +%s)
export LD_LIBRARY_PATH=$D/lib
mkdir -p "$O"; W=/tmp/mq; mkdir -p $W; L=$O/log.txt
{ lscpu; echo "nproc: $(nproc)"; echo "commit: $(cat "$D/commit.txt")"; echo "start: $(date -u +%FT%TZ) $(uptime)"
  ldd "$D/new/xpuinfer"; } > "$O/machine.txt" 2>&1
M=$D/bin/mkrandmodel
$M $W/moe --preset qwen3moe-mini 2>> $L & $M $W/dense --preset qwen3moe-mini --arch qwen3 2>> $L &
$M $W/moe-qk4 --preset qwen3moe-mini --qk-norm-scale 4 2>> $L &
$M $W/dense-qk4 --preset qwen3moe-mini --arch qwen3 --qk-norm-scale 4 2>> $L & wait
for m in moe dense moe-qk4 dense-qk4; do cp tests/data/tokenizers/qwen3/* $W/$m/; done
echo "models made at +$(( $(date +%s) - T0 ))s" >> $L
RUNS=(moe:base moe:new dense:new moe-qk4:base moe-qk4:new dense-qk4:new); N=${#RUNS[@]}
for ((r = 0; ; r++)); do
  for ((i = 0; i < N; i++)); do
    IFS=: read -r m b <<< "${RUNS[$(( (i + r) % N ))]}"
    el=$(( $(date +%s) - T0 )); [ "$el" -lt "$BUDGET" ] || { echo "budget spent at +${el}s in round $r" >> $L; break 2; }
    LD_LIBRARY_PATH=$D/$b:$D/lib python3 -c 'import resource,subprocess,sys
p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, text=True)
u = resource.getrusage(resource.RUSAGE_CHILDREN)
for l in p.stdout.splitlines():
    if l.startswith("{"): print(l[:-1] + ", \"cpu_s\": %.3f}" % (u.ru_utime + u.ru_stime))' \
      taskset -c 2,3 $D/$b/xpuinfer bench -m $W/$m -p 512 -n 64 -r 3 -t 2 --json 2>> $L |
      sed "s/^{/{\"round\": $r, \"model\": \"$m\", \"bin\": \"$b\", /" >> "$O/runs.jsonl"
  done
  echo "round $r done at +$(( $(date +%s) - T0 ))s" >> $L
done
echo "end: $(date -u +%FT%TZ) $(uptime)" >> "$O/machine.txt"
