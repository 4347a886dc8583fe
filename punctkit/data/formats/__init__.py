"""The formats punctkit reads and writes, in one registry (registry.py: an entry per format
saying what it supports; how a new format plugs in is in its docstring).

- protocol.py: what a format is (`InputFormat.read(src, ctx)`, `OutputFormat.write(labelled, out, opts)`)
  and what a reader is given (`ReadContext`: it builds the units; `CorpusRead`: how a corpus is read);
- base.py: the utterance types, the repair report, input lines (files, stdin, or a `TextInput`: a text
  already decoded, such as serve's request body, which every reader and detection take);
- registry.py: the table; detect.py: detection by content; corpus.py: corpus read, write and convert;
- labelled.py: `twocol` and `punctuator2` (labels or mark tokens);
- text.py: `text` and `kaldi_text` (the one Kaldi-text reader) and the `readable` output;
- asr.py: `ctm` (the one CTM reader) and `jsonl`, punctuate's ASR inputs and outputs;
- sclite.py: `trn` (sclite's and ESPnet's, the id after the words) and `stm` (segments, a recording one stream);
- json_shapes.py: the one table of JSON formats, told apart by their keys and shapes: the recognizers'
  (recognizers.py: `whisper`, `nemo`, `vosk`, ...) and the ASR services' (services.py: `rev`, `aws`, ...);
- subtitles.py: `srt`, `vtt`, `timed-json` (punctuate's timed outputs; the cue and sentence builders);
- datadir_io.py: `datadir`, data directories, read and written by punctkit.data.datadir.
"""
from punctkit.data.formats.base import (
    AsrUtterance,
    Report,
    Source,
    StreamLines,
    TextInput,
    Utterance,
    flatten,
    source_name,
    split_text,
)
from punctkit.data.formats.corpus import convert, read, write
from punctkit.data.formats.detect import classify_lines, detect_for, detect_format
from punctkit.data.formats.labelled import P2_TOKENS, repair_word
from punctkit.data.formats.protocol import CorpusRead, InputFormat, OutputFormat, ReadContext
from punctkit.data.formats.registry import REGISTRY, Format, get_format, names
from punctkit.data.labels import TEXT_MARK

# the corpus formats: read by convert, prepare and score, written by convert and decode
FORMATS = tuple(n for n in names("reader") if n in names("writer"))
# what convert, prepare and score read: the corpus formats and the read-only ones (nlp)
READ_FORMATS = names("reader")

__all__ = [
    "FORMATS", "READ_FORMATS", "REGISTRY", "Format", "Utterance", "AsrUtterance", "Report", "read", "write", "convert",
    "InputFormat", "OutputFormat", "ReadContext", "CorpusRead",
    "Source", "StreamLines", "TextInput", "detect_format", "detect_for", "classify_lines", "get_format", "names",
    "flatten", "repair_word", "source_name", "split_text", "P2_TOKENS", "TEXT_MARK",
]
