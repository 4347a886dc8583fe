#!/usr/bin/env bash
# Words per second of `punctkit punctuate` for packed models, whole process
# included (start-up, model load, reading, decoding, writing), on the words of
# IWSLT test2011 given as plain text (100 words a line), or on --text as it is.
#
#   utils/bench_punctuate.sh [--threads 2] [--cores 0-1] [--repeat 3] [--out bench.tsv]
#                            [--text FILE] [--punctuate-args "--step 150"] MODEL.pkt...
#
# --threads 0 is punctuate's default (utils/bench_load.sh: the default and one thread
# on an idle and a busy machine).
#
# Prints one line per model: model, words, seconds (best of --repeat runs),
# words/s of the whole process, and words/s of punctuate's own work (read,
# decode, write: without the Python/torch start-up and model load), tab-separated;
# with --out, appends the same lines to that file. The first line (`# cpu: ...`) names the CPU
# and its vector flags (avx2, avx512*, amx*), also appended to --out.
# --cores pins the process to those CPUs with taskset (when installed).
# --score true (with --data, a twocol reference) also runs the shipped path's F1 once per model:
# `punctuate --format twocol` with the same options, scored by `punctkit score` against --data;
# a sixth column, the overall punctuation F1 (utils/plot_front.py draws words/s against it).
# PUNCTKIT names the command to time (default: punctkit). Another checkout's code, e.g. a default to
# compare against: a script running `PYTHONPATH=CHECKOUT exec python -P -m punctkit.cli "$@"`; without
# -P, python puts the current directory first on sys.path, and a run from this repository's root
# imports this checkout's code, not CHECKOUT's. Time both commands the same way (the console script
# `punctkit` starts 10-15 ms slower than `python -P -m punctkit.cli` here).
set -euo pipefail

threads=2
cores=
repeat=3
out=
data=
text=             # plain text to punctuate as it is (default: --data's words, 100 a line)
punctuate_args=   # more options for punctkit punctuate, e.g. "--step 150"
score=false       # true: also the test set's F1 through punctuate --format twocol (needs --data)
help_message="Usage: $0 [--threads N] [--cores LIST] [--repeat N] [--data TWOCOL] [--text FILE] [--out FILE] [--punctuate-args \"...\"] [--score true] MODEL.pkt..."
. "$(dirname "$(readlink -f "$0")")/parse_options.sh"
[ $# -ge 1 ] || { echo "$help_message" >&2; exit 1; }
case "$threads" in ''|*[!0-9]*) echo "$0: --threads must be a whole number (0: the backend's default), got '$threads'" >&2; exit 1 ;; esac
case "$repeat" in ''|*[!0-9]*|0) echo "$0: --repeat must be a whole number >= 1, got '$repeat'" >&2; exit 1 ;; esac

if [ "$score" = true ] && [ -n "$text" ]; then
  echo "$0: --score true scores against --data's twocol reference: give --data, not --text" >&2; exit 1
fi
root=$(dirname "$(dirname "$(readlink -f "$0")")")
data=${data:-$root/../shared/data/iwslt/test2011}
[ -n "$text" ] || [ -r "$data" ] || { echo "$0: test data not found: $data (use --data or --text)" >&2; exit 1; }
punctkit=${PUNCTKIT:-punctkit}
pin=()
if [ -n "$cores" ]; then
  if command -v taskset >/dev/null; then pin=(taskset -c "$cores"); else echo "$0: no taskset, --cores ignored" >&2; fi
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -n "$text" ]; then
  [ -r "$text" ] || { echo "$0: --text not found: $text" >&2; exit 1; }
  cp "$text" "$tmp/words.txt"
else
  cut -f1 "$data" | awk 'NF { printf "%s%s", $1, (++n % 100 ? " " : "\n") } END { if (n % 100) print "" }' > "$tmp/words.txt"
fi

# the CPU every timing ran on: machines differ between sessions (int8 and bf16 help only where
# the CPU has vnni / bf16 / amx instructions)
cpu=$(sed -n 's/^model name[^:]*: *//p' /proc/cpuinfo 2>/dev/null | head -1)
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | tr ' ' '\n' | grep -E '^(avx2|avx512f|avx512_vnni|avx512_bf16|avx512_fp16|amx_[a-z0-9]+|avx_vnni)$' | tr '\n' ' ')
cpuline="# cpu: ${cpu:-unknown}, $(nproc) cores; flags: ${flags:-none of avx2/avx512/amx}"
echo "$cpuline"
if [ -n "$out" ]; then printf '%s\n' "$cpuline" >> "$out"; fi

for model in "$@"; do
  [ -r "$model" ] || { echo "$0: model not found: $model" >&2; exit 1; }
  best=
  for _ in $(seq "$repeat"); do
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086  # an option list, split on purpose
    "${pin[@]}" "$punctkit" punctuate -m "$model" --threads "$threads" $punctuate_args "$tmp/words.txt" -o "$tmp/out.txt" 2>"$tmp/log" \
      || { cat "$tmp/log" >&2; exit 1; }
    t1=$(date +%s.%N)
    secs=$(echo "$t1 - $t0" | bc -l)
    if [ -z "$best" ] || [ "$(echo "$secs < $best" | bc -l)" = 1 ]; then
      best=$secs
      # punctuate: 127 lines, 12,632 words in 0.19 s (67,407 words/s reading, labelling and writing; 1.52 s in all, ...)
      nwords=$(sed -n 's/^punctuate: .* \([0-9,]*\) words in .*/\1/p' "$tmp/log" | tr -d ,)
      inner=$(sed -n 's/.*(\([0-9,]*\) words\/s .*/\1/p' "$tmp/log" | tr -d ,)
    fi
  done
  rate=$(echo "$nwords / $best" | bc -l)
  line=$(printf '%s\t%d\t%.2f\t%.0f\t%s' "$model" "$nwords" "$best" "$rate" "$inner")
  columns="model, words, seconds, words/s whole process, words/s without start-up"
  if [ "$score" = true ]; then
    # shellcheck disable=SC2086  # an option list, split on purpose
    "$punctkit" punctuate -m "$model" --threads "$threads" $punctuate_args --format twocol "$tmp/words.txt" \
      -o "$tmp/hyp.tsv" 2>"$tmp/log" || { cat "$tmp/log" >&2; exit 1; }
    f1=$("$punctkit" score "$data" "$tmp/hyp.tsv" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["overall"]["f1"])') \
      || { echo "$0: scoring $model against $data failed" >&2; exit 1; }
    line=$(printf '%s\t%.1f' "$line" "$f1")
    columns="$columns, F1"
  fi
  printf '%s\t(%s; threads %s%s%s)\n' "$line" "$columns" "$threads" "${cores:+, cores $cores}" \
    "${punctuate_args:+, $punctuate_args}"
  if [ -n "$out" ]; then printf '%s\n' "$line" >> "$out"; fi
done
