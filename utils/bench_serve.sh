#!/usr/bin/env bash
# Throughput and latency of `punctkit serve` (a benchmark, not a test): starts the
# server on a free port of 127.0.0.1, runs the load generator (utils/serve_load.py,
# an aiohttp client on the same machine, bounded in requests and in time) with
# 100-word plain-text requests at each number of concurrent clients, and prints a
# markdown table of words/s and p50/p99 latency next to `punctuate`'s own words/s
# (without start-up) on the same text and package; then stops the server (SIGTERM).
#
#   utils/bench_serve.sh [--threads 2] [--requests 2000] [--seconds 30] [--batch-wait-ms 5]
#                        [--serve-args "..."] MODEL.pkt TEXT [CLIENTS...]
#
# TEXT: plain text, or a two-column file (its first column); its words are cut into
# 100-word requests. CLIENTS default to 1 8 32. The load generator shares the CPU
# with the server: say so when quoting the figures.
set -euo pipefail

threads=2
requests=2000
seconds=30
batch_wait_ms=5
serve_args=     # more options for punctkit serve, e.g. "--backend torch"
help_message="Usage: $0 [--threads N] [--requests N] [--seconds S] [--batch-wait-ms MS] [--serve-args \"...\"] MODEL.pkt TEXT [CLIENTS...]"
. "$(dirname "$(readlink -f "$0")")/parse_options.sh"
for opt in threads requests seconds batch_wait_ms; do
  case "${!opt}" in ''|*[!0-9]*) echo "$0: --${opt//_/-} must be a whole number, got '${!opt}'" >&2; exit 1 ;; esac
done
[ $# -ge 2 ] || { echo "$help_message" >&2; exit 1; }

model=$1 text=$2
shift 2
clients=("$@")
[ ${#clients[@]} -gt 0 ] || clients=(1 8 32)
[ -r "$model" ] || { echo "$0: model not found: $model" >&2; exit 1; }
[ -r "$text" ] || { echo "$0: text not found: $text" >&2; exit 1; }
utils=$(dirname "$(readlink -f "$0")")
punctkit=${PUNCTKIT:-punctkit}
python=${PYTHON:-python3}

tmp=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid"; wait "$pid" || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

# 100 words a line (a two-column file gives its first column)
awk -F'\t' '{ n = split($1, w, " "); for (i = 1; i <= n; i++) printf "%s%s", w[i], (++k % 100 ? " " : "\n") }
            END { if (k % 100) print "" }' "$text" > "$tmp/words.txt"
nwords=$(wc -w < "$tmp/words.txt")
[ "$nwords" -ge 100 ] || { echo "$0: $text has fewer than 100 words" >&2; exit 1; }

# punctuate's own words/s on the same text and package (read, decode, write; no start-up)
"$punctkit" punctuate -m "$model" --threads "$threads" "$tmp/words.txt" -o "$tmp/out.txt" 2> "$tmp/punctuate.log" \
  || { cat "$tmp/punctuate.log" >&2; exit 1; }
own=$(sed -n 's/.*(\([0-9,]*\) words\/s .*/\1/p' "$tmp/punctuate.log" | tr -d ,)

# the server, on a port the system picks (named in its log)
# shellcheck disable=SC2086  # an option list, split on purpose
"$punctkit" serve -m "$model" --port 0 --threads "$threads" --batch-wait-ms "$batch_wait_ms" \
  --log "$tmp/serve.log" $serve_args 2> "$tmp/serve.err" &
pid=$!
url=
for _ in $(seq 600); do
  url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$tmp/serve.log" 2>/dev/null | head -1 || true)
  [ -n "$url" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$tmp/serve.err" >&2; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { echo "$0: the server did not start in 60 s" >&2; exit 1; }
backend=$("$python" -c 'import json, sys, urllib.request as u; print(json.load(u.urlopen(sys.argv[1]))["backend"])' \
          "$url/health")

echo "$(basename "$model") ($backend, $threads threads), $nwords words of $(basename "$text") in 100-word requests;"
echo "punctuate: $own words/s without start-up; the load generator runs on the same machine (shares its CPUs)."
echo
echo "| clients | requests | errors | words/s | % of punctuate | p50 ms | p99 ms |"
echo "|--:|--:|--:|--:|--:|--:|--:|"
for c in "${clients[@]}"; do
  r=$("$python" "$utils/serve_load.py" "$url/punctuate" "$tmp/words.txt" --clients "$c" \
        --requests "$requests" --seconds "$seconds")
  echo "$r" | "$python" -c '
import json, sys
r, own = json.load(sys.stdin), float(sys.argv[1] or 0)
pct = "%.0f%%" % (100 * r["words_per_s"] / own) if own else "-"
print("| {clients} | {requests} | {errors} | {words_per_s:,.0f} | {pct} | {p50_ms:.1f} | {p99_ms:.1f} |".format(pct=pct, **r))
' "$own"
done
