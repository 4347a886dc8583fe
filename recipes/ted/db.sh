# Where the corpora are (ESPnet convention): the TED talks (training text, TED) and IWSLT
# (dev2012 for valid, test2011 and its cased XML source for test), and the Earnings-22 calls. The shared reference copies
# are used when present; otherwise IWSLT is the iwslt recipe's download (stage 0 fetches it).
_shared="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/../shared/data"
if [ -d "$_shared/ted" ]; then TED="$(cd "$_shared/ted" && pwd)"; else TED=""; fi
if [ -d "$_shared/iwslt" ]; then
  IWSLT="$(cd "$_shared/iwslt" && pwd)"
else
  IWSLT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../iwslt/downloads/iwslt"
fi
# Earnings-22 (calls in Rev's NLP format, for train_all_calls and the calls' valid and test sets)
if [ -d "$_shared/earnings22" ]; then CALLS="$(cd "$_shared/earnings22" && pwd)"; else CALLS=""; fi
# the meetings (AMI, ICSI, committees; JSON lines with speaker turns, for local/conversation.sh)
if [ -d "$_shared/meetings" ]; then MEETINGS="$(cd "$_shared/meetings" && pwd)"; else MEETINGS=""; fi
unset _shared
