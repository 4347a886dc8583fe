#!/usr/bin/env bash
# IWSLT TED data directories: data/{train,valid,test_ref[,test_asr]}.
# The files are unsegmented word streams; they are kept so, stored as
# consecutive fixed-length blocks that ignore sentence ends (utt2spk maps every
# block to its stream), so no model can learn "end of input = PERIOD".
set -euo pipefail
data=data
inventory=4class
block_len=100
max_words=0          # >0: keep only the first N words of each set (tiny runs)
train_rechunk=       # e.g. 25-50,50-75: also data/train_rechunk, the training text rechunked (Faber 2020)
help_message="Usage: $0 [--data data] [--inventory 4class] [--block-len 100] [--max-words N] [--train-rechunk 25-50,50-75]"
. ./db.sh
. utils/parse_options.sh

lines() {  # lines FIRST LAST -> FIRST:LAST, shortened by --max-words
  local a=$1 b=$2
  if [ "$max_words" -gt 0 ] && [ $((b - a + 1)) -gt "$max_words" ]; then b=$((a + max_words - 1)); fi
  echo "$a:$b"
}
prep() {  # prep SRC LINES OUT
  punctkit prepare "$1" --lines "$2" -o "$data/$3" --inventory "$inventory" --block-len "$block_len"
}
[ -f "$IWSLT/dev2012" ] || { echo "$0: $IWSLT/dev2012 not found (run stage 0)" >&2; exit 1; }

if [ -f "$IWSLT/train2012" ]; then
  echo "train = train2012, valid = dev2012"
  prep "$IWSLT/train2012" "$(lines 1 "$(wc -l < "$IWSLT/train2012")")" train
  prep "$IWSLT/dev2012" "$(lines 1 "$(wc -l < "$IWSLT/dev2012")")" valid
else
  n=$(wc -l < "$IWSLT/dev2012")
  ntrain=$((n * 9 / 10))
  echo "train2012 absent: train = dev2012 lines 1-$ntrain (90%), valid = lines $((ntrain + 1))-$n (10%) [IWSLT-CPU]"
  prep "$IWSLT/dev2012" "$(lines 1 "$ntrain")" train
  prep "$IWSLT/dev2012" "$(lines $((ntrain + 1)) "$n")" valid
fi
if [ -n "$train_rechunk" ]; then  # the training lines again, joined and cut at random lengths, each chunk its own unit
  src=$IWSLT/dev2012; range=$(lines 1 "${ntrain:-$(wc -l < "$IWSLT/dev2012")}")
  [ -f "$IWSLT/train2012" ] && { src=$IWSLT/train2012; range=$(lines 1 "$(wc -l < "$src")"); }
  punctkit prepare "$src" --lines "$range" -o "$data/train_rechunk" --inventory "$inventory" --rechunk "$train_rechunk"
fi
prep "$IWSLT/test2011" "$(lines 1 "$(wc -l < "$IWSLT/test2011")")" test_ref
if [ -f "$IWSLT/test2011asr" ]; then
  prep "$IWSLT/test2011asr" "$(lines 1 "$(wc -l < "$IWSLT/test2011asr")")" test_asr
fi
for x in train valid test_ref; do
  echo "== $data/$x"; punctkit stats "$data/$x"
done
