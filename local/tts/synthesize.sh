#!/usr/bin/env bash
# Speak a text data directory with espeak-ng: local/tts/synthesize.sh [opts] SRC OUT
# OUT gets wav.scp (16 kHz mono wavs in OUT_wav/), ctm (exact word timings from
# espeak-ng's word and phoneme events), utt2dur, utt2voice, and SRC's text/labels/speakers.
# The voice and rate of each utterance are a fixed function of --seed and its id.
set -euo pipefail
nj=1
seed=1
voices=en-us,en,en+f3,en-us+m3,en+f4
rates=150,165,180,195
help_message="Usage: $0 [--nj N] [--seed S] [--voices v1,v2] [--rates r1,r2] SRC OUT"
. utils/parse_options.sh
[ $# -eq 2 ] || { echo "$help_message" >&2; exit 1; }
command -v espeak-ng >/dev/null || { echo "$0: espeak-ng missing: apt-get install -y espeak-ng sox" >&2; exit 1; }
punctkit synthesize "$1" "$2" --nj "$nj" --seed "$seed" --voices "$voices" --rates "$rates"
punctkit validate-data-dir "$2"
