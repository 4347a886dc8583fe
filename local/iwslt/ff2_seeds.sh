#!/usr/bin/env bash
# FF2's ablations over three seeds (issue 37): FF2 (interaction attention in MiniLM, the paper's
# ITE, and in TNP), w/o TNP (MiniLM with interaction attention + fusion layer) and w/o interaction
# (plain attention in both streams), seeds 1-3 each, IWSLT-CPU's 266k words, checkpoints chosen on
# valid, test2011 scored. Every run gets the same budget: --epochs N (default 6: what FF2 finished
# in the 60-minute table on 2 cores), no time cap, so the arms compare at equal training, not at
# equal minutes of a shared machine. Run from recipes/iwslt; rerun to resume (a finished run stops
# at once). On a lent GPU: --ngpu 1. Summary (mean ± sd over seeds): punctkit results --seeds exp/ff2s_*
# (or results/ff2_seeds/*: finished runs' history, config and score.json, kept in the repository).
# --precision fp32 (default): every run in the same arithmetic, whatever the machine (the configs'
# `precision: auto` would be bf16 on a CPU with native bfloat16 and fp32 on one without; seed 1 of
# FF2 and w/o TNP trained in fp32, session 31).
#   local/ff2_seeds.sh [--epochs 6] [--threads 2] [--ngpu 0] [--seeds "1 2 3"] [--arms "ff2 notnp nointeract"]
#                      [--precision fp32]
set -euo pipefail
epochs=6
threads=2
ngpu=0
seeds="1 2 3"
arms="ff2 notnp nointeract"
precision=fp32
. utils/parse_options.sh
for seed in $seeds; do
  for arm in $arms; do
    conf=conf/train_ff2_minilm.yaml; [ "$arm" = ff2 ] || conf=conf/train_ff2_minilm_$arm.yaml
    ./run.sh --stage 3 --stop-stage 6 --ngpu "$ngpu" --train-config "$conf" --tag "ff2s_${arm}_seed$seed" \
      --train-args "--set train.seed=$seed --set train.epochs=$epochs --set train.max_minutes=null --set train.threads=$threads --set train.precision=$precision"
  done
done
