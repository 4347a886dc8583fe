#!/usr/bin/env bash
# Speech2Vec vectors of the training audio for the word+speech rows (run after stage 2):
# exp/s2v/s2v.txt, read by conf/train_yitao_word_speech_sum.yaml and
# conf/train_faber_w2v_s2v_concat.yaml (embeddings: speech:). Log: exp/s2v/s2v.txt.log.
set -euo pipefail
data=data
expdir=exp
train_set=train
dim=50
window=2
epochs=5
threads=2
help_message="Usage: $0 [--data data] [--expdir exp] [--epochs 5] [--window 2] [--dim 50] [--threads 2]"
. ./path.sh
. ./cmd.sh
. utils/parse_options.sh

out=$expdir/s2v/s2v.txt
if [ -f "$out" ]; then
  echo "$0: $out exists: nothing to do (remove it to train again)"
  exit 0
fi
mkdir -p "$expdir/s2v"
${train_cmd} "$expdir/s2v/s2v_train.log" \
  punctkit s2v-train "$data/$train_set" "$out" --dim "$dim" --window "$window" --epochs "$epochs" --threads "$threads"
