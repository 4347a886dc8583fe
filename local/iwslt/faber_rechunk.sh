#!/usr/bin/env bash
# Faber 2020's rechunking study (issue 37), with its missing arm: training units that keep the
# sentence boundaries (each sentence a unit: Faber's unrechunked data), beside the stored 100-word
# blocks and the text rechunked at 25-50 + 50-75 words (each chunk a unit), all 266k words of
# IWSLT-CPU's training split, conf/train_transformer_bpe.yaml, one thread and the same cap each,
# checkpoints chosen on valid (100-word blocks). Every model is scored on three forms of test2011:
#   test_ref     one stream (100-word blocks): no boundary is given
#   test_sent    each sentence its own stream (Faber's unrechunked test)
#   test_chunk65 65-word chunks cut anywhere, each its own stream (Faber's rechunked test)
# test_sent and test_chunk65 are decoded with --stream-end open: a unit's end is not made a
# sentence end, so a model's marks there are its own. Run from recipes/iwslt; rerun to resume.
#   local/faber_rechunk.sh [--stage 1] [--minutes 25]
set -euo pipefail
stage=1
minutes=25
. ./db.sh
. utils/parse_options.sh
n=$(wc -l < "$IWSLT/dev2012")
ntrain=$((n * 9 / 10))
if [ "$stage" -le 1 ]; then
  [ -f data/train/text ] && [ -f data/valid/text ] && [ -f data/test_ref/text ] || ./run.sh --stage 1 --stop-stage 1
  punctkit prepare "$IWSLT/dev2012" --lines "1:$ntrain" -o data/train_rechunk --rechunk 25-50,50-75
  punctkit prepare "$IWSLT/dev2012" --lines "1:$ntrain" -o data/train_sent --rechunk sentences
  punctkit prepare "$IWSLT/test2011" -o data/test_sent --rechunk sentences
  punctkit prepare "$IWSLT/test2011" -o data/test_chunk65 --rechunk 65
fi
if [ "$stage" -le 2 ]; then
  for arm in blocks:train rechunk:train_rechunk sent:train_sent; do
    tag=transformer_bpe_${arm%%:*}
    ./run.sh --stage 3 --stop-stage 6 --train-set "${arm#*:}" --tag "$tag" --train-config conf/train_transformer_bpe.yaml \
      --test-sets test_ref --train-args "--set train.threads=1 --set train.max_minutes=$minutes"
    ./run.sh --stage 5 --stop-stage 6 --train-set "${arm#*:}" --tag "$tag" --train-config conf/train_transformer_bpe.yaml \
      --test-sets "test_sent test_chunk65" --decode-args "--stream-end open"
  done
fi
