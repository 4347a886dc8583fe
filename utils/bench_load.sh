#!/usr/bin/env bash
# The load table (issue 33; RESULTS.md, "Load"): `punctkit punctuate` of one long line
# (IWSLT test2011's words repeated up to WORDS, all on one line) for each model, backend
# and thread count, first on the machine as it is ("idle"), then beside --busy busy loops
# that this script starts and stops itself ("busy"); each the best of --repeat runs of
# utils/bench_punctuate.sh (whole process: start-up, load, decode, write), taken round by
# round so that every setting sees the same neighbours.
#
#   utils/bench_load.sh [--threads "0 1"] [--backends auto] [--busy N] [--repeat 3]
#                       [--words 200000] [--out load.md] MODEL.pkt[:WORDS]...
#
# MODEL.pkt:WORDS gives that model its own line length (an MPNet package takes minutes
# for 200,000 words). --threads 0 is punctuate's default. --busy defaults to nproc: one
# busy loop a CPU (`sh -c 'while :; do :; done'`, at the benchmark's own priority), as a
# training that holds every core. Prints a header (date, commit, nproc, CPU model and
# flags, and at the start of each phase the load average and the busiest processes beside
# it) and a markdown table: machine | model | backend | threads | words | seconds | words/s;
# --out writes the same to a file.
set -euo pipefail

threads="0 1"
backends=auto
busy=
repeat=3
words=200000
out=
data=
help_message="Usage: $0 [--threads \"0 1\"] [--backends \"auto torch\"] [--busy N] [--repeat N] [--words N] [--data TWOCOL] [--out FILE] MODEL.pkt[:WORDS]..."
here=$(dirname "$(readlink -f "$0")")
. "$here/parse_options.sh"
[ $# -ge 1 ] || { echo "$help_message" >&2; exit 1; }
busy=${busy:-$(nproc)}
for opt in busy repeat words; do  # whole numbers, checked here in one line each
  case "${!opt}" in ''|*[!0-9]*) echo "$0: --$opt must be a whole number, got '${!opt}'" >&2; exit 1 ;; esac
done
for t in $threads; do
  case "$t" in ''|*[!0-9]*) echo "$0: --threads takes whole numbers (0: the default), got '$t'" >&2; exit 1 ;; esac
done
data=${data:-$(dirname "$here")/../shared/data/iwslt/test2011}
[ -r "$data" ] || { echo "$0: test data not found: $data (use --data)" >&2; exit 1; }

tmp=$(mktemp -d)
loops=()
stop_busy() {  # end the busy loops this script started (by their ids)
  local p
  for p in "${loops[@]}"; do kill "$p" 2>/dev/null || true; done
  loops=()
}
trap 'stop_busy; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

line_of() {  # line_of N: a file of test2011's words repeated up to N words, on one line
  local f="$tmp/line$1.txt"
  [ -f "$f" ] || cut -f1 "$data" | awk -v n="$1" 'NF { w[k++] = $1 }
    END { for (i = 0; i < n; i++) printf "%s%s", w[i % k], (i + 1 < n ? " " : "\n") }' > "$f"
  echo "$f"
}

beside() {  # the load average and the five busiest processes over one second (top's second sample)
  echo "# $1: load average $(cut -d' ' -f1-3 /proc/loadavg); busiest processes beside (%CPU, command):"
  top -b -n 2 -d 1 -c -w 160 | awk '/^top -/ { n++ } n == 2 && f { print } n == 2 && /PID/ { f = 1 }' \
    | awk '$9 > 0 { printf "#   %5s  ", $9; for (i = 12; i <= NF; i++) printf "%s ", $i; print "" }' \
    | cut -c1-150 | head -5
}

flags=$(for f in avx512_vnni avx512_bf16 avx2; do
  if grep -qw "$f" /proc/cpuinfo; then printf '%s yes, ' "$f"; else printf '%s no, ' "$f"; fi; done)
commit=$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$here" diff --quiet HEAD 2>/dev/null || commit="$commit (with local changes)"
{
  echo "# utils/bench_load.sh, $(date '+%Y-%m-%d %H:%M'), punctkit $commit"
  echo "# nproc $(nproc); $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1); ${flags%, }"
  echo "# best of $repeat runs; one line of test2011 words; busy: $busy busy loop(s) at the benchmark's priority"
} | tee "$tmp/table"

models=(); counts=()
for spec in "$@"; do  # MODEL.pkt or MODEL.pkt:WORDS
  model=${spec%:*}; n=$words
  [ "$model" = "$spec" ] || n=${spec##*:}
  [ -r "$model" ] || { echo "$0: model not found: $model" >&2; exit 1; }
  case "$n" in ''|*[!0-9]*|0) echo "$0: $spec: the words after ':' must be a whole number > 0" >&2; exit 1 ;; esac
  models+=("$model"); counts+=("$n")
done

rows() {  # rows MACHINE: a table row for every model, backend and thread count
  # Round by round (every setting once a round, --repeat rounds), so that what runs beside
  # changes alike for all settings; each row keeps its best run.
  local r k b t key line n secs rate
  local -A best=() shown=()
  for r in $(seq "$repeat"); do
    for k in "${!models[@]}"; do
      for b in $backends; do
        for t in $threads; do
          key="$k $b $t"
          line=$("$here/bench_punctuate.sh" --text "$(line_of "${counts[$k]}")" --threads "$t" --repeat 1 \
                   --punctuate-args "--backend $b" "${models[$k]}" | grep -v '^#')  # not its `# cpu:` line
          IFS=$'\t' read -r _ n secs rate _ <<< "$line"
          echo "# $1, round $r: ${models[$k]} $b threads $t: $secs s" >&2
          if [ -z "${best[$key]:-}" ] || [ "$(echo "$secs < ${best[$key]}" | bc -l)" = 1 ]; then
            best[$key]=$secs
            shown[$key]=$(printf '| %s | %s | %s | %s | %s | %s | %s |' "$1" "${models[$k]}" "$b" "$t" "$n" "$secs" "$rate")
          fi
        done
      done
    done
  done
  for k in "${!models[@]}"; do
    for b in $backends; do
      for t in $threads; do echo "${shown[$k $b $t]}"; done
    done
  done
}

beside "idle" | tee -a "$tmp/table"
idle=$(rows idle)
for _ in $(seq "$busy"); do
  sh -c 'while :; do :; done' &
  loops+=($!)
done
beside "busy (${#loops[@]} busy loops started)" | tee -a "$tmp/table"
busy_rows=$(rows "busy ($busy loops)")
stop_busy
{
  echo
  echo "| machine | model | backend | threads | words | seconds | words/s |"
  echo "|---|---|---|---|---|---|---|"
  echo "$idle"
  echo "$busy_rows"
} >> "$tmp/table"
sed -n '/^$/,$p' "$tmp/table"  # the header lines were printed as they came
[ -z "$out" ] || cp "$tmp/table" "$out"
