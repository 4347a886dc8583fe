"""File helpers shared by every stage, one concern a module; every name is also importable from here
(`punctkit.files.PunctkitError`, `from punctkit.files import atomic_write`, ...).

- errors.py: PunctkitError (one-line errors), `where`, checks of numbers and input files;
- outputs.py: atomic outputs (`atomic_write`, `write_lines`), `check_not_input`, output directories;
- locks.py: `DirLock`, an experiment directory's lock;
- text_codec.py: the one decoder of text input (files, stdin, pipes, HTTP bodies), its line limit, compressed
  inputs told apart, and detection samples (a pipe's head kept for its reader);
- streams.py: the standard streams: closed ones (`guard_std_streams`), standard output in UTF-8;
- yaml_data.py: the one YAML reader (`parse_yaml`, `read_yaml_mapping`);
- json_data.py: the one JSON reader (`json_value`, `parse_json`, `read_json_file`).
"""
from punctkit.files.errors import PunctkitError, finite_number, positive_number, require_file, shown, where
from punctkit.files.json_data import MAX_JSON_DEPTH, json_value, parse_json, read_json_file
from punctkit.files.locks import LOCK_NAME, DirLock
from punctkit.files.outputs import (
    OutputDir,
    atomic_write,
    check_not_input,
    check_output_dir,
    check_output_file,
    output_dir,
    write_lines,
    written_by_punctkit,
)
from punctkit.files.streams import CLOSED, guard_std_streams, require_stdin, require_stdout, stdin_buffer, utf8_stdout
from punctkit.files.text_codec import (
    BOMS,
    ENCODING_OPTION,
    MAX_LINE_BYTES,
    check_not_compressed,
    codec_of,
    decode_lines,
    is_stream,
    iter_lines,
    peek_input,
    peek_stdin,
    sample_lines,
    stdin_lines,
    text_encoding,
)
from punctkit.files.yaml_data import MAX_YAML_DEPTH, MAX_YAML_VALUES, parse_yaml, read_yaml_mapping

__all__ = [
    "PunctkitError", "shown", "where", "finite_number", "positive_number", "require_file",
    "atomic_write", "write_lines", "check_not_input", "check_output_file", "written_by_punctkit", "OutputDir",
    "check_output_dir", "output_dir",
    "LOCK_NAME", "DirLock",
    "BOMS", "ENCODING_OPTION", "MAX_LINE_BYTES", "check_not_compressed", "text_encoding", "codec_of", "decode_lines",
    "iter_lines", "stdin_lines", "peek_stdin", "peek_input", "is_stream", "sample_lines",
    "CLOSED", "guard_std_streams", "require_stdin", "require_stdout", "stdin_buffer", "utf8_stdout",
    "MAX_YAML_DEPTH", "MAX_YAML_VALUES", "parse_yaml", "read_yaml_mapping",
    "MAX_JSON_DEPTH", "json_value", "parse_json", "read_json_file",
]
