#!/usr/bin/env bash
# A packed model decoded as users run it (`punctkit decode` on the package: ONNX, int8 where packed
# so, the joint decision of marks and case) and scored, set by set: EXP/pkg_decode_<set>/hyp,
# score.json (the card's figures: `punctkit pack --card-results`) and score.txt. What the
# replacement rule of a shipped model reads (local/ship_rule.py: valid, calls_valid and meetings_val
# punctuation, valid_case, calls_valid and meetings_val exact-form case). Run from recipes/ted:
#   local/ship_eval.sh [--threads 1] [--sets "valid valid_case calls_valid meetings_val test_cased calls_test"] \
#     [--decode-args "..."] [--name pkg_decode] EXP PKG
# e.g. local/ship_eval.sh exp/plm_minilm_accurate exp/plm_minilm_accurate/model.pkt
#      local/ship_eval.sh --name shipped_fast exp/fast_shipped fast     (a shipped model by name)
set -euo pipefail
threads=1
sets="valid valid_case calls_valid meetings_val test_cased calls_test"
decode_args=
name=pkg_decode
. ./path.sh
. utils/parse_options.sh
if [ $# -ne 2 ]; then
  echo "usage: $0 [--threads N] [--sets \"...\"] [--decode-args \"...\"] [--name PREFIX] EXP PKG" >&2
  exit 1
fi
exp=$1; pkg=$2
for x in $sets; do
  [ -d "data/$x" ] || { echo "$0: data/$x not found: run ./run.sh --stop-stage 1 first" >&2; exit 1; }
done
mkdir -p "$exp"
for x in $sets; do
  d=$exp/${name}_$x
  # shellcheck disable=SC2086  # $decode_args is an option list
  punctkit decode "$pkg" "data/$x" "$d/hyp" --threads "$threads" --overwrite $decode_args > "$exp/${name}_$x.log" 2>&1 \
    || { echo "$0: decoding $x failed; see $exp/${name}_$x.log" >&2; exit 1; }
  punctkit score "data/$x" "$d/hyp" -o "$d" > /dev/null  # score.json and score.txt, each written whole
  python3 - "$x" "$d/score.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[2]))
exact = (s.get("case") or {}).get("exact") or {}
inside = (s.get("case") or {}).get("exact_inside") or {}
print(f"{sys.argv[1]}: punctuation F1 {s['overall']['f1']:.1f}"
      + (f", exact-form case F1 {exact['f1']:.1f} (inside sentences {inside.get('f1', 0):.1f})" if exact else ""))
EOF
done
