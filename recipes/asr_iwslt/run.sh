#!/usr/bin/env bash
# Speech where the audio does not give the answer away, and a real recognizer in the loop
# (issue #16). The stages of ../TEMPLATE/punct.sh, numbered as in recipes/iwslt:
#   1 data (local/data.sh): IWSLT text in 20-60-word utterances, synthesized with the prosody of
#     conf/synth.conf (PERIOD and QUESTION spoken with probability 0.8, COMMA 0.5, a hesitation
#     comma after one unmarked word in 25; fixed, never tuned), voices and rates drawn per
#     utterance from --seed: train = espeak-ng voices + flite slt, awb, kal; valid and
#     test = flite rms, held out, on text held out (dev2012's valid part, test2011).
#     Word timings by forced alignment (punctkit align) for every set; valid_asr and
#     test_asr = the words pocketsphinx recognizes (punctkit recognize), marks projected.
#   2 fbank+pitch features (43 dims, every third frame), global CMVN, validation
#   3-6 inputs, train (on reference words with aligned audio; checkpoints chosen on the
#     reference valid set), decode and score test_ref and test_asr; 7-8 skipped for audio models
# Size of the default run: train = dev2012 lines 1-36,000 (~900 utterances, ~3.3 h of audio),
# valid = dev2012 lines 266,221-272,220 (~150 utterances), test = test2011 (~310 utterances,
# ~1.2 h): the table's twelve trainings, 12 minutes each at most, took about 1.3 h on 2 cores:
#   ./run.sh --stop-stage 2 --local-data-opts "--nj 2"
#   local/s2v.sh                                   # Speech2Vec vectors for the two word+speech rows
#   ./run.sh --stage 3 --stop-stage 6 --nj 1 --train-config conf/train_$m.yaml \
#     --train-args "--set train.threads=1 --set train.max_minutes=12"   # two side by side (RESULTS.md)
#   # m = lexical, acoustic, fused_{concat,add,max,average,stochastic}, lexical_pauses,
#   #     concat_transformer, yitao_word_speech_sum, faber_w2v_s2v_concat, lexical_scratch
#   # (the lexical stream reads static vectors pooled from MiniLM; lexical_scratch learns its own)
#   # best system: conf/train_fused_concat_textinit.yaml, whose text stream starts from a lexical
#   # model trained on all of IWSLT's text (train.init; the commands are in its header)
#   punctkit results exp/train_*
# Smoke run (tests): ./run.sh --local-data-opts "--tiny true" --train-config conf/train_tiny.yaml
set -euo pipefail
train_config=conf/train_fused_stochastic.yaml
. ./path.sh

./punct.sh \
  --train-set train --valid-set valid --test-sets "test_ref test_asr" \
  --use-audio true --nj 2 \
  --train-config "$train_config" \
  "$@"
