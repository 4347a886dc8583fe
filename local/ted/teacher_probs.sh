#!/usr/bin/env bash
# A teacher's label probabilities over a training set, one part at a time (issue 36: the MPNet
# continued on TED labels the TED training text once, for every student). `punctkit decode`
# does not resume, so the data is split by stream (split-data --per-reco: a talk, a call, a meeting with its
# speakers together) into --parts parts; each
# part's decode ends in OUT/split<N>/<k>/.done, a rerun skips the parts that have one, and when
# every part is done their decode dirs are joined into OUT/hyp (combine-data: text, labels, probs).
# Parts go through $decode_cmd (cmd.sh), --nj at a time; --max-parts stops after that many new
# parts (a session's share). Run from a recipe directory (recipes/ted):
#   local/teacher_probs.sh [--parts 16] [--nj 1] [--max-parts N] [--decode-args "..."] EXP DATA OUT
# e.g. local/teacher_probs.sh --parts 16 exp/train_plm_finetune_mpnet data/train_2m exp/teacher_train_2m
# EXP may be a package (punctkit pack: decoded as punctuate runs it, e.g. int8 ONNX with
# --decode-args "--step 150 --threads 1": about 440 words/s a core on an AVX2 CPU, RESULTS.md).
# then train a student with --set train.distill.probs=exp/teacher_train_2m/hyp/probs.
set -euo pipefail
parts=16
nj=1
max_parts=0
decode_args=
. ./path.sh
. ./cmd.sh
. utils/parse_options.sh
if [ $# -ne 3 ]; then
  echo "usage: $0 [--parts N] [--nj J] [--max-parts M] [--decode-args \"...\"] EXP DATA OUT" >&2
  exit 1
fi
exp=$1; data=$2; out=$3
for v in parts nj max_parts; do
  case ${!v} in ''|*[!0-9]*) echo "$0: --${v//_/-} must be a whole number, got '${!v}'" >&2; exit 1;; esac
done
[ "$parts" -ge 1 ] && [ "$nj" -ge 1 ] || { echo "$0: --parts and --nj must be at least 1" >&2; exit 1; }
[ -d "$exp" ] || [ -f "$exp" ] || { echo "$0: $exp: no such experiment directory or package" >&2; exit 1; }
[ -f "$data/text" ] || { echo "$0: $data: not a data directory (no text file)" >&2; exit 1; }

nstreams=$(utils/num_streams.sh "$data")
if [ "$parts" -gt "$nstreams" ]; then
  echo "$0: $data has $nstreams stream(s): $nstreams part(s) instead of --parts $parts"
  parts=$nstreams
fi
split=$data/split$parts
if [ ! -f "$split/$parts/text" ] || [ "$data/text" -nt "$split/$parts/text" ]; then
  # a new split (or one older than the data): parts decoded from an earlier one would not match it
  if compgen -G "$out/split$parts/*/.done" >/dev/null; then
    echo "$0: $data changed since $out's parts were decoded: label it into a new OUT" >&2; exit 1
  fi
  punctkit split-data "$data" "$parts" --per-reco
fi
mkdir -p "$out/split$parts" "$out/log"
todo=()
for k in $(seq 1 "$parts"); do
  [ -f "$out/split$parts/$k/.done" ] || todo+=("$k")
done
[ "$max_parts" -eq 0 ] || todo=("${todo[@]:0:$max_parts}")
echo "$(date -Is) $0: ${#todo[@]} part(s) to decode of $parts (${todo[*]:-none})"
i=0
while [ "$i" -lt "${#todo[@]}" ]; do
  pids=()
  for k in "${todo[@]:$i:$nj}"; do
    # a part left by a kill is decoded again: decode replaces the files it wrote
    ( ${decode_cmd} "$out/log/decode.$k.log" \
        punctkit decode "$exp" "$split/$k" "$out/split$parts/$k" --probs $decode_args &&
      touch "$out/split$parts/$k/.done" && echo "$(date -Is) part $k of $parts done" ) &
    pids+=("$!:$k")
  done
  for p in "${pids[@]}"; do
    wait "${p%%:*}" || { echo "$0: part ${p#*:} failed: see $out/log/decode.${p#*:}.log" >&2; exit 1; }
  done
  i=$((i + nj))
done
for k in $(seq 1 "$parts"); do
  if [ ! -f "$out/split$parts/$k/.done" ]; then
    echo "$(date -Is) $0: part(s) left; rerun to go on"
    exit 0
  fi
done
punctkit combine-data "$out/hyp" $(seq -f "$out/split$parts/%g" 1 "$parts")
echo "$(date -Is) $0: $out/hyp/probs: $(wc -l < "$out/hyp/probs") utterances"
