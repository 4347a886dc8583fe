#!/usr/bin/env bash
# The punctuation recipe template (ESPnet's TEMPLATE pattern): every stage once,
# each a one-line `punctkit` call. A corpus's run.sh names its data and configs
# and calls this script (through the symlink punct.sh in the recipe directory);
# every recipe has the same stage numbers.
#
#   0 download the corpus when db.sh points nowhere    (local/download.sh)
#   1 data directories (audio recipes: audio too)       (local/data.sh)
#   2 features, CMVN and validation (only with --use-audio true)
#   3 vocabulary / BPE / embeddings
#   4 train                       (through $train_cmd or $cuda_cmd; exp/<tag>/run.sh reruns it)
#   5 decode each test set        (through $decode_cmd, --nj jobs; exp/<tag>/decode_<set>[_<dtag>])
#   6 score                       (exp/<tag>/decode_<set>[_<dtag>]/score.{txt,json}; exp/<tag>/RESULTS.md)
#   7 pack                        (exp/<tag>/model.pkt, for punctkit punctuate; text-only models)
#   8 demo: the first --demo-words words of the first test set (IWSLT's split contractions
#     joined), printed as the reference has them, as the packed model punctuates them and
#     as the model punctkit ships punctuates them (text-only models)
set -euo pipefail
# shellcheck disable=SC2086  # $train_args / $decode_args / $pack_args are option lists, split on purpose

log() { echo "$(date '+%Y-%m-%dT%H:%M:%S') ($(basename "$0"):${BASH_LINENO[0]}) $*"; }
shell_words() {  # the arguments as one command line: plain words as they are, the others in single quotes
  local a out=()
  for a in "$@"; do
    if [[ $a =~ ^[A-Za-z0-9_./=:,+@%-]+$ ]]; then out+=("$a"); else out+=("'${a//\'/\'\\\'\'}'"); fi
  done
  echo "${out[*]}"
}
# this script's command line without its --stage/--stop-stage, for exp/<tag>/run.sh (ESPnet's run_args)
args=("$@"); kept=(); i=0
while [ "$i" -lt "${#args[@]}" ]; do
  case ${args[i]} in --stage|--stop-stage) i=$((i + 2)); continue ;; esac
  kept+=("${args[i]}"); i=$((i + 1))
done
run_cmd=$(shell_words "$0" ${kept[@]+"${kept[@]}"})

help_message="Usage: $0 [options]
  --stage N / --stop-stage N   run stages N..M (default 0..100)
  --nj N                       parallel jobs for features and decoding (default 1)
  --ngpu N                     GPUs for training (0 = CPU)
  --train-set / --valid-set / --test-sets   data directory names under data/
  --train-config FILE          training config (conf/train_*.yaml)
  --decode-config FILE         decoding config (conf/decode.yaml)
  --train-args \"...\"          extra options for punctkit train (e.g. \"--set train.max_minutes=30\")
  --decode-args \"...\"         extra options for punctkit decode (e.g. \"--beam 1\")
  --pack-args \"...\"           extra options for punctkit pack (e.g. \"--onnx\")
  --tag NAME                   experiment name (default: the train config's name)
  --local-data-opts \"...\"      options passed to local/data.sh
  --use-audio true|false       stage 2: features, CMVN, validation (audio recipes)
  --fbank-conf / --pitch-conf  Kaldi-style feature configs
  --feats-kind fbank_pitch|fbank|pitch
  --subsample N                keep every Nth feature frame (default 3, as extract-feats)
  --demo-words N               words of the first test set the stage-8 demo punctuates (default 60)"

stage=0
stop_stage=100
nj=1
ngpu=0
train_set=train
valid_set=valid
test_sets=test
train_config=
default_decode_config=conf/decode.yaml  # its results go to decode_<set>; any other to decode_<set>_<dtag>
decode_config=$default_decode_config
train_args=
decode_args=
pack_args=
tag=
local_data_opts=
use_audio=false
fbank_conf=conf/fbank.conf
pitch_conf=conf/pitch.conf
feats_kind=fbank_pitch
subsample=3
demo_words=60
data=data
expdir=exp

. ./path.sh
. ./cmd.sh
. utils/parse_options.sh

[ $# -eq 0 ] || { echo "$0: unexpected arguments: $*" >&2; echo "$help_message" >&2; exit 1; }
for opt in stage stop_stage nj ngpu subsample demo_words; do  # numbers, or every [ -le ] below fails open
  case "${!opt}" in
    ''|*[!0-9]*) echo "$0: --${opt//_/-} must be a whole number, got '${!opt}'" >&2; exit 1 ;;
  esac
done
[ -n "$train_config" ] || [ "$stop_stage" -lt 3 ] || { echo "$0: --train-config is required for stages >= 3" >&2; exit 1; }
# stages 3 and 4 read the config; later stages use only its name (the default --tag)
[ -z "$train_config" ] || [ "$stop_stage" -lt 3 ] || [ "$stage" -gt 4 ] || [ -f "$train_config" ] \
  || { echo "$0: --train-config $train_config: no such file" >&2; exit 1; }
tag=${tag:-$(basename "${train_config:-none}" .yaml)}
exp=$expdir/$tag
# The decoding tag (ESPnet's inference_tag): empty for the default decoding config without
# overrides, else the config's name (when not the default) and the overrides, so runs with
# other settings never overwrite each other: --decode-args "--beam 1" -> decode_<set>_beam1.
dtag=
[ "$decode_config" = "$default_decode_config" ] || dtag=$(basename "$decode_config" .yaml)
[ -z "$decode_args" ] || dtag=${dtag}$(echo " $decode_args" | sed -e 's/ *--/_/g' -e 's/[ =|/]//g')
dtag=${dtag#_}
decode_dir_of() { echo "$exp/decode_$1${dtag:+_$dtag}"; }

if [ "$stage" -le 0 ] && [ "$stop_stage" -ge 0 ]; then
  log "stage 0: corpus download (when needed)"
  local/download.sh
fi

if [ "$stage" -le 1 ] && [ "$stop_stage" -ge 1 ]; then
  log "stage 1: data directories"
  # shellcheck disable=SC2086
  local/data.sh --data "$data" $local_data_opts
fi

if [ "$stage" -le 2 ] && [ "$stop_stage" -ge 2 ]; then
  if [ "$use_audio" = true ]; then
    for x in $train_set $valid_set $test_sets; do
      log "stage 2: $x: $feats_kind features ($nj job(s)), global CMVN, validation"
      ${decode_cmd} JOB=1:"$nj" "$data/$x/log/feats.JOB.log" \
        punctkit extract-feats "$data/$x" "$data/$x/feats" --kind "$feats_kind" --subsample "$subsample" \
          --fbank-conf "$fbank_conf" --pitch-conf "$pitch_conf" --nj "$nj" --job JOB
      punctkit extract-feats "$data/$x" "$data/$x/feats" --nj "$nj" --merge
      punctkit compute-cmvn "$data/$x"
      punctkit validate-data-dir "$data/$x"
    done
  else
    log "stage 2: skipped (--use-audio false: no features for a text-only recipe)"
  fi
fi

if [ "$stage" -le 3 ] && [ "$stop_stage" -ge 3 ]; then
  log "stage 3: vocabulary / BPE / embeddings ($train_config) -> $exp/inputs"
  punctkit prepare-inputs --config "$train_config" "$data/$train_set" "$exp/inputs"
fi

# exp/<tag>/run.sh reruns the experiment (ESPnet's): the command that trained it (without its stages), from
# stage 3 on; options given to it come last and win (`exp/<tag>/run.sh --stage 5` decodes again). Written
# by stage 4, or by stage 6 for an experiment trained without one.
write_rerun_script() {
  mkdir -p "$exp"
  { echo "#!/usr/bin/env bash"
    echo "# Reruns experiment $exp from stage 3 (resuming its training): the command that ran it on $(date '+%Y-%m-%d')."
    echo "# You can resume the process from another stage with this script: $exp/run.sh --stage 5"
    echo "cd $(shell_words "$PWD") && $run_cmd --stage 3 \"\$@\"; exit \$?"
  } > "$exp/run.sh.tmp" && chmod +x "$exp/run.sh.tmp" && mv "$exp/run.sh.tmp" "$exp/run.sh"
}

if [ "$stage" -le 4 ] && [ "$stop_stage" -ge 4 ]; then
  log "stage 4: train $exp (log: $exp/log/train.log; $exp/run.sh reruns it)"
  write_rerun_script
  launcher=$train_cmd; [ "$ngpu" -eq 0 ] || launcher=$cuda_cmd
  ${launcher} --gpu "$ngpu" "$exp/log/train.log" \
    punctkit train --config "$train_config" --train-dir "$data/$train_set" --valid-dir "$data/$valid_set" \
      --exp "$exp" --inputs "$exp/inputs" --ngpu "$ngpu" $train_args
fi

if [ "$stage" -le 5 ] && [ "$stop_stage" -ge 5 ]; then
  for x in $test_sets; do
    dir=$(decode_dir_of "$x")
    # Jobs split the set by stream (split-data --per-reco: a recording, its speakers' turns together, where
    # segments or utt2reco name one; else a speaker = a document), so every stream is decoded whole and the result
    # equals --nj 1 byte for byte; hence at most one job per stream.
    nspk=$(utils/num_streams.sh "$data/$x")
    _nj=$nj
    if [ "$_nj" -gt "$nspk" ]; then
      log "stage 5: $x has $nspk stream(s): decoding with $nspk job(s) instead of --nj $nj"
      _nj=$nspk
    fi
    log "stage 5: decode $x -> $dir/hyp ($_nj job(s))"
    if [ "$_nj" -le 1 ]; then
      ${decode_cmd} "$dir/log/decode.log" \
        punctkit decode "$exp" "$data/$x" "$dir/hyp" --config "$decode_config" $decode_args
    else
      punctkit split-data "$data/$x" "$_nj" --per-reco
      rm -rf "$dir/split$_nj"
      ${decode_cmd} JOB=1:"$_nj" "$dir/log/decode.JOB.log" \
        punctkit decode "$exp" "$data/$x/split$_nj/JOB" "$dir/split$_nj/JOB" --config "$decode_config" $decode_args
      punctkit combine-data "$dir/hyp" $(seq -f "$dir/split$_nj/%g" 1 "$_nj")
    fi
    cp "$dir/hyp/decode_options.yaml" "$dir/decode_options.yaml"  # beside score.json (pack's card)
  done
fi

if [ "$stage" -le 6 ] && [ "$stop_stage" -ge 6 ]; then
  for x in $test_sets; do
    dir=$(decode_dir_of "$x")
    log "stage 6: score $x -> $dir/score.txt"
    punctkit score "$data/$x" "$dir/hyp" --out "$dir"
  done
  [ -f "$exp/run.sh" ] || write_rerun_script
  log "stage 6: $exp/RESULTS.md (environment, command, config, a table per test set)"
  python -m punctkit.report experiment "$exp"
  # the recipe's RESULTS.md is built from committed blocks: copy this one in with (from the repository's root)
  #   python utils/results_doc.py --add recipes/<recipe>/exp/<tag>
fi

if [ "$stage" -le 7 ] && [ "$stop_stage" -ge 7 ]; then
  if [ "$use_audio" = true ]; then
    log "stage 7: skipped (punctkit punctuate takes words only; audio models are used through decode)"
  else
    cards=()
    for x in $test_sets; do
      dir=$(decode_dir_of "$x")
      [ ! -f "$dir/score.json" ] || cards+=(--card-results "$dir/score.json")
    done
    log "stage 7: pack $exp -> $exp/model.pkt"
    punctkit pack "$exp" -o "$exp/model.pkt" "${cards[@]}" $pack_args
  fi
fi

if [ "$stage" -le 8 ] && [ "$stop_stage" -ge 8 ]; then
  x=${test_sets%% *}
  if [ "$use_audio" = true ]; then
    log "stage 8: skipped (no package for audio models; their output is $exp/decode_$x/hyp)"
  else
    # What the toolkit did, for a newcomer: the reference, this recipe's model and the model punctkit
    # ships, word for word, on the first words of the test set as a recognizer writes them (IWSLT's
    # split contractions joined: "i'm", "don't"; models trained on split ones split them again)
    demo=$exp/demo_$x
    python -m punctkit.report demo "$data/$x" "$demo" --words "$demo_words"  # words.txt, ref.txt
    # the demo directory is this stage's own: its files are replaced on a rerun also where the file
    # system keeps no mark of punctkit's files (--overwrite; docs/safety.md)
    punctkit punctuate -m "$exp/model.pkt" "$demo/words.txt" -o "$demo/hyp.txt" --overwrite
    punctkit punctuate "$demo/words.txt" -o "$demo/shipped.txt" --overwrite
    log "stage 8: demo: the first $demo_words words of $x: the reference, this recipe's model ($exp/model.pkt)" \
      "and the model punctkit ships (punctkit punctuate without -m) (files in $demo)"
    echo "reference: $(cat "$demo/ref.txt")"
    echo "recipe:    $(cat "$demo/hyp.txt")"
    echo "shipped:   $(cat "$demo/shipped.txt")"
  fi
fi

log "done: stages $stage..$stop_stage"
