#!/usr/bin/env bash
# Stage 1 of the ASR recipe: data/{train,valid,test_ref} with their audio and word timings,
# and data/{valid_asr,test_asr}, the words pocketsphinx recognizes in valid's and test's audio.
#   text: IWSLT cut into utterances of 20-60 words without regard to sentence ends;
#     train from dev2012's training part (its first 90 %, as recipes/iwslt), valid from its
#     valid part (the last 10 %), test from test2011: text held out of training
#   speech: `punctkit synthesize` with the prosody of conf/synth.conf (not every mark is
#     spoken, some unmarked words are followed by a pause); each utterance's voice and rate
#     drawn from --seed: train = espeak-ng voices + flite slt, awb, kal; valid and test =
#     flite rms, a voice held out of training (pocketsphinx recognizes it best)
#     (train: its first half spoken by espeak-ng, its second half by flite)
#   word timings: espeak-ng's own word events for its utterances; forced alignment of the
#     reference words (`punctkit align`, --nj jobs) for flite's, which gives none (espeak-ng's
#     robotic speech defeats the aligner on some utterances, flite's does not)
#   recognized sets: `punctkit recognize` (--nj jobs): recognized words, their ctm, and the
#     reference marks projected onto them by edit distance
set -euo pipefail
data=data
seed=1
tiny=false           # true: a handful of short utterances (tests, smoke runs)
nj=2                 # synthesis processes, alignment and recognition jobs
skip_bad=false       # true: utterances align/recognize cannot handle are logged and left out
train_lines=1:36000              # dev2012 lines (one word a line): ~900 utterances, ~3.3 h
valid_lines=266221:272220        # dev2012's valid part (after its first 90 %): ~150 utterances
test_lines=1:12626               # test2011, all of it: ~310 utterances, ~1.2 h
espeak_voices=en-us,en,en+f3,en-us+m3,en+f4   # training voices, first half of train
flite_voices=flite:slt,flite:awb,flite:kal      # training voices, second half of train
test_voices=flite:rms
rates=150,165,180,195
help_message="Usage: $0 [--data data] [--seed 1] [--tiny true] [--nj 2] [--skip-bad false] [--train-lines A:B] ..."
. ./db.sh
. ./cmd.sh
. utils/parse_options.sh

if [ "$tiny" = true ]; then
  train_lines=1:400; valid_lines=266221:266300; test_lines=1:120
fi
[ -f "$IWSLT/dev2012" ] || { echo "$0: $IWSLT/dev2012 not found (run stage 0)" >&2; exit 1; }
for tool in espeak-ng flite sox; do
  command -v $tool >/dev/null || { echo "$0: $tool missing: apt-get install -y espeak-ng flite sox" >&2; exit 1; }
done
mapfile -t synth_opts < <(grep -v '^ *#' conf/synth.conf | grep -v '^ *$')
bad_opt=; [ "$skip_bad" = true ] && bad_opt=--skip-bad

# text
punctkit prepare "$IWSLT/dev2012" --lines "$train_lines" -o "$data/train_text" --name asr_train --rechunk 20-60 --seed "$seed"
punctkit prepare "$IWSLT/dev2012" --lines "$valid_lines" -o "$data/valid_text" --name asr_valid --rechunk 20-60 --seed "$seed"
punctkit prepare "$IWSLT/test2011" --lines "$test_lines" -o "$data/test_ref_text" --name asr_test --rechunk 20-60 --seed "$seed"

synth() {  # synth TEXT OUT VOICES
  echo "== $2: synthesize (voices $3; ${synth_opts[*]})"
  punctkit synthesize "$1" "$2" --nj "$nj" --seed "$seed" --voices "$3" --rates "$rates" "${synth_opts[@]}"
}
align_dir() {  # align_dir DATA: forced alignment into DATA/ctm
  echo "== $1: forced alignment ($nj job(s))"
  ${decode_cmd} JOB=1:"$nj" "$1/log/align.JOB.log" punctkit align "$1" --nj "$nj" --job JOB $bad_opt
  punctkit align "$1" --nj "$nj" --merge
}
punctkit split-data "$data/train_text" 2
synth "$data/train_text/split2/1" "$data/train_espeak" "$espeak_voices"
synth "$data/train_text/split2/2" "$data/train_flite" "$flite_voices"
align_dir "$data/train_flite"
punctkit combine-data "$data/train" "$data/train_espeak" "$data/train_flite"
for x in valid test_ref; do
  synth "$data/${x}_text" "$data/$x" "$test_voices"
  align_dir "$data/$x"
done
for x in valid test; do
  src=$data/$x; [ "$x" = test ] && src=$data/test_ref
  echo "== $data/${x}_asr: recognize $src ($nj job(s))"
  ${decode_cmd} JOB=1:"$nj" "$data/${x}_asr/log/recognize.JOB.log" \
    punctkit recognize "$src" "$data/${x}_asr" --nj "$nj" --job JOB $bad_opt
  punctkit recognize "$src" "$data/${x}_asr" --nj "$nj" --merge
done
for x in train valid test_ref valid_asr test_asr; do
  echo "== $data/$x"; punctkit stats "$data/$x"
done
