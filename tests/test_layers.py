"""punctkit's packages depend downward only (README, Layout): the import graph, read with `ast`
(module-level and function-level imports alike), has no cycle, no upward edge, no edge between
`train` and `decode`, no torch under `data/` or in `score.py`, and no private name crossing modules."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "punctkit"

# A layer may import its own modules and those of lower layers; `train` and `decode` share a level
# and import neither each other.
LEVELS: dict[str, int] = {
    "files": 0, "progress": 0, "archive": 0, "pretrained": 1,
    "data": 1, "score": 2, "report": 3, "project": 3,
    "align": 3, "recognize": 4,
    "text": 2, "feats": 2, "nn": 2, "speech": 2,
    "batch": 3, "config": 1,
    "models": 4,
    "expdir": 5,
    "decode": 6, "train": 6,
    "onnx": 7, "fit": 7,
    "package": 8, "stream": 8,
    "punctuator": 9,
    "ensemble": 10,
    "serve": 11,
    "cli": 12,
}
TORCH_FREE = ("data", "score")
TOP = "punctkit"  # the package root: only its constant `__version__` is imported from below


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def imports(path: Path, name: str) -> list[tuple[str, list[str], int]]:
    """(imported module, names taken from it, line) for every import statement of a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, [], node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(pkg + ([base] if base else []))
            out.append((base, [a.name for a in node.names], node.lineno))
    return out


def resolve(target: str, names: list[str], known: dict[str, Path]) -> list[str]:
    """The punctkit modules an import loads (`from punctkit.x import y` may name module y)."""
    if not (target == TOP or target.startswith(TOP + ".")):
        return []
    found = [f"{target}.{n}" for n in names if f"{target}.{n}" in known]
    return found or [target]


def layer(mod: str) -> str:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else TOP


def graph() -> tuple[dict[str, set[str]], list[tuple[str, str, list[str], int]]]:
    known = modules()
    edges: dict[str, set[str]] = {m: set() for m in known}
    raw = []
    for mod, path in known.items():
        for target, names, line in imports(path, mod):
            raw.append((mod, target, names, line))
            for dep in resolve(target, names, known):
                if dep == TOP and names == ["__version__"]:
                    continue  # a constant of the package root, not its lazy API
                if dep != mod:
                    edges[mod].add(dep)
    return edges, raw


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for d in sorted(edges.get(m, ())):
            if state.get(d) == 1:
                return stack[stack.index(d):] + [d]
            if d not in state:
                c = visit(d)
                if c:
                    return c
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(edges):
        if m not in state:
            c = visit(m)
            if c:
                return c
    return None


def test_every_layer_is_placed():
    assert {layer(m) for m in modules()} - {TOP} <= set(LEVELS), "add new layers to LEVELS (and README)"


def test_no_import_cycle():
    edges, _ = graph()
    assert find_cycle(edges) is None


def upward(edges: dict[str, set[str]]) -> list[str]:
    """Edges to the same or a higher level in another layer (the package root's lazy API excepted)."""
    bad = []
    for mod, deps in edges.items():
        if layer(mod) == TOP:
            continue  # the root's lazy `punctkit.Punctuator` is the public API, at the top
        for d in deps:
            a, b = layer(mod), layer(d)
            if a != b and (b == TOP or LEVELS[b] >= LEVELS[a]):
                bad.append(f"{mod} -> {d}")
    return sorted(bad)


def test_imports_go_down_only():
    bad = upward(graph()[0])
    assert not bad, "upward or sideways imports: " + ", ".join(bad)


def test_train_and_decode_independent():
    edges, _ = graph()
    bad = [f"{m} -> {d}" for m, deps in edges.items() for d in deps
           if {layer(m), layer(d)} == {"train", "decode"}]
    assert not bad


def test_nothing_imports_cli():
    edges, _ = graph()
    assert not [m for m, deps in edges.items() if "punctkit.cli" in deps]


def test_data_and_score_free_of_torch():
    known = modules()
    edges, raw = graph()
    direct = {m for m, t, _, _ in raw if t == "torch" or t.startswith("torch.")}
    # a module is torchy when it, or any punctkit module it imports, imports torch
    torchy = set(direct)
    changed = True
    while changed:
        changed = False
        for m, deps in edges.items():
            if m not in torchy and deps & torchy:
                torchy.add(m)
                changed = True
    bad = sorted(m for m in torchy if layer(m) in TORCH_FREE)
    assert not bad, f"torch reached from {bad}"
    assert "punctkit.data.streams" in known and "punctkit.batch" in torchy  # the rule sees torch


def test_no_private_name_crosses_modules():
    _, raw = graph()
    bad = [f"{m}:{ln} takes {n} from {t}" for m, t, names, ln in raw
           if t.startswith(TOP) for n in names if n.startswith("_") and not n.startswith("__")]
    assert not bad
    attr = []
    for mod, path in modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
                   for a in n.names if (getattr(n, "module", None) or a.name).startswith(TOP)}
        for n in ast.walk(tree):
            if (isinstance(n, ast.Attribute) and n.attr.startswith("_") and not n.attr.startswith("__")
                    and isinstance(n.value, ast.Name) and n.value.id in aliases):
                attr.append(f"{mod}:{n.lineno} uses {n.value.id}.{n.attr}")
    assert not attr


@pytest.mark.parametrize("name", ["IGNORE"])
def test_one_definition(name):
    defs = [m for m, p in modules().items() for node in ast.parse(p.read_text(encoding="utf-8")).body
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets)]
    assert defs == ["punctkit.data.streams"]


def test_the_checks_see_a_cycle_and_an_upward_edge():
    """The walker itself: a made-up graph with a cycle is caught."""
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    assert upward({"punctkit.train.trainer": {"punctkit.decode.decoder", "punctkit.expdir"},
                   "punctkit.data.streams": {"punctkit.batch"}, "punctkit.models.base": {"punctkit.nn.fusion"}}) == [
        "punctkit.data.streams -> punctkit.batch", "punctkit.train.trainer -> punctkit.decode.decoder"]
    edges, _ = graph()
    assert "punctkit.models.registry" in edges["punctkit.models.transformer"]
