#!/usr/bin/env bash
# IWSLT TED punctuation benchmark (Che et al. 2016): train2012 -> test2011.
# On machines without train2012 (IWSLT-CPU), dev2012 is split 90/10 into train/valid.
# Default: DRNN-LWMA at CPU size, a fixed 20 epochs on one thread (conf/train_drnn_lwma_quick.yaml:
# test2011 F1 55.4 on a busy machine as on an idle one; about 11 minutes in all on 2 idle cores).
# Benchmark: --train-config conf/train_drnn_lwma.yaml (60 min on 2 cores); paper sizes: conf/*_paper.yaml.
# Stages as ../TEMPLATE/punct.sh: stage 6 writes exp/<tag>/RESULTS.md (exp/<tag>/run.sh reruns the
# experiment); the last (8) prints the first 60 test words as the reference has them, as the packed
# model punctuates them and as the model punctkit ships punctuates them.
set -euo pipefail
train_config=conf/train_drnn_lwma_quick.yaml
. ./path.sh

./punct.sh \
  --train-set train --valid-set valid --test-sets "test_ref" \
  --train-config "$train_config" \
  "$@"
