# Where the corpora are (ESPnet convention): the IWSLT text that is synthesized.
_shared="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/../shared/data/iwslt"
if [ -d "$_shared" ]; then
  IWSLT="$(cd "$_shared" && pwd)"
else
  IWSLT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../iwslt/downloads/iwslt"
fi
unset _shared
