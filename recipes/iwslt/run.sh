#!/usr/bin/env bash
# IWSLT TED punctuation benchmark (Che et al. 2016): train2012 -> test2011.
# On machines without train2012 (IWSLT-CPU), dev2012 is split 90/10 into train/valid.
# Default: a small DRNN-LWMA config that trains in minutes on 2 CPU cores.
# Full benchmark: --train-config conf/train_drnn_lwma_paper.yaml (or any conf/train_*.yaml).
set -euo pipefail
train_config=conf/train_drnn_lwma.yaml
. ./path.sh

./punct.sh \
  --train-set train --valid-set valid --test-sets "test_ref" \
  --train-config "$train_config" \
  "$@"
