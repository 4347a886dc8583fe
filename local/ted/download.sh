#!/usr/bin/env bash
# Stage 0 of recipes/ted: the corpora it needs, where db.sh says they are. IWSLT's two-column
# files come from the iwslt recipe's download; the TED talks (with the talks of IWSLT's dev and
# test sets removed) and test2011's XML source are reference copies that are not downloaded here.
set -euo pipefail
. ./db.sh
local/../iwslt/download.sh  # dev2012, test2011 (and train2012, test2011asr) unless already in $IWSLT
xml=$IWSLT/IWSLT12.TED.MT.tst2011.en-fr.en.xml
if [ ! -f "$xml" ]; then
  echo "$0: $xml not found: it is IWSLT 2012's MT test source" \
    "(github.com/26hzhang/neural_sequence_labeling, data/raw/LREC/); put it there" >&2
  exit 1
fi
if [ -z "$TED" ] || [ ! -d "$TED/talks" ]; then
  echo "$0: the TED talks were not found (../shared/data/ted/talks): they are the talks of" \
    "github.com/saranyan/TED-Talks (cleaned_ted_data) less those sharing text with IWSLT's dev and" \
    "test sets; set TED in db.sh to a folder holding talks/" >&2
  exit 1
fi
echo "TED talks found in $TED, IWSLT data in $IWSLT: nothing to download"
