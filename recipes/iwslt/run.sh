#!/usr/bin/env bash
# IWSLT TED punctuation benchmark (Che et al. 2016): train2012 -> test2011.
# On machines without train2012 (IWSLT-CPU), dev2012 is split 90/10 into train/valid.
# Default: DRNN-LWMA at CPU size with 10 minutes of training (about 15 minutes in all).
# Benchmark: --train-config conf/train_drnn_lwma.yaml (60 min on 2 cores); paper sizes: conf/*_paper.yaml.
# Stages as ../TEMPLATE/punct.sh; the last (8) prints the packed model's punctuation of the first
# 60 test words next to the reference.
set -euo pipefail
train_config=conf/train_drnn_lwma_quick.yaml
. ./path.sh

./punct.sh \
  --train-set train --valid-set valid --test-sets "test_ref" \
  --train-config "$train_config" \
  "$@"
