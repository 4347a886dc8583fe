#!/usr/bin/env bash
# Conversation: the meetings and the calls as users pass them (Rev's NLP, turns and times), and a model's use of
# turns and pauses learned on them (punctkit/infer/boundary.py), its weight chosen on valid.
#   local/conversation.sh --stage 1 --stop-stage 1                    # data/local: meetings_{train,val}, calls_*,
#                                                                      # each as references and as blind inputs
#   local/conversation.sh --stage 2 --model fast --tag fast           # exp/boundary_fast/boundary.json, valid.tsv
#   local/conversation.sh --stage 3 --model fast --tag fast           # packed with it: exp/boundary_fast/model.pkt
#   local/conversation.sh --stage 4 --model fast --tag fast           # scored as users run it: RESULTS blocks
# The network given turns and pauses as inputs (conf/train_drnn_lwma_turns.yaml: the shipped `fast` fine-tuned from
# its package with a boundary input, on TED + calls + meetings data directories that keep their turns and times):
#   local/conversation.sh --stage 5 --stop-stage 6                    # data/{train,valid}_conv, then its training
#                                                                      # and package: exp/drnn_lwma_turns/model.pkt
#   local/conversation.sh --stage 2 --stop-stage 4 --model exp/drnn_lwma_turns/model.pkt --tag turns
#   local/conversation.sh --stage 7 --model exp/boundary_turns/model.pkt --tag turns   # ship rule against `fast`
#   local/conversation.sh --stage 6 --stop-stage 6 --soup "TAG1 TAG2" --conv-tag soup   # instead of training: the
#                                                     # named fine-tunes' networks averaged (one start), then packed
#   local/conversation.sh --stage 6 --stop-stage 6 --train-config conf/train_drnn_lwma_turns_distill.yaml \
#     --conv-tag drnn_lwma_turns_distill [--teacher accurate]   # a config with train.distill: the teacher's labels over
#                                                     # the training set first (local/teacher_probs.sh), then training
# `accurate` the same way (conf/train_plm_minilm9_turns.yaml: its int8 package's weights dequantized, a boundary input):
#   local/conversation.sh --stage 6 --stop-stage 6 --train-config conf/train_plm_minilm9_turns.yaml --conv-tag plm_turns
#   local/conversation.sh --stage 2 --stop-stage 3 --model exp/plm_turns/model.pkt --tag plm_turns --max-train-docs 30 \
#     --threads 2                                                     # its fusion on 30 calls + 30 meetings, as `accurate`'s
#   local/conversation.sh --stage 7 --model exp/boundary_plm_turns/model.pkt --tag plm_turns --shipped accurate
# Stage 4 scores `punctkit punctuate` itself on calls_valid, calls_test and meetings_val (exp/boundary_<tag>/score/
# {before,after}/<set>_<reading>/, exp/boundary_<tag>/score.log): the model before (--model: it reads the words only)
# and after, read with its words only, + turns, + turns and times (the calls; the meetings have no times).
set -euo pipefail
stage=1
stop_stage=4
model=fast
tag=
threads=1
max_meetings=0
max_calls=0
max_train_docs=0  # >0: the fusion learns from the first N documents of each training set (a slower model)
train_sets="calls_train meetings_train"
valid_sets="calls_valid meetings_val"
test_sets="calls_valid calls_test meetings_val"
train_config=conf/train_drnn_lwma_turns.yaml  # stage 6
ted_train=train_2m                             # stage 5: the TED part of the training set (train_all: all of TED)
conv_set=train_conv                            # stages 5-6: the training set's name
conv_tag=drnn_lwma_turns                       # stage 6: the experiment
soup=                                          # stage 6: "TAG TAG ...": average these experiments' networks instead
shipped=fast                                   # stage 7: the shipped model a candidate would replace
teacher=accurate                               # stage 6, a config with train.distill: the model whose labels teach
help_message="Usage: $0 [--stage N] [--stop-stage N] [--model fast|accurate|PKG] [--tag NAME] [--threads 1]
  [--max-meetings N] [--max-calls N] [--max-train-docs N] [--train-config CONF] [--shipped fast|accurate]
  [--ted-train train_2m|train_all] [--conv-set train_conv] [--conv-tag drnn_lwma_turns] [--soup 'TAG TAG']
  [--teacher accurate|PKG]"
. ./db.sh
. utils/parse_options.sh
tag=${tag:-$(basename "$model" .pkt)}
exp=exp/boundary_$tag
data=data/local
mkdir -p "$data" "$exp"

if [ "$stage" -le 1 ] && [ "$stop_stage" -ge 1 ]; then
  [ -n "$MEETINGS" ] || { echo "$0: the meetings are not found (MEETINGS in db.sh)" >&2; exit 1; }
  for x in train val; do
    python local/meetings.py nlp "$MEETINGS/$x.jsonl" "$data/meetings_$x" --max-meetings "$max_meetings" \
      > "$data/meetings_$x.scp"
  done
  for x in calls_train calls_valid calls_test; do
    python local/calls.py scp "local/lists/$x.txt" "$CALLS" --max-calls "$max_calls" > "$data/$x.scp"
  done
  for x in meetings_train meetings_val calls_train calls_valid calls_test; do
    python local/blind.py --scp "$data/$x.scp" "$data/${x}_blind" > "$data/${x}_blind.scp"
    python local/blind.py --scp "$data/$x.scp" "$data/${x}_blind_words" --no-speakers --no-times \
      > "$data/${x}_blind_words.scp"
    python local/blind.py --scp "$data/$x.scp" "$data/${x}_blind_notimes" --no-times > "$data/${x}_blind_notimes.scp"
  done
fi

if [ "$stage" -le 2 ] && [ "$stop_stage" -ge 2 ]; then
  python local/fit_boundary.py --model "$model" --train "$train_sets" --valid "$valid_sets" --data "$data" \
    --out "$exp" --threads "$threads" --max-docs "$max_train_docs" 2>&1 | tee "$exp/fit.log"
fi

if [ "$stage" -le 3 ] && [ "$stop_stage" -ge 3 ]; then
  punctkit pack "$model" --boundary "$exp/boundary.json" -o "$exp/model.pkt" \
    --card-note "boundary_data=speaker turns and pauses (boundary.json, local/conversation.sh --stage 2): fitted on the \
Earnings-22 calls of local/ted/lists/calls_train.txt and the meetings of the shared meetings/train.jsonl (QMSum's AMI, \
ICSI, Welsh Parliament and House of Commons of Canada committee transcripts), the network frozen; its weight chosen \
on calls_valid and the meetings' val.jsonl" \
    --card-note "boundary_licence=the meetings: AMI Meeting Corpus, CC BY 4.0; ICSI Meeting Corpus, CC BY 4.0; Welsh \
Parliament committee records, Open Government Licence; House of Commons of Canada committee records, reproduction \
permitted for non-commercial use (QMSum, github.com/Yale-LILY/QMSum, MIT); the calls: Earnings-22, CC BY-SA 4.0"
fi

if [ "$stage" -le 4 ] && [ "$stop_stage" -ge 4 ]; then
  # before: the model as given, which reads words only (turns and times change nothing: one reading);
  # after: the model packed with its fusion, read with its words only, + turns, + turns and times (the calls)
  for x in $test_sets; do
    readings="words turns"; case $x in calls*) readings="words turns turns+times";; esac
    for run in before:words $(for r in $readings; do echo "after:$r"; done); do
      m=${run%%:*}; reading=${run#*:}
      pkg=$model; [ "$m" = after ] && pkg=$exp/model.pkt
      case $reading in words) in=${x}_blind_words;; turns) in=${x}_blind_notimes;; *) in=${x}_blind;; esac
      d=$exp/score/$m/${x}_$reading
      mkdir -p "$d/hyp"
      : > "$d/punctuate.log"
      while read -r uid path; do
        punctkit punctuate "$path" -m "$pkg" --threads "$threads" --format nlp -o "$d/hyp/$uid.nlp" \
          2>> "$d/punctuate.log"
      done < "$data/$in.scp"
      python local/score_scp.py "$data/$x.scp" "$d/hyp" > "$d/score.txt"
      echo "$m $x $reading: $(tail -1 "$d/score.txt")"
    done
  done | tee "$exp/score.log"
fi

if [ "$stage" -le 5 ] && [ "$stop_stage" -ge 5 ]; then
  # data directories that keep turns and times (an utterance a speaker turn: utt2spk, segments, ctm, utt2reco):
  # the calls (local/data.sh), the meetings' NLP files of stage 1, TED's 2M words; combined for training and valid
  local/data.sh --ted-sets "valid_case $ted_train" --max-calls "$max_calls"
  for x in meetings_train meetings_val; do
    punctkit prepare --file-list "$data/$x.scp" -o "data/$x" --from nlp --inventory truecase4 --split-contractions \
      --overwrite
  done
  punctkit combine-data "data/$conv_set" "data/$ted_train" data/calls_train data/meetings_train --overwrite
  punctkit combine-data data/valid_conv data/valid data/calls_valid data/meetings_val --overwrite
fi

if [ "$stage" -le 6 ] && [ "$stop_stage" -ge 6 ]; then
  # the network it starts from, the package the config's train.init names: exp/fast_words.pkt, the `fast` package
  # that read words only, or exp/accurate_words.pkt, the `accurate` one (conf/train_plm_minilm9_turns.yaml); each the
  # shipped one before this step (git commit e351a74; without git, rebuild it as its card says: `punctkit models
  # --long` of that version)
  read -r -a parts <<< "$soup"
  for t in "${parts[@]}"; do
    [ -f "exp/$t/model.avg.pt" ] || { echo "$0: --soup: exp/$t/model.avg.pt not found: train that experiment first" >&2
      exit 1; }
  done
  if [ -n "$soup" ] && [ -d "exp/$conv_tag/checkpoints" ]; then
    echo "$0: --soup: exp/$conv_tag is a trained experiment; name the soup with another --conv-tag" >&2
    exit 1
  fi
  # a soup starts where its parts started: the first one's recorded config
  start_config=$train_config; [ -n "$soup" ] && start_config=exp/${parts[0]}/config.yaml
  init=$(sed -n 's/^  init: *\([^ #]*\).*/\1/p' "$start_config")
  case "$init" in
    exp/fast_words.pkt) words_model=fast ;;
    exp/accurate_words.pkt) words_model=accurate ;;
    *) words_model= ;;
  esac
  if [ -n "$words_model" ] && [ ! -f "$init" ]; then
    mkdir -p exp
    git show "e351a74:punctkit/pretrained/$words_model.pkt" > "$init.tmp" 2> /dev/null || {
      rm -f "$init.tmp"
      echo "$0: $init: no git history here to take it from (commit e351a74); put that $words_model.pkt there" >&2
      exit 1; }
    mv "$init.tmp" "$init"
  fi
  # the network (resumed by the same command), then its package (ONNX only as the shipped `fast`; int8 weights as
  # the shipped `accurate`)
  train_data="data/$conv_set: TED $ted_train + the Earnings-22 calls of local/lists/calls_train.txt + the meetings \
of the shared meetings/train.jsonl, with their speaker turns and word times (dev data/valid_conv: dev2012's valid + \
calls_valid + the meetings' val.jsonl)"
  rebuild="local/conversation.sh --stage 5 --stop-stage 6 --ted-train $ted_train --conv-set $conv_set \
--train-config $train_config --conv-tag $conv_tag"
  # a config that distils (train.distill.probs: exp/<name>/hyp/probs) first has its teacher label the training set
  # (--teacher: a package, or a shipped model by name; with its turns and times; local/teacher_probs.sh resumes by parts)
  probs=$(python3 -c "import sys, yaml; c = yaml.safe_load(open(sys.argv[1])) or {}
print(((c.get('train') or {}).get('distill') or {}).get('probs') or '')" "$start_config")
  if [ -n "$probs" ] && [ -z "$soup" ]; then
    case $teacher in
      fast|accurate) teacher_pkg=$(python3 -c "import sys; from punctkit.pretrained import model_path
print(model_path(sys.argv[1]))" "$teacher") ;;
      *) teacher_pkg=$teacher
         [ -f "$teacher_pkg" ] || { echo "$0: --teacher $teacher: not a shipped model (fast, accurate) or a packed \
model's file" >&2; exit 1; } ;;
    esac
    [ -f "$probs" ] || local/teacher_probs.sh --nj 2 --decode-args "--threads 1" "$teacher_pkg" "data/$conv_set" \
      "${probs%/hyp/probs}"
    train_data="$train_data; taught by $teacher's label distributions over it ($probs: \
local/teacher_probs.sh, read with its turns and times)"
  fi
  if [ -z "$soup" ]; then
    ./run.sh --stage 3 --stop-stage 4 --train-set "$conv_set" --valid-set valid_conv --tag "$conv_tag" \
      --train-config "$train_config"
  else
    # a uniform model soup (Wortsman et al. 2022): the networks of the experiments --soup names (each fine-tuned
    # from the same package, each its own model.avg.pt), averaged weight by weight; the first one's config, frontend
    # and labels (the same in all: one start)
    mkdir -p "exp/$conv_tag"
    cp -r "exp/${parts[0]}/config.yaml" "exp/${parts[0]}/frontend" "exp/${parts[0]}/inventory" "exp/$conv_tag/"
    punctkit average-checkpoints "exp/$conv_tag" --out "exp/$conv_tag/model.avg.pt" \
      $(for t in "${parts[@]}"; do echo "--checkpoint exp/$t/model.avg.pt"; done)
    train_data="the average of the networks of $(for t in "${parts[@]}"; do echo -n "exp/$t$(sed -n \
's/^.*--train-set \([^ ]*\).*$/ (data\/\1)/p' "exp/$t/run.sh" 2> /dev/null | head -1), "; done)each fine-tuned from the same package \
on TED + the Earnings-22 calls of local/lists/calls_train.txt + the meetings of the shared meetings/train.jsonl, with \
their speaker turns and word times (dev data/valid_conv)"
    rebuild="local/conversation.sh --stage 6 --stop-stage 6 --soup '$soup' --conv-tag $conv_tag (after each \
experiment it names is trained: block train_drnn_lwma_turns)"
  fi
  pack_opts=--onnx-only; [ "$words_model" = accurate ] && pack_opts="--onnx-only --int8"
  # shellcheck disable=SC2086
  punctkit pack "exp/$conv_tag" -o "exp/$conv_tag/model.pkt" $pack_opts \
    --train-data "$train_data" \
    --card-note "licence=training data: TED talk transcripts (TED Conferences LLC), CC BY-NC-ND 4.0; Earnings-22 calls \
(Rev, github.com/revdotcom/speech-datasets), CC BY-SA 4.0; the meetings: AMI Meeting Corpus, CC BY 4.0; ICSI Meeting \
Corpus, CC BY 4.0; Welsh Parliament committee records, Open Government Licence; House of Commons of Canada committee \
records, reproduction permitted for non-commercial use (QMSum, github.com/Yale-LILY/QMSum, MIT); punctkit itself is \
Apache-2.0" \
    --card-note "rebuild=cd recipes/ted && local/conversation.sh --stage 1 --stop-stage 1 && $rebuild \
&& local/conversation.sh --stage 2 --stop-stage 3 --model exp/$conv_tag/model.pkt --tag $conv_tag"
fi

if [ "$stage" -le 7 ] && [ "$stop_stage" -ge 7 ]; then
  # the six validation figures (and the test sets') of the candidate and of the shipped model, decoded as users run
  # them (data directories with their turns and times), and the ship rule (local/ship_rule.py)
  local/ship_eval.sh --threads "$threads" --name pkg_decode "$exp" "$model"
  local/ship_eval.sh --threads "$threads" --name "shipped_$shipped" "$exp" "$shipped"
  python local/ship_rule.py "$exp/pkg_decode" "$exp/shipped_$shipped" | tee "$exp/ship_rule.txt"
fi
