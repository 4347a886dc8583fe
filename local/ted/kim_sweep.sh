#!/usr/bin/env bash
# Kim 2019's n x m sweep and the layer-wise vs top-only attention arm (issue 37) on recipes/ted's
# 4class train_1m, conf/train_drnn_lwma_sweep.yaml (10 epochs each, one thread). Run from recipes/ted;
# rerun to resume: finished arms stop at once, an interrupted one resumes from its last epoch.
#   local/kim_sweep.sh [--stage 1]   (stage 1: the 4class data in data_4class)
set -euo pipefail
stage=3
. utils/parse_options.sh
if [ "$stage" -le 1 ]; then
  ./run.sh --data data_4class --stage 1 --stop-stage 1 --local-data-opts "--inventory 4class --ted-sets train_1m"
fi
arms="n1_m1 n1_m3 n2_m1 n2_m3 n4_m1 n4_m3 n4_m3_top"
for arm in $arms; do
  n=${arm#n}; n=${n%%_*}; m=${arm#*_m}; m=${m%%_*}
  attend=all; case $arm in *_top) attend=top;; esac
  ./run.sh --data data_4class --stage 3 --stop-stage 6 --train-set train_1m --tag "kim_${arm}_1m" \
    --train-config conf/train_drnn_lwma_sweep.yaml --test-sets "valid test_ref" \
    --train-args "--set model.n_layers=$n --set model.n_heads=$m --set model.attend=$attend"
done
