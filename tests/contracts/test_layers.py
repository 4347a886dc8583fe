"""punctkit's packages depend downward only (docs/architecture.md, Layout): the import graph, read with `ast`
(module-level and function-level imports alike), has no cycle, no upward edge, no edge between
`train` and `decode`, no torch under `data/` or in `score.py`, and no private name crossing modules.

LEVELS names exactly the layers there are; the layout tree and import
order of docs/architecture.md, and the import order of the README's Layout, say what LEVELS says. Every `punctkit`
import, in punctkit itself and in the scripts beside it (local/, recipes/*/local/, utils/), names a module that
exists and names defined in it: a function-level import of a module that was moved fails only when the function
runs."""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "punctkit"
REPO = ROOT.parent

# A layer may import its own modules and those of lower layers; layers on one level import neither
# each other (`train` and `decode` in particular).
LEVELS: dict[str, int] = {
    "files": 0, "progress": 0, "archive": 0, "extras": 0,
    "compat": -1,  # what differs between Python versions: imports nothing of punctkit
    "data": 1, "config": 1, "pretrained": 1,
    "text": 2, "feats": 2, "nn": 2,
    "score": 3, "mark_projection": 3, "align": 3, "batch": 3,
    "models": 4, "recognize": 4, "report": 4,
    "expdir": 5,
    "decode": 6, "train": 6,
    "onnx": 7,
    "package": 8,
    "infer": 9, "fit": 9,
    "punctuator": 10, "decode_data": 10, "packing": 10,
    "serve": 11, "cli_errors": 11, "api": 11,
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


def layers() -> set[str]:
    """The layers there are: punctkit's top-level modules and packages."""
    return {layer(m) for m in modules()} - {TOP}


def test_every_layer_is_placed():
    missing = sorted(layers() - set(LEVELS))
    assert not missing, f"add the layers {missing} to LEVELS (and docs/architecture.md, README's Layout)"


def test_levels_name_only_layers_that_exist():
    ghosts = sorted(set(LEVELS) - layers())
    assert not ghosts, f"LEVELS names layers that do not exist: {ghosts}"


def test_no_import_cycle():
    edges, _ = graph()
    assert find_cycle(edges) is None


def upward(edges: dict[str, set[str]]) -> list[str]:
    """Edges to the same or a higher level in another layer (the package root's lazy API excepted)."""
    bad = []
    for mod, deps in edges.items():
        if layer(mod) == TOP:
            continue  # the root's lazy `punctkit.Engine` is the public API, at the top
        for d in deps:
            a, b = layer(mod), layer(d)
            if a not in LEVELS or (b not in LEVELS and b != TOP):
                continue  # an unplaced layer: test_every_layer_is_placed names it
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


# ---------------------------------------------------------------- the docs say what LEVELS says

ARCHITECTURE = REPO / "docs" / "architecture.md"
README = REPO / "README.md"


def readme_section(title: str, doc: Path = ARCHITECTURE) -> str:
    """The `## title` section of a Markdown file (docs/architecture.md unless `doc` says otherwise)."""
    text = doc.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else len(text)]


def level_groups(names: set[str]) -> list[list[str]]:
    """`names` (layers of LEVELS), one group a level, top first: what the README's import order lists."""
    by_level: dict[int, list[str]] = {}
    for name in sorted(names):
        by_level.setdefault(LEVELS[name], []).append(name)
    return [by_level[k] for k in sorted(by_level, reverse=True)]


def render_order(groups: list[list[str]]) -> str:
    return " → ".join(", ".join(f"`{n}`" for n in g) for g in groups)


def readme_order(section: str) -> list[set[str]]:
    """A doc's chain `` `a` → `b`, `c` → ... ``: the longest run of backticked names joined by
    arrows and commas in the paragraph that begins "Imports go down only"."""
    para = section[section.index("Imports go down only"):].split("\n\n", 1)[0]
    chains = [m.group(0) for m in re.finditer(r"`\w+`(?:\s*[,→]\s*`\w+`)+", para) if "→" in m.group(0)]
    assert chains, "no import order (`a` → `b`, `c` → ...) after 'Imports go down only'"
    chain = max(chains, key=len)
    return [set(re.findall(r"`(\w+)`", group)) for group in chain.split("→")]


def readme_tree(section: str) -> set[str]:
    """The names of the layout tree's entries directly under punctkit/ (`cli.py` -> cli, `models/ nn/`)."""
    names = set()
    for line in section.splitlines():
        if re.match(r" {6}\S", line):  # an entry of punctkit/: the name column, then 2+ spaces
            column = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
            names |= {n.rstrip("/").removesuffix(".py") for n in column.split()
                      if re.fullmatch(r"\w+(\.py|/)", n)}
    return names


@pytest.mark.parametrize("doc", [ARCHITECTURE, README], ids=["docs/architecture.md", "README.md"])
def test_import_order_is_levels(doc):
    """docs/architecture.md and the README's Layout give the import order of LEVELS."""
    got = readme_order(readme_section("Layout", doc))
    want = level_groups(set(LEVELS))
    assert got == [set(g) for g in want], \
        f"{doc.relative_to(REPO)}'s import order should read (from LEVELS): " + render_order(want)


def test_architecture_layout_tree_lists_every_layer():
    """docs/architecture.md's tree has every layer (the README's tree is trimmed and not checked)."""
    got = readme_tree(readme_section("Layout"))
    want = set(LEVELS)
    assert got == want, \
        f"docs/architecture.md's layout tree lacks {sorted(want - got)}, has no such layer {sorted(got - want)}"


def test_readme_readers_see_a_mismatch():
    section = "## Layout\n\n    punctkit/\n      cli.py    the app\n      models/ nn/   layers\n" \
              "      files/    errors.py (x), outputs.py\n        formats/  deeper\n\n" \
              "Imports go down only, in this order: `cli` → `models`, `nn`\n→ `files`. Layers...\n"
    assert readme_tree(section) == {"cli", "models", "nn", "files"}
    assert readme_order(section) == [{"cli"}, {"models", "nn"}, {"files"}]
    assert render_order([["cli"], ["models", "nn"]]) == "`cli` → `models`, `nn`"


# ---------------------------------------------------------------- every punctkit import names what exists

def script_files() -> list[Path]:
    """The Python scripts beside the library: local/, recipes/*/local/ (often links to local/), utils/."""
    found = {p.resolve() for p in (REPO / "local").rglob("*.py")}
    found |= {p.resolve() for p in REPO.glob("recipes/*/local/**/*.py")}
    found |= {p.resolve() for p in (REPO / "utils").rglob("*.py")}
    return sorted(found)


def defined_names(path: Path, known: dict[str, Path], seen: frozenset = frozenset()) -> set[str]:
    """What `from MODULE import name` finds in the module at `path`: its module-level defs, classes,
    assignments and imports (in if/try/with blocks too), the names of `from x import *`, the
    submodules of a package, and the names a module-level `__getattr__` answers (its string constants, and
    those of the module-level tables it reads, such as a dict of lazy names)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    mod = module_name(path)
    tables: set[str] = set()  # the module-level names `__getattr__` reads
    for st in tree.body:
        if isinstance(st, ast.FunctionDef) and st.name == "__getattr__":
            tables |= {n.id for n in ast.walk(st) if isinstance(n, ast.Name)}
    names = block_names(tree.body, ModuleScan(path, mod, known, seen, tables))
    if path.name == "__init__.py":
        names |= {m.rsplit(".", 1)[1] for m in known if m.rpartition(".")[0] == mod}
    return names


@dataclass(frozen=True)
class ModuleScan:
    """The module `defined_names` reads: its file and name, the modules punctkit has, the modules whose
    `import *` is being followed already, and the module-level tables its `__getattr__` reads."""
    path: Path
    mod: str
    known: dict[str, Path]
    seen: frozenset
    tables: set[str]


def string_names(node: ast.AST) -> set[str]:
    """The string constants under `node` that are identifiers (the names a lazy `__getattr__` answers)."""
    return {c.value for c in ast.walk(node)
            if isinstance(c, ast.Constant) and isinstance(c.value, str) and c.value.isidentifier()}


def bound_names(target: ast.AST) -> set[str]:
    """The names an assignment, `for` or `with ... as` target binds."""
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


def inner_blocks(st: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists inside a for, with, if, while or try statement, whose names are the module's too."""
    if isinstance(st, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)):
        return [st.body, getattr(st, "orelse", [])]
    if isinstance(st, (ast.If, ast.While)):
        return [st.body, st.orelse]
    if isinstance(st, ast.Try) or type(st).__name__ == "TryStar":
        return [st.body, *(h.body for h in st.handlers), st.orelse, st.finalbody]
    return []


def import_from_names(st: ast.ImportFrom, scan: ModuleScan) -> set[str]:
    """The names a `from MODULE import ...` binds; `import *` of a punctkit module binds what that module defines."""
    names: set[str] = set()
    for a in st.names:
        if a.name != "*":
            names.add(a.asname or a.name)
            continue
        target = absolute(st, scan.mod, scan.path)
        if target in scan.known and target not in scan.seen:
            names |= defined_names(scan.known[target], scan.known, scan.seen | {scan.mod})
    return names


def statement_names(st: ast.stmt, scan: ModuleScan) -> set[str]:
    """The names one module-level statement binds itself (those of the blocks inside it: `inner_blocks`)."""
    if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {st.name} | (string_names(st) if st.name == "__getattr__" else set())
    if isinstance(st, ast.Assign):
        names = set().union(*(bound_names(t) for t in st.targets))
        if any(isinstance(t, ast.Name) and t.id in scan.tables for t in st.targets):
            names |= string_names(st.value)
        return names
    if isinstance(st, (ast.AnnAssign, ast.AugAssign)):
        return bound_names(st.target)
    if isinstance(st, ast.Import):
        return {a.asname or a.name.split(".")[0] for a in st.names}
    if isinstance(st, ast.ImportFrom):
        return import_from_names(st, scan)
    if isinstance(st, (ast.For, ast.AsyncFor)):
        return bound_names(st.target)
    if isinstance(st, (ast.With, ast.AsyncWith)):
        return set().union(*(bound_names(i.optional_vars) for i in st.items if i.optional_vars is not None))
    return set()


def block_names(stmts: list[ast.stmt], scan: ModuleScan) -> set[str]:
    """The names a list of module-level statements binds, those inside their for/with/if/while/try blocks too."""
    names: set[str] = set()
    for st in stmts:
        names |= statement_names(st, scan)
        for block in inner_blocks(st):
            names |= block_names(block, scan)
    return names


def absolute(node: ast.ImportFrom, mod: str, path: Path) -> str:
    """The module a `from ... import` names, relative imports resolved against module `mod`."""
    base = node.module or ""
    if not node.level:
        return base
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join(parts + ([base] if base else []))


def import_problems(path: Path, mod: str, known: dict[str, Path]) -> list[str]:
    """Each punctkit import of the file at `path` (module-level or inside functions) that names a
    module punctkit lacks, or a name that module does not define."""
    where_ = path.relative_to(REPO) if path.is_relative_to(REPO) else path
    tree = ast.parse(path.read_text(encoding="utf-8"))
    problems, defined = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if (a.name == TOP or a.name.startswith(TOP + ".")) and a.name not in known:
                    problems.append(f"{where_}:{node.lineno}: import {a.name}: no such module")
        elif isinstance(node, ast.ImportFrom):
            target = absolute(node, mod, path)
            if not (target == TOP or target.startswith(TOP + ".")):
                continue
            if target not in known:
                problems.append(f"{where_}:{node.lineno}: from {target} import ...: no such module")
                continue
            if target not in defined:
                defined[target] = defined_names(known[target], known)
            for a in node.names:
                if a.name != "*" and a.name not in defined[target]:
                    problems.append(f"{where_}:{node.lineno}: from {target} import {a.name}: "
                                    f"{target} defines no {a.name}")
    return problems


def test_every_punctkit_import_names_what_exists():
    known = modules()
    bad = [p for mod, path in known.items() for p in import_problems(path, mod, known)]
    bad += [p for path in script_files() for p in import_problems(path, "__main__", known)]
    assert not bad, "imports of what does not exist:\n" + "\n".join(bad)


def test_the_import_check_sees_a_moved_module(tmp_path: Path):
    """A function-level import of a module that is gone, or of a name its module lacks, is caught;
    a package's re-exports and submodules, a lazy `__getattr__` name and a plain import are not."""
    script = tmp_path / "scales.py"
    script.write_text("import punctkit.data.streams\nfrom punctkit import Engine, PunctStream, load, __version__\n"
                      "from punctkit.data import formats\nfrom punctkit.files import PunctkitError\n\n"
                      "def f():\n    from punctkit.train.dataset import collate\n"
                      "    from punctkit.batch import collate, no_such_name\n    import punctkit.nothing_here\n",
                      encoding="utf-8")
    assert [p.split(": ", 1)[1] for p in import_problems(script, "__main__", modules())] == [
        "from punctkit.train.dataset import ...: no such module",
        "from punctkit.batch import no_such_name: punctkit.batch defines no no_such_name",
        "import punctkit.nothing_here: no such module"]
    assert (REPO / "local" / "iwslt" / "transformer_scales.py").resolve() in script_files()
