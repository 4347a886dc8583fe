#!/usr/bin/env python3
"""What one `punctkit punctuate` call runs: the punctkit modules and functions it calls, per phase, and the
walk of its `model` parameter through the import layers (issue #80, item 2).

Runs `punctkit punctuate TWO_LINE_FILE -m MODEL -o OUT` in this process through the CLI's entry
(`punctkit.cli.main`) under `sys.setprofile`, and counts every call of a punctkit function (a code object
of a module under the imported `punctkit` package, import time included; module and class bodies,
comprehensions and generator expressions are not functions of their own):

(a) modules and functions, in all and per phase. A phase is given by the call's roots on the stack:
    - load: the calls made inside the one direct callee of the CLI's `punctuate` command whose calls
      read a model package (a function of `punctkit.package`): loading the model;
    - label: the calls made while a labelling root is on the stack (LABEL_ROOTS: the engine's labelling
      call, the writer that consumes the labelled units): labelling, rendering and writing;
    - checks: every other call (the CLI's callbacks and option checks, the output checks, format
      detection).
(b) the walk of `model`: the calls that carry the value of the CLI's `model` parameter or a value derived
    from it (an argument that is the value, holds it in a list, tuple or dict, or is an attribute of it; a
    walk call's return value is then derived from it too), while the model loads. Each call's module has its
    layer (tests/contracts/test_layers.py: LEVELS, the README's order); a climb is a walk call whose layer is above the
    layer of the walk call before it: the chain came back up. Also counted: how many times the walk enters
    infer/backends.py (a call into it from another module while loading).

    python -P utils/trace_punctuate.py                     # this checkout (with the venv's python)
    PYTHONPATH=/tmp/before python -P utils/trace_punctuate.py   # another copy of the code
    python -P utils/trace_punctuate.py --list              # also every function, per phase, and the walk
"""
from __future__ import annotations

import argparse
import ast
import inspect
import io
import os
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

NOT_FUNCTIONS = ("<module>", "<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>")
# the labelling roots: a call with one of these (module suffix, function name) on its stack labels, renders or writes
LABEL_ROOTS = {("punctuator", "write_units"), ("infer.engine", "label"), ("infer.engine", "__call__"),
               ("infer.engine", "label_units"), ("punctuator", "punctuate_units")}
TEXT = "so what do you think i said we should go home now\nand then the talk ended well thank you\n"


@dataclass
class Call:
    """One call event of a punctkit function."""

    module: str    # punctkit.infer.engine
    function: str  # Engine.label (the code's qualified name)
    root: int      # the direct callee of the command it runs under (its number), or -1
    labels: bool   # a labelling root is on its stack


@dataclass
class Tracer:
    """The profile hook: punctkit calls, their roots, and the walk of the model's value."""

    root: str                      # the punctkit package's directory (its files are punctkit's)
    levels: dict[str, int]
    calls: list[Call] = field(default_factory=list)
    walk: list[tuple[int, str, str, bool]] = field(default_factory=list)  # (root, module, function, enters backends)
    reads_package: set[int] = field(default_factory=set)  # the roots under which a package was read
    carried: list[Any] = field(default_factory=list)  # the model's value and what was derived from it (kept alive)
    _ids: set[int] = field(default_factory=set)
    _walk_frames: set[int] = field(default_factory=set)
    _command: int | None = None     # id of the CLI punctuate frame
    _roots: int = 0
    _open: dict[int, int] = field(default_factory=dict)  # frame id of a running root -> its number

    def name(self, frame: FrameType) -> tuple[str, str] | None:
        """(module, function) of a punctkit function's frame, else None."""
        f = frame.f_code.co_filename
        if not f.startswith(self.root + os.sep):
            return None
        rel = Path(f[len(self.root) + 1:]).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        return ".".join(["punctkit", *parts]), getattr(frame.f_code, "co_qualname", frame.f_code.co_name)

    def layer(self, module: str) -> int:
        parts = module.split(".")
        return self.levels.get(parts[1], 99) if len(parts) > 1 else 99

    def carry(self, value: Any) -> None:
        """Mark `value` as derived from the model's value, and what it holds (items, attributes: one level)."""
        attrs = getattr(value, "__dict__", None)
        for v in [value, *self._parts(value), *(attrs.values() if isinstance(attrs, dict) else ())]:
            if v is None or isinstance(v, (bool, int, float)) or isinstance(v, str) and not v or id(v) in self._ids:
                continue
            self._ids.add(id(v))
            self.carried.append(v)

    @staticmethod
    def _parts(value: Any) -> list[Any]:
        if isinstance(value, (list, tuple, set)):
            return list(value)
        if isinstance(value, dict):
            return list(value.values())
        return []

    def carries(self, frame: FrameType) -> bool:
        """Whether a call's arguments carry the model's value (or a value derived from it)."""
        code = frame.f_code
        n = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 4) + bool(code.co_flags & 8)
        for a in code.co_varnames[:n]:
            v = frame.f_locals.get(a)
            if v is not None and (id(v) in self._ids or any(id(x) in self._ids for x in self._parts(v))):
                return True
        return False

    def labelling(self, frame: FrameType | None) -> bool:
        """Whether a labelling root (LABEL_ROOTS) is on the stack of `frame`."""
        while frame is not None:
            got = self.name(frame)
            if got is not None:
                module, function = got[0].removeprefix("punctkit."), got[1]
                if (module, function.rsplit(".", 1)[-1]) in LABEL_ROOTS:
                    return True
            frame = frame.f_back
        return False

    def hook(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "return":
            if id(frame) in self._walk_frames:
                self._walk_frames.discard(id(frame))
                self.carry(arg)
            self._open.pop(id(frame), None)
            return
        if event != "call":
            return
        got = self.name(frame)
        if got is None:
            return
        module, function = got
        if function == "punctuate" and module == "punctkit.cli" and self._command is None:
            self._command = id(frame)
            self.carry(frame.f_locals.get("model"))
        caller = frame.f_back
        if self._command is not None and caller is not None and id(caller) == self._command:
            self._roots += 1
            self._open[id(frame)] = self._roots
        if frame.f_code.co_name in NOT_FUNCTIONS or not frame.f_code.co_flags & inspect.CO_OPTIMIZED:
            return  # a module's or a class's body, a comprehension: not a function of its own
        root = next(iter(self._open.values()), -1)  # one root runs at a time
        if root >= 0 and module.startswith("punctkit.package"):
            self.reads_package.add(root)
        self.calls.append(Call(module, function, root, self.labelling(frame)))
        if root >= 0 and self.carries(frame):
            self._walk_frames.add(id(frame))
            caller_name = self.name(caller) if caller is not None else None
            enters = module.endswith("infer.backends") and (caller_name is None or caller_name[0] != module)
            self.walk.append((root, module, function, enters))

    def phase(self, c: Call) -> str:
        """load (under the root that read a package), label (a labelling root on its stack) or checks."""
        return "load" if c.root in self.reads_package else "label" if c.labels else "checks"


def levels_of(repo: Path) -> dict[str, int]:
    """The layers of tests/contracts/test_layers.py's LEVELS (the README's order of imports)."""
    tree = ast.parse((repo / "tests" / "contracts" / "test_layers.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "LEVELS":
            return ast.literal_eval(node.value)
    raise SystemExit("tests/contracts/test_layers.py has no LEVELS")


def run(model: str, show: bool) -> int:
    import punctkit

    root = os.path.dirname(punctkit.__file__)  # as the code objects name their files
    repo = Path(root).parent
    tracer = Tracer(root, levels_of(repo))
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "talk.txt", Path(tmp) / "talk.out.txt"
        src.write_text(TEXT, encoding="utf-8")
        from punctkit.cli import main

        saved, errors = sys.stderr, io.StringIO()
        sys.stderr = errors
        sys.setprofile(tracer.hook)
        try:
            main(["punctuate", str(src), "-m", model, "-o", str(out), "--quiet"])
        except SystemExit as e:
            if e.code not in (0, None):
                sys.setprofile(None)
                sys.stderr = saved
                raise SystemExit(f"punctkit punctuate failed ({e.code}): {errors.getvalue()}") from None
        finally:
            sys.setprofile(None)
            sys.stderr = saved
        written = out.read_text(encoding="utf-8")
    return report(tracer, root, written, show)


def report(t: Tracer, root: str, written: str, show: bool) -> int:
    """Print the counts (and with `show`, every function and the walk)."""
    by_phase: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for c in t.calls:
        by_phase[t.phase(c)].add((c.module, c.function))
    every = set().union(*by_phase.values())
    print(f"punctkit: {root}")
    print(f"output: {written.strip()!r}")
    print("(a) modules / functions called")
    names = {"load": "loading the model", "checks": "CLI checks and format detection",
             "label": "labelling, rendering and writing"}
    for phase in ("load", "checks", "label"):
        fs = by_phase.get(phase, set())
        print(f"  {names[phase]:34s} {len({m for m, _ in fs}):3d} modules {len(fs):4d} functions")
    print(f"  {'all':34s} {len({m for m, _ in every}):3d} modules {len(every):4d} functions")
    walk = [(m, f, enters) for r, m, f, enters in t.walk if r in t.reads_package]
    climbs = sum(t.layer(b[0]) > t.layer(a[0]) for a, b in zip(walk, walk[1:]))
    print("(b) the walk of `model` while loading")
    print(f"  calls carrying it: {len(walk)}; climbs back up the layers: {climbs}; "
          f"infer/backends.py entered: {sum(e for _, _, e in walk)}")
    if show:
        for phase in ("load", "checks", "label"):
            print(f"-- {names[phase]}")
            for m, f in sorted(by_phase.get(phase, set())):
                print(f"   {m}:{f}")
        print("-- the walk (layer, module:function; ^ a climb)")
        prev = None
        for m, f, _ in walk:
            up = "^" if prev is not None and t.layer(m) > t.layer(prev) else " "
            print(f"   {up} {t.layer(m):2d} {m}:{f}")
            prev = m
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", "-m", default="fast", help="the model punctuate loads (default: fast)")
    ap.add_argument("--list", action="store_true", help="also list every function per phase, and the walk")
    args = ap.parse_args()
    os.environ.setdefault("PUNCTKIT_QUIET", "1")
    return run(args.model, args.list)


if __name__ == "__main__":
    sys.exit(main())
