#!/usr/bin/env bash
# Fetch the IWSLT punctuation files into $IWSLT unless they are already there.
# Source: the two-column files of github.com/xashru/punctuation-restoration (data/en/, MIT).
set -euo pipefail
. ./db.sh
url=https://raw.githubusercontent.com/xashru/punctuation-restoration/master/data/en
if [ -f "$IWSLT/dev2012" ] && [ -f "$IWSLT/test2011" ]; then
  echo "IWSLT data found in $IWSLT: nothing to download"
  exit 0
fi
mkdir -p "$IWSLT"
for f in train2012 dev2012 test2011 test2011asr; do
  [ -s "$IWSLT/$f" ] && continue
  echo "downloading $f"
  curl -fsSL --retry 3 -o "$IWSLT/$f.part" "$url/$f" && mv "$IWSLT/$f.part" "$IWSLT/$f" \
    || { rm -f "$IWSLT/$f.part"; echo "$0: could not download $url/$f" >&2; exit 1; }
done
