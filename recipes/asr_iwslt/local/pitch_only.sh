#!/usr/bin/env bash
# Klejch 2017's "Acoustic (pitch only)" row (issue 37): the acoustic-only hierarchical encoder of
# conf/train_acoustic.yaml over Kaldi pitch features alone (3 dims: normalized log-pitch, delta,
# probability of voicing; Klejch's had 4), beside the table's 43-dim fbank+pitch row. Stage 1's
# data directories are copied into data_pitch/ without their features (as Kaldi's
# utils/copy_data_dir.sh: the audio files stay where stage 1 wrote them), stage 2 extracts pitch
# only, and the model trains with the table's budget (12 minutes of one thread beside one other
# training; checkpoints chosen on valid). Run from recipes/asr_iwslt after ./run.sh --stop-stage 1.
#   local/pitch_only.sh [--stage 2]   (--stage 3: train and score only)
set -euo pipefail
stage=2
. utils/parse_options.sh
sets="train valid test_ref test_asr"
if [ "$stage" -le 2 ]; then
  for x in $sets; do
    [ -f "data/$x/text" ] || { echo "$0: data/$x not found: run ./run.sh --stop-stage 1 first" >&2; exit 1; }
    mkdir -p "data_pitch/$x"
    find "data/$x" -maxdepth 1 -type f ! -name 'feats*' ! -name 'cmvn*' -exec cp {} "data_pitch/$x/" \;
  done
  ./run.sh --data data_pitch --stage 2 --stop-stage 2 --nj 1 --feats-kind pitch
fi
./run.sh --data data_pitch --stage 3 --stop-stage 6 --nj 1 --train-config conf/train_acoustic.yaml \
  --tag train_acoustic_pitch --train-args "--set train.threads=1 --set train.max_minutes=12"
