#!/usr/bin/env bash
# Faber 2020's casing study (issue 37): conf/train_transformer_bpe_casing.yaml on TED's train_1m,
# labels without case (4class) and with it (Faber's case4: U/L x the marks), both reading lower-cased
# words; 40 minutes of one thread each, checkpoints chosen on valid (dev2012's, punctuation). The
# 4class arm is scored on test_ref; the case4 arm on test_cased (the same marks, each word's U/L from
# the published test2011), which gives the case figures too. Run from recipes/ted; rerun to resume.
#   local/faber_casing.sh [--stage 1]   (stage 1: data_4class and data_case4)
set -euo pipefail
stage=3
. utils/parse_options.sh
if [ "$stage" -le 1 ]; then
  ./run.sh --data data_4class --stage 1 --stop-stage 1 --local-data-opts "--inventory 4class --ted-sets train_1m"
  ./run.sh --data data_case4 --stage 1 --stop-stage 1 --local-data-opts "--inventory case4 --ted-sets train_1m"
fi
for inv in 4class case4; do
  tests=test_ref; [ $inv = case4 ] && tests=test_cased
  ./run.sh --data data_$inv --stage 3 --stop-stage 6 --train-set train_1m --tag "faber_bpe_${inv}_1m" \
    --train-config conf/train_transformer_bpe_casing.yaml --test-sets "valid $tests"
done
