#!/usr/bin/env bash
# TED talks as published (true case, full punctuation; 4.6M words) -> IWSLT test2011 with case.
# Stage 1 (local/data.sh) makes, in the true-case inventory truecase4 (--local-data-opts
# "--inventory X" for another): data/train_1m, train_2m, train_all (nested training subsets,
# by talk), valid_case (TED talks held out for case choices), valid (dev2012's last 10%, for
# punctuation choices, as recipes/iwslt), test_ref (test2011) and test_cased (test2011's words
# and marks in the case of the published text; case_unknown lists the words without one).
# Stages as ../TEMPLATE/punct.sh. Default config: the fast true-case model (DRNN-LWMA over
# MiniLM-pooled vectors; one thread, 90-minute cap: rerun stage 4 with a larger
# --train-args "--set train.max_minutes=N" to go on). Its test_cased scores give punctuation and
# case (exact-form case F1); test_ref's the punctuation figures of recipes/iwslt.
# Tiny run of stages 1-3: --local-data-opts "--max-talks 3 --max-words 2000" --stop-stage 3
#   --train-config conf/train_tiny.yaml
set -euo pipefail
train_config=conf/train_drnn_lwma_minilm_ctx.yaml
. ./path.sh

./punct.sh \
  --train-set train_all --valid-set valid --test-sets "test_ref test_cased" \
  --train-config "$train_config" \
  "$@"
