#!/usr/bin/env bash
# Synthesized-speech IWSLT (issue 6): IWSLT text spoken by espeak-ng, with exact word timings.
#   1 text: utterances of 20-60 words cut from IWSLT without regard to sentence ends
#   2 synthesize each set with espeak-ng (wav.scp, ctm, utt2dur; voices and rates from --seed)
#   3 fbank+pitch features (40 + 3 dims) and global CMVN stats
#   4+ train / decode / score through ../TEMPLATE/punct.sh (its stages 3..6), once --train-config
#      names an acoustic or fused model config (hier_seq2seq, concat_transformer)
# Smoke run: ./run.sh --tiny true   (a few dozen utterances, under a minute)
set -euo pipefail

log() { echo "$(date '+%Y-%m-%dT%H:%M:%S') ($(basename "$0"):${BASH_LINENO[0]}) $*"; }

stage=1
stop_stage=3
nj=2
seed=1
tiny=false
data=data
fbank_conf=conf/fbank.conf
pitch_conf=conf/pitch.conf
feats_kind=fbank_pitch
subsample=3
train_set=train
valid_set=valid
test_sets=test
train_config=        # e.g. conf/train_hier_seq2seq.yaml (stages 4+)
decode_config=conf/decode.yaml
train_args=          # passed to punctkit train, e.g. "--set train.max_minutes=10"
decode_args=         # passed to punctkit decode, e.g. "--beam 1"
ngpu=0
help_message="Usage: $0 [--stage N] [--stop-stage N] [--nj N] [--seed S] [--tiny true] [--data DIR]
  [--fbank-conf F] [--pitch-conf F] [--feats-kind fbank_pitch|fbank|pitch] [--train-config F]
  [--train-args \"...\"] [--decode-args \"...\"] [--ngpu N]"

. ./path.sh
. ./cmd.sh
. utils/parse_options.sh

sets="$train_set $valid_set $test_sets"

if [ "$stage" -le 1 ] && [ "$stop_stage" -ge 1 ]; then
  log "stage 1: text utterances (20-60 words) from IWSLT"
  local/make_text.sh --data "$data" --seed "$seed" --tiny "$tiny"
fi

if [ "$stage" -le 2 ] && [ "$stop_stage" -ge 2 ]; then
  log "stage 2: espeak-ng synthesis"
  for x in $sets; do
    local/synthesize.sh --nj "$nj" --seed "$seed" "$data/${x}_text" "$data/$x"
  done
fi

if [ "$stage" -le 3 ] && [ "$stop_stage" -ge 3 ]; then
  log "stage 3: $feats_kind features and CMVN"
  for x in $sets; do
    ${decode_cmd} JOB=1:"$nj" "$data/$x/log/feats.JOB.log" \
      punctkit extract-feats "$data/$x" "$data/$x/feats" --kind "$feats_kind" --subsample "$subsample" \
        --fbank-conf "$fbank_conf" --pitch-conf "$pitch_conf" --nj "$nj" --job JOB
    punctkit extract-feats "$data/$x" "$data/$x/feats" --nj "$nj" --merge
    punctkit compute-cmvn "$data/$x"
    punctkit validate-data-dir "$data/$x"
  done
fi

if [ "$stop_stage" -ge 4 ]; then
  if [ -z "$train_config" ]; then
    log "stages 4+ (train/decode/score) need --train-config; stopping after stage 3"
    exit 0
  fi
  log "stages 4+: ../TEMPLATE/punct.sh stages $(( stage > 4 ? stage - 1 : 3 ))..$((stop_stage - 1))"
  ./punct.sh --stage $(( stage > 4 ? stage - 1 : 3 )) --stop-stage $((stop_stage - 1)) --nj "$nj" \
    --data "$data" --train-set "$train_set" --valid-set "$valid_set" --test-sets "$test_sets" \
    --train-config "$train_config" --decode-config "$decode_config" --use-audio true \
    --fbank-conf "$fbank_conf" --pitch-conf "$pitch_conf" --feats-kind "$feats_kind" \
    --train-args "$train_args" --decode-args "$decode_args" --ngpu "$ngpu"
fi
