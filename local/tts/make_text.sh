#!/usr/bin/env bash
# Text of the synthesized-speech corpus: data/{train,valid,test}_text, utterances of
# 20-60 words cut from the IWSLT word stream without regard to sentence ends (as the
# IWSLT benchmark is cut), so an utterance need not end at a PERIOD.
# train, valid and test come from different parts of dev2012; test adds test2011.
set -euo pipefail
data=data
inventory=4class
seed=1
tiny=false           # true: a few dozen utterances (tests, smoke runs)
train_lines=1:100000           # dev2012 lines (one word a line): ~2500 utterances
valid_lines=200001:210000      # ~250 utterances
test_lines=250001:256000       # ~150 utterances, plus test2011 below
test2011_lines=1:6000          # ~150 utterances
help_message="Usage: $0 [--data data] [--tiny true] [--seed 1] [--train-lines A:B] ..."
. ./db.sh
. utils/parse_options.sh

if [ "$tiny" = true ]; then
  train_lines=1:1000; valid_lines=200001:200300; test_lines=250001:250300; test2011_lines=1:300
fi
[ -f "$IWSLT/dev2012" ] || { echo "$0: $IWSLT/dev2012 not found" >&2; exit 1; }

prep() {  # prep NAME LINES FILE...
  local name=$1 lines=$2; shift 2
  punctkit prepare "$@" --lines "$lines" -o "$data/${name}_text" --name "tts_$name" \
    --inventory "$inventory" --rechunk 20-60 --seed "$seed"
}
prep train "$train_lines" "$IWSLT/dev2012"
prep valid "$valid_lines" "$IWSLT/dev2012"
# test: a part of dev2012 and the start of test2011, each cut on its own, then joined
prep test_dev "$test_lines" "$IWSLT/dev2012"
prep test_tst "$test2011_lines" "$IWSLT/test2011"
punctkit combine-data "$data/test_text" "$data/test_dev_text" "$data/test_tst_text"
rm -rf "$data/test_dev_text" "$data/test_tst_text"
for x in train valid test; do
  echo "== $data/${x}_text"; punctkit stats "$data/${x}_text"
done
