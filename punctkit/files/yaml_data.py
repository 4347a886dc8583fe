"""YAML input: `parse_yaml`, punctkit's one reader of YAML (plain data, bounded), and
`read_yaml_mapping` for YAML files."""
from __future__ import annotations

import functools
import os
from typing import Any

from punctkit.files.errors import PunctkitError, require_file

MAX_YAML_DEPTH = 100         # mappings and sequences inside each other (real configs: under 10)
MAX_YAML_VALUES = 1_000_000  # values in one YAML text, each alias counted as what it names


@functools.cache
def _bounded_loader() -> type:
    """yaml.SafeLoader composing at most MAX_YAML_DEPTH levels and MAX_YAML_VALUES values,
    aliases counted at their size, and no alias inside the value it names (a loop)."""
    import yaml

    class BoundedLoader(yaml.SafeLoader):
        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self.depth = 0
            self.sizes: dict[int, int] = {}  # id(node) -> values in it, aliases expanded

        def compose_node(self, parent: Any, index: Any) -> Any:
            mark = self.peek_event().start_mark
            alias = self.check_event(yaml.AliasEvent)
            self.depth += 1
            try:
                if self.depth > MAX_YAML_DEPTH:
                    raise yaml.composer.ComposerError(None, None, f"nested more than {MAX_YAML_DEPTH} levels deep",
                                                      mark)
                node = super().compose_node(parent, index)
            finally:
                self.depth -= 1
            if alias:
                if id(node) not in self.sizes:
                    raise yaml.composer.ComposerError(None, None, "an alias inside the value it names", mark)
                return node
            parts = node.value if isinstance(node.value, list) else []
            kids = [n for part in parts for n in (part if isinstance(part, tuple) else (part,))]
            self.sizes[id(node)] = size = 1 + sum(self.sizes[id(n)] for n in kids)
            if size > MAX_YAML_VALUES:
                raise yaml.composer.ComposerError(None, None, f"more than {MAX_YAML_VALUES} values, each "
                                                              f"alias counted as what it names", mark)
            return node

    return BoundedLoader


def parse_yaml(text: str, source: str) -> Any:
    """The plain data in YAML `text` (None for an empty text), read as `yaml.safe_load` reads it:
    no tag runs code, and nesting and size are bounded (MAX_YAML_DEPTH, MAX_YAML_VALUES).

    Anything else is a one-line error starting with `source` (and naming the line and column
    where YAML tells them): text that is not YAML, a tag safe_load does not know (`!!python/...`),
    a value its type cannot hold (`!!int x`, the date 2001-13-01, an integer of thousands of digits).
    """
    import yaml

    loader = None
    try:
        loader = _bounded_loader()(text)  # its reader refuses characters YAML does not allow
        return loader.get_single_data()
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        why = "; ".join(str(x) for x in (e.context, e.problem) if x)
        raise PunctkitError(f"{source}: not valid YAML{at} ({why[:200]})") from None
    except yaml.YAMLError as e:  # the reader's, naming the character and its offset
        raise PunctkitError(f"{source}: not valid YAML ({str(e).splitlines()[0][:200]})") from None
    except Exception as e:  # safe_load's constructors on a malformed value: ValueError, KeyError, ...
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
        raise PunctkitError(f"{source}: not valid YAML (a value of the wrong form: {first})") from None
    finally:
        if loader is not None:
            loader.dispose()


def read_yaml_mapping(path: str | os.PathLike, what: str, expect: str) -> dict:
    """The mapping in YAML file `path` (an empty file is {}), read by `parse_yaml`.

    Errors are one line: `what` not found, not UTF-8, not valid YAML (`parse_yaml`), or not
    `expect` (what the file should hold).
    """
    p = require_file(path, what)
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise PunctkitError(f"{p}: byte 0x{e.object[e.start]:02x} at offset {e.start} is not UTF-8") from None
    data = parse_yaml(text, str(p))
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise PunctkitError(f"{p}: expected {expect}")
    return data
