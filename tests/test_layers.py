"""advaudit's layers point one way: every import goes to its own layer or a lower one, none closes a circle.

The layer table below is the one ``docs/layers.md`` draws. Every module under ``advaudit/`` is
parsed (imports at module level, under ``if``/``try``, and inside functions); the test builds the
graph of imports between advaudit modules and checks that

1. no modules and no parts (the packages and top-level modules of the table) import each other in a circle,
2. no import goes from a lower layer to a higher one,
3. inside ``advaudit/models/`` the same two hold for the parts of :data:`MODEL_LAYERS` (targets, training,
   generators, and the pieces of targets: file formats, imported models, endpoints),
4. imports inside functions are only of the optional heavy libraries in :data:`LAZY_ALLOWED`, each
   block of them with a comment saying why it waits.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "advaudit"
DRAWING = PACKAGE.parent / "docs" / "layers.md"

# lowest first; a part may import the parts of its own layer (without closing a circle) and of lower
# layers, never of a higher one. A part is a prefix of module names: the longest that matches counts.
LAYERS: list[tuple[str, ...]] = [
    ("advaudit.core", "advaudit.errors", "advaudit.confutil", "advaudit.files", "advaudit.runtime", "advaudit.config"),
    ("advaudit.models",),
    ("advaudit.worlds",),
    ("advaudit.data",),
    ("advaudit.examiners", "advaudit.search", "advaudit.faults"),
    ("advaudit.audits",),
    ("advaudit.report",),
    ("advaudit.compare",),
    ("advaudit.demo", "advaudit.sweep"),
    ("advaudit", "advaudit.tasks", "advaudit.cli", "advaudit.__main__"),
]

# inside advaudit.models, lowest first, read like LAYERS: the pieces of a target, the file formats and the endpoint
# client, imported models, then what loads, stores, serves and tracks whole targets; training; generators (their
# training reuses the classifier's); the package's own __init__ (the public load_target) on top
MODEL_LAYERS: list[tuple[str, ...]] = [
    ("advaudit.models.nets", "advaudit.models.resnet_blocks", "advaudit.models.targets"),
    ("advaudit.models.targets.formats", "advaudit.models.targets.endpoint"),
    ("advaudit.models.targets.imported",),
    ("advaudit.models.targets.io", "advaudit.models.targets.tracking", "advaudit.models.targets.imported.store",
     "advaudit.models.targets.imported.command", "advaudit.models.targets.endpoint.serve"),
    ("advaudit.models.training",),
    ("advaudit.models.generators",),
    ("advaudit.models",),
]

# third-party libraries that are optional, or slow to import (0.2-4 s each on top of torch, 2-core
# machine), so a function imports them when it needs them and a run that never does never pays for them
# (grpc and protobuf's google.protobuf: 0.1 s, for target.endpoint.protocol: grpc alone)
LAZY_ALLOWED = frozenset({
    "botorch", "drjit", "eagerpy", "foolbox", "google", "gpytorch", "grpc", "joblib", "matplotlib", "mitsuba", "onnx",
    "onnxruntime", "optuna", "pandas", "pytorch_lightning", "scipy", "skops", "sklearn", "statsmodels",
    "tabulate", "threadpoolctl", "timm", "torchvision", "transformers", "trimesh", "wandb",
})


@dataclass(frozen=True)
class Import:
    """One import statement's target as seen from ``source`` (a line of the graph)."""

    source: str
    target: str
    line: int
    in_function: bool
    commented: bool

    def where(self) -> str:
        return f"{self.source} (line {self.line}) imports {self.target}"


def module_files() -> dict[str, tuple[Path, bool]]:
    """Module name -> (file, is a package's ``__init__``) for every module under advaudit/."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return modules


MODULES = module_files()


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules an import statement names (``from a import b`` names ``a.b`` where that is a module)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[:len(base) - node.level + 1]
        prefix = ".".join([*base, node.module] if node.module else base)
    else:
        prefix = str(node.module)
    names = [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in MODULES else prefix for a in node.names]
    return list(dict.fromkeys(names))


def _is_type_checking(test: ast.expr) -> bool:
    return "TYPE_CHECKING" in ast.unparse(test)


def imports_of(module: str) -> list[Import]:
    """Every import in ``module``'s file, except those under ``if TYPE_CHECKING:`` (never run)."""
    path, is_package = MODULES[module]
    source = path.read_text()
    lines = source.splitlines()
    found: list[Import] = []

    def commented(node: ast.stmt) -> bool:
        """A comment on the statement, on the line above, or on an import just above it (one per block)."""
        first = node.lineno - 1
        while first > 0 and lines[first - 1].strip().startswith(("import ", "from ")):
            first -= 1
        above = lines[first - 1].strip() if first >= 1 else ""
        return above.startswith("#") or any("#" in line for line in lines[first:node.end_lineno])

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for sub in child.orelse:
                    visit_one(sub, in_function)
                continue
            visit_one(child, in_function)

    def visit_one(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.extend(Import(module, t, node.lineno, in_function, commented(node))
                         for t in _targets(module, is_package, node))
            return
        visit(node, in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(ast.parse(source), False)
    return found


ALL_IMPORTS = [imp for module in MODULES for imp in imports_of(module)]
INTERNAL = [imp for imp in ALL_IMPORTS if imp.target == "advaudit" or imp.target.startswith("advaudit.")]


def part_of(module: str, layers: list[tuple[str, ...]] = LAYERS) -> str:
    """The part of the layer table ``layers`` ``module`` belongs to (the longest prefix that matches)."""
    parts = [p for layer in layers for p in layer if module == p or module.startswith(p + ".")]
    assert parts, f"{module} belongs to no part of the layer table: add it to the table (and to docs/layers.md)"
    return max(parts, key=len)


RANK = {part: rank for rank, layer in enumerate(LAYERS) for part in layer}
MODEL_RANK = {part: rank for rank, layer in enumerate(MODEL_LAYERS) for part in layer}
IN_MODELS = [imp for imp in INTERNAL if imp.source.startswith("advaudit.models") and imp.target.startswith("advaudit.models")]


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One circle of ``edges`` as its path ``[a, b, ..., a]``, or None when the graph has none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := walk(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (cycle := walk(node)):
            return cycle
    return None


def _lines(imports: list[Import]) -> str:
    return "\n  ".join(imp.where() for imp in imports)


def test_every_module_has_a_part() -> None:
    assert len(MODULES) > 100  # the walk found the package
    for module in MODULES:
        part_of(module)


def test_no_module_imports_another_in_a_circle() -> None:
    edges: dict[str, set[str]] = {}
    for imp in INTERNAL:
        target = imp.target if imp.target in MODULES else imp.target.rpartition(".")[0]
        if target != imp.source:
            edges.setdefault(imp.source, set()).add(target)
    cycle = find_cycle(edges)
    assert cycle is None, "modules import each other in a circle: " + " -> ".join(cycle or [])


def test_no_parts_import_each_other_in_a_circle() -> None:
    edges: dict[str, set[str]] = {}
    for imp in INTERNAL:
        a, b = part_of(imp.source), part_of(imp.target)
        if a != b:
            edges.setdefault(a, set()).add(b)
    cycle = find_cycle(edges)
    where = [imp.where() for a, b in zip(cycle or [], (cycle or [])[1:]) for imp in INTERNAL
             if part_of(imp.source) == a and part_of(imp.target) == b][:6]
    assert cycle is None, f"parts import each other in a circle: {' -> '.join(cycle or [])}\n  " + "\n  ".join(where)


def test_imports_point_down_the_layers() -> None:
    upward = [imp for imp in INTERNAL if RANK[part_of(imp.target)] > RANK[part_of(imp.source)]]
    assert not upward, "imports from a lower layer to a higher one:\n  " + _lines(upward)


def test_inside_models_parts_import_down_and_in_no_circle() -> None:
    assert len(IN_MODELS) > 50  # the walk found the imports inside models/
    modules = [m for m in MODULES if m.startswith("advaudit.models")]
    assert {part_of(m, MODEL_LAYERS) for m in modules} == set(MODEL_RANK)  # every part of the table holds modules
    upward = [imp for imp in IN_MODELS
              if MODEL_RANK[part_of(imp.target, MODEL_LAYERS)] > MODEL_RANK[part_of(imp.source, MODEL_LAYERS)]]
    assert not upward, "imports inside models/ from a lower part to a higher one:\n  " + _lines(upward)
    edges: dict[str, set[str]] = {}
    for imp in IN_MODELS:
        a, b = part_of(imp.source, MODEL_LAYERS), part_of(imp.target, MODEL_LAYERS)
        if a != b:
            edges.setdefault(a, set()).add(b)
    cycle = find_cycle(edges)
    assert cycle is None, "parts of models/ import each other in a circle: " + " -> ".join(cycle or [])


def test_functions_import_only_optional_heavy_libraries() -> None:
    lazy = [imp for imp in ALL_IMPORTS if imp.in_function]
    assert any(imp.target.split(".")[0] == "wandb" for imp in lazy)  # the walk sees imports inside functions
    other = [imp for imp in lazy if imp.target.split(".")[0] not in LAZY_ALLOWED]
    assert not other, ("imports inside functions of what is not an optional heavy library (import it at the "
                       "top of the module):\n  " + _lines(other))
    silent = [imp for imp in lazy if not imp.commented]
    assert not silent, "imports inside functions without a comment saying why they wait:\n  " + _lines(silent)


@pytest.mark.parametrize("edges, cycle", [
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, ["a", "b", "c", "a"]),
    ({"a": {"b", "c"}, "b": {"c"}, "c": set()}, None),
])
def test_find_cycle_known_answers(edges: dict[str, set[str]], cycle: list[str] | None) -> None:
    assert find_cycle(edges) == cycle


def test_part_of_takes_the_longest_prefix_and_the_walk_resolves_relative_imports() -> None:
    assert part_of("advaudit.core.records") == "advaudit.core"
    assert part_of("advaudit.tasks") == "advaudit.tasks"
    assert part_of("advaudit") == "advaudit"
    assert RANK["advaudit.core"] < RANK["advaudit.audits"] < RANK["advaudit.report"]
    node = ast.parse("from .records import write_json").body[0]
    assert _targets("advaudit.core", True, node) == ["advaudit.core.records"]
    assert _targets("advaudit.core.plots", False, node) == ["advaudit.core.records"]


def drawn_layers(text: str) -> list[list[str]]:
    """The names in each row of the first drawing of ``text`` (docs/layers.md), lowest row first.

    A row starts with a label in the first 16 columns (a line with a blank label continues the row
    above); its names are the first word of each item separated by ``·`` or ``,``, with what stands in
    parentheses left out."""
    rows: list[list[str]] = []
    for line in text.split("```")[1].splitlines():
        if not line.strip() or set(line.strip()) <= {"─"}:
            continue
        if line[:16].strip():
            rows.append([])
        content = line[16:]
        while re.search(r"\([^()]*\)", content):
            content = re.sub(r"\([^()]*\)", "", content)
        rows[-1] += [piece.split()[0] for piece in re.split(r"[·,]", content) if piece.split()]
    return rows[::-1]


def test_the_docs_draw_the_layer_table() -> None:
    """docs/layers.md's drawing has LAYERS' rows in order, each naming its parts; every advaudit module or
    package it names sits in the row of its part."""
    drawn = drawn_layers(DRAWING.read_text())
    assert len(drawn) == len(LAYERS), f"docs/layers.md draws {len(drawn)} layers, LAYERS has {len(LAYERS)}"
    for rank, (names, layer) in enumerate(zip(drawn, LAYERS)):
        missing = {part.rsplit(".", 1)[-1] for part in layer} - set(names)
        assert not missing, f"docs/layers.md's row {rank} (from the bottom) does not name {sorted(missing)}"
        for name in names:
            module = "advaudit" if name == "advaudit" else f"advaudit.{name}"
            if module in MODULES:
                assert RANK[part_of(module)] == rank, f"docs/layers.md draws {module} in row {rank}, LAYERS elsewhere"


def test_drawn_layers_known_answer() -> None:
    text = ("```\n top            a (x, y), b.py  notes\n                c (z (w))\n ──────\n"
            " bottom         d · e (f) · g\n```\n")
    assert drawn_layers(text) == [["d", "e", "g"], ["a", "b.py", "c"]]
