# Source me (Kaldi habit): `. ./path.sh` from the project root or a recipe.
# Puts utils/ on PATH, activates the project's virtual environment when present,
# and fixes the locale so that `sort` orders files the way Kaldi expects.
PUNCTKIT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export PUNCTKIT_ROOT
export PATH="$PUNCTKIT_ROOT/utils:$PATH"
if [ -f "$PUNCTKIT_ROOT/.venv/bin/activate" ] && [ -z "${VIRTUAL_ENV:-}" ]; then
  # shellcheck disable=SC1091
  . "$PUNCTKIT_ROOT/.venv/bin/activate"
fi
export LC_ALL=C
export PYTHONIOENCODING=utf-8
export PYTHONUNBUFFERED=1
export HF_HUB_OFFLINE=1
export TRANSFORMERS_OFFLINE=1
