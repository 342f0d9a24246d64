#!/bin/bash
# usage: ab.sh OUT ROUNDS "THREADS..." MODELS_DIR BASE_BIN_DIR NEW_BIN_DIR [PIN]
# Each round, for each thread count: moe, dense, moe-qk4, dense-qk4 (the MoE models with the base and the new
# binaries, the dense ones, whose code did not change, with the new one), pp512 x 3 under perf stat (task-clock).
# PIN: a taskset CPU list (the device host). Lines: round threads model binary tok/s task-clock-ms load.
# fixed lines: task-clock of load + warm-up + one token (-p 1 -r 1), subtracted from the CPU time per token.
out=$1; rounds=$2; ths=$3; mdir=$4; base=$5; new=$6; pin=${7:+taskset -c $7}
run() { # model bindir threads p r
  LD_LIBRARY_PATH=$2 $pin perf stat -x, -e task-clock $2/xpuinfer bench -m $mdir/$1 -p $4 -n 0 -t $3 -r $5 --json 2>&1
}
for m in moe dense moe-qk4 dense-qk4; do
  res=$(run $m $new 1 1 1); echo "fixed 1 $m new 0 $(echo "$res" | grep task-clock | cut -d, -f1) 0" >> $out
done
for r in $(seq $rounds); do for t in $ths; do for m in moe dense moe-qk4 dense-qk4; do
  case $m in dense*) ds=$new;; *) ds="$base $new";; esac
  for d in $ds; do
    res=$(run $m $d $t 512 3)
    tps=$(echo "$res" | grep -o '"tok_s":[ ]*[0-9.]*' | head -1 | grep -o '[0-9.]*$')
    cpu=$(echo "$res" | grep task-clock | cut -d, -f1)
    echo "$r $t $m $([ $d = $base ] && echo base || echo new) $tps $cpu $(cut -d' ' -f1 /proc/loadavg)" >> $out
  done
done; done; done
