#!/usr/bin/env bash
# What a lent GPU machine needs to train the accurate model's GPU configs (RESULTS.md, "The accurate model,
# shipped as `-m accurate`"), packed inside the 64 MiB that travel to it: MiniLM-L6's weights in float16 (the
# package's 88 MB float32 would not fit; local/gpu_runs.sh widens them back to float32 there), train_all_calls
# and valid (xz), stage 3's inputs, and the wheels of the punctkit dependencies that machine lacks (for its
# Python 3.12). Run from recipes/ted, after the data (stage 1) and one GPU config's stage 3 (the inputs, the same
# for every MiniLM config):
#   ./run.sh --stage 3 --stop-stage 3 --train-set train_all_calls --tag plm_minilm9_gpu \
#     --train-config conf/train_plm_minilm9_gpu.yaml
#   local/gpu_bundle.sh exp/plm_minilm9_gpu/inputs ../../.gpu
# The bundle folder is ignored by git (.git/info/exclude); the call names it in `carry`. The shipped packages
# (punctkit/pretrained/*.pkt, 44 MB) must be moved out of the checkout for the call, or it is over 64 MiB.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 INPUTS_DIR BUNDLE_DIR" >&2; exit 1; }
inputs=$1 out=$2
. ./path.sh
mkdir -p "$out/minilm" "$out/whl"
src=$(python -c "from punctkit.text.plm import minilm_dir; print(minilm_dir())")
cp "$src"/{config.json,tokenizer.json,tokenizer_config.json,vocab.txt,special_tokens_map.json} "$out/minilm/"
python local/gpu_transfer.py cast "$src/model.safetensors" "$out/minilm/model.fp16.safetensors" --dtype float16
tar -cf - data/train_all_calls/{text,labels,inventory,spk2utt,utt2spk} data/valid/{text,labels,inventory,spk2utt,utt2spk} \
  | xz -T2 -6 > "$out/data.tar.xz"
tar -cf "$out/inputs.tar" -C "$inputs" frontend
for p in kaldiio kaldi-native-fbank typer; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$out/whl" "$p==$(pip show "$p" | awk '/^Version/{print $2}')"
done
du -sh "$out"/*
# what a call sends: the checkout's tracked and unignored files, and the bundle (carried)
tree=$(cd ../.. && git ls-files -co --exclude-standard -z | xargs -0 -r stat -c %s 2>/dev/null | awk '{s += $1} END {print s}')
bundle=$(du -sb "$out" | cut -f1)
echo "a call sends $(( (tree + bundle) / 1048576 )) MiB of at most 64 (checkout $(( tree / 1048576 )), bundle $(( bundle / 1048576 )));" \
  "without punctkit/pretrained/*.pkt (moved out of the checkout for the call):" \
  "$(( (tree + bundle - $(cat ../../punctkit/pretrained/*.pkt | wc -c)) / 1048576 )) MiB"
