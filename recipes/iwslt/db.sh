# Where the corpora are (ESPnet convention). The shared reference copy is used
# when present; otherwise stage 0 downloads into downloads/.
_shared="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/../shared/data/iwslt"
if [ -d "$_shared" ]; then
  IWSLT="$(cd "$_shared" && pwd)"
else
  IWSLT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/downloads/iwslt"
fi
unset _shared
