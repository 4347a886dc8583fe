#!/usr/bin/env bash
# The number of streams `punctkit decode` reads in a data directory (data/streams.py stream_order): its recordings
# where `segments` or `utt2reco` name them (an utterance neither names: its speaker's), else its speakers (utt2spk),
# else its utterances. What `split-data --per-reco` can split it into at most (Kaldi's split_data.sh --per-reco).
#   utils/num_streams.sh DATA
set -euo pipefail
if [ $# -ne 1 ]; then echo "usage: $0 DATA" >&2; exit 1; fi
d=$1
if [ -f "$d/utt2spk" ]; then
  { cat "$d/utt2reco" "$d/segments" 2> /dev/null || true; } |
    awk 'FILENAME == "-" { r[$1] = $2; next } { print (($1 in r) ? r[$1] : $2) }' - "$d/utt2spk" | sort -u | wc -l
else
  wc -l < "$d/text"
fi
