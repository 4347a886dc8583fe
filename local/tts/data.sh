#!/usr/bin/env bash
# Stage 1 of the synthesized-speech recipe: data/{train,valid,test} with their audio.
# IWSLT text cut into utterances of 20-60 words (local/make_text.sh -> data/<set>_text),
# spoken by espeak-ng (local/synthesize.sh -> wav.scp, ctm, utt2dur; voices and rates from --seed).
set -euo pipefail
data=data
seed=1
tiny=false           # true: a few dozen utterances (tests, smoke runs)
nj=2                 # synthesis processes
help_message="Usage: $0 [--data data] [--seed 1] [--tiny true] [--nj 2]"
. utils/parse_options.sh

local/make_text.sh --data "$data" --seed "$seed" --tiny "$tiny"
for x in train valid test; do
  local/synthesize.sh --nj "$nj" --seed "$seed" "$data/${x}_text" "$data/$x"
done
