#!/usr/bin/env bash
# Synthesized-speech IWSLT: IWSLT text spoken by espeak-ng, with exact word timings.
# The stages of ../TEMPLATE/punct.sh, numbered as in recipes/iwslt:
#   1 data: 20-60-word utterances cut from IWSLT without regard to sentence ends, synthesized
#     (local/data.sh; voices and rates from --local-data-opts "--seed S")
#   2 fbank+pitch features (40 + 3 dims, every third frame), global CMVN, validation
#   3-6 inputs, train, decode, score; 7 and 8 (pack, demo) are skipped: audio models decode only
# Default: the fused model with stochastic mask pooling (Klejch 2017) at CPU size.
# Smoke run (about a minute): ./run.sh --local-data-opts "--tiny true" --train-config conf/train_tiny_stochastic.yaml
set -euo pipefail
train_config=conf/train_fused_stochastic.yaml
. ./path.sh

./punct.sh \
  --train-set train --valid-set valid --test-sets "test" \
  --use-audio true --nj 2 \
  --train-config "$train_config" \
  "$@"
