#!/usr/bin/env bash
# recipes/ted data directories, all in one label inventory (truecase4 unless --inventory):
#   train_1m train_2m train_all  TED talks: nested training subsets by talk (local/lists/*.txt)
#   valid_case                   TED talks held out by talk (local/lists/valid_case.txt): case choices
#   valid                        dev2012's last 10% of lines, as recipes/iwslt: punctuation choices
#   train_iwslt                  dev2012's first 90% (IWSLT-CPU's 266k training words, lower case)
#   calls_train calls_valid calls_test   Earnings-22 calls (Rev's NLP format), by call
#                                (local/lists/calls_*.txt: local/calls.py, balanced over accent regions), an
#                                utterance a speaker turn with its segments and ctm (a call one recording)
#   train_all_calls              train_all + calls_train (the shipped model's training data)
#   test_ref                     test2011 (IWSLT's lower-case words and marks)
#   test_cased                   test2011's words and marks in the case of the published text
#                                (local/cased_reference.py; case_unknown lists the words without one;
#                                case-aware inventories only: truecase4/6, case4/6)
# A talk is one stream (its lines are subtitle chunks) stored as consecutive 100-word blocks,
# utt2spk mapping each block to its talk; ids are the talks' Kaldi-safe ids (local/talks.py).
# The published text is repaired as punctkit prepare's options say (each repair counted with
# file:line in data/<set>/prepare.log): HTML entities decoded, stage notes removed, translator and
# reviewer lines dropped, contractions split as IWSLT's files have them (do n't, it 's).
set -euo pipefail
data=data
inventory=truecase4
block_len=100
max_talks=0     # >0: only the first N talks of each TED list (tiny runs)
max_words=0     # >0: only the first N lines (words) of dev2012's valid part and of test2011 (tiny runs)
max_calls=0     # >0: only the first N calls of each calls list (tiny runs)
ted_sets="valid_case train_1m train_2m train_all"
calls_sets="calls_train calls_valid calls_test"  # "" without the calls (then no train_all_calls)
help_message="Usage: $0 [--data data] [--inventory truecase4] [--block-len 100] [--max-talks N] [--max-words N]
  [--ted-sets \"$ted_sets\"]
  [--calls-sets \"$calls_sets\"] [--max-calls N]"
. ./db.sh
. utils/parse_options.sh

for f in "$TED/talks" "$IWSLT/dev2012" "$IWSLT/test2011"; do
  [ -e "$f" ] || { echo "$0: $f not found (run stage 0)" >&2; exit 1; }
done
mkdir -p "$data/local"
for x in $ted_sets; do
  echo "$x: TED talks of local/lists/$x.txt"
  python local/talks.py scp "local/lists/$x.txt" "$TED/talks" --max-talks "$max_talks" > "$data/local/$x.scp"
  punctkit prepare --file-list "$data/local/$x.scp" -o "$data/$x" --from text --inventory "$inventory" \
    --one-stream --block-len "$block_len" --decode-html --drop-notes --drop-lines '(Translator|Reviewer):' \
    --split-contractions
done

for x in $calls_sets; do
  [ -n "$CALLS" ] && [ -d "$CALLS/calls" ] || { echo "$0: the Earnings-22 calls are not found (CALLS in db.sh)" >&2; exit 1; }
  echo "$x: Earnings-22 calls of local/lists/$x.txt"
  python local/calls.py scp "local/lists/$x.txt" "$CALLS" --max-calls "$max_calls" > "$data/local/$x.scp"
  # one utterance a speaker turn (or a stretch of one with or without word times): utt2spk, segments, ctm, utt2reco
  punctkit prepare --file-list "$data/local/$x.scp" -o "$data/$x" --from nlp --inventory "$inventory" \
    --split-contractions
done
case " $ted_sets " in *" train_all "*)
  case " $calls_sets " in *" calls_train "*)
    echo "train_all_calls: train_all + calls_train"
    punctkit combine-data "$data/train_all_calls" "$data/train_all" "$data/calls_train";;
  esac;;
esac

lines() {  # lines FIRST LAST -> FIRST:LAST, shortened by --max-words
  local a=$1 b=$2
  if [ "$max_words" -gt 0 ] && [ $((b - a + 1)) -gt "$max_words" ]; then b=$((a + max_words - 1)); fi
  echo "$a:$b"
}
n=$(wc -l < "$IWSLT/dev2012")
ntrain=$((n * 9 / 10))
echo "valid: dev2012 lines $((ntrain + 1))-$n (its last 10%, as recipes/iwslt)"
punctkit prepare "$IWSLT/dev2012" --lines "$(lines $((ntrain + 1)) "$n")" -o "$data/valid" \
  --inventory "$inventory" --block-len "$block_len"
echo "train_iwslt: dev2012 lines 1-$ntrain (IWSLT-CPU's training set, lower case: the learning curve's first point)"
punctkit prepare "$IWSLT/dev2012" --lines "$(lines 1 "$ntrain")" -o "$data/train_iwslt" \
  --inventory "$inventory" --block-len "$block_len"
echo "test_ref: test2011; test_cased: its words in the case of $IWSLT/IWSLT12.TED.MT.tst2011.en-fr.en.xml"
punctkit prepare "$IWSLT/test2011" --lines "$(lines 1 "$(wc -l < "$IWSLT/test2011")")" -o "$data/test_ref" \
  --inventory "$inventory" --block-len "$block_len"
sets="$ted_sets $calls_sets valid"
case $inventory in truecase*|case*)  # test2011 in the published case: a reference only a case-aware inventory holds
  python local/cased_reference.py "$IWSLT/IWSLT12.TED.MT.tst2011.en-fr.en.xml" "$data/test_ref" "$data/test_cased" \
    --inventory "$inventory"
  sets="$sets test_cased";;
esac
for x in $sets; do
  echo "== $data/$x"; punctkit stats "$data/$x"
done
