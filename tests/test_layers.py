"""The package's layers run one way: an import graph built from the source (every import,
including those inside functions) has no cycle and no import against the layer order
declared in ``sst_core/__init__.py``."""
import ast
from pathlib import Path

import pytest

import sst_core

PACKAGE = Path(sst_core.__file__).resolve().parent


def module_name(path: Path) -> str:
    parts = ("sst_core",) + path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """The sst_core modules ``path`` imports anywhere in its source."""
    return imports_in(path.read_text(), module_name(path), path.name == "__init__.py")


def imports_in(source: str, me: str, is_package: bool = False) -> set[str]:
    """The sst_core modules that ``source`` (module ``me``) imports, also inside functions."""
    package = me if is_package else me.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("sst_core"):
                for alias in node.names:  # `from sst_core.x import module`
                    sub = f"{target}.{alias.name}"
                    out.add(sub if (PACKAGE.parent / Path(*sub.split("."))).with_suffix(".py").exists()
                            or (PACKAGE.parent / Path(*sub.split("."))).is_dir() else target)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("sst_core")}
    out.discard(me)
    return out


def graph() -> dict[str, set[str]]:
    return {module_name(p): imports_of(p) for p in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> int:
    top = module.split(".")[1] if "." in module else ""
    for i, names in enumerate(sst_core.LAYERS):
        if top in names:
            return i
    raise AssertionError(f"{module}: its folder {top!r} is in no layer of sst_core.LAYERS")


def test_every_module_has_a_layer():
    for module in graph():
        if module != "sst_core":
            layer_of(module)


def test_no_import_runs_against_the_layer_order():
    bad = [f"{m} (layer {layer_of(m)}) imports {t} (layer {layer_of(t)})"
           for m, targets in graph().items() if m != "sst_core"
           for t in sorted(targets) if t != "sst_core" and layer_of(t) > layer_of(m)]
    assert not bad, "\n".join(bad)


def test_the_import_graph_has_no_cycle():
    g = graph()
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for t in sorted(g.get(m, ())):
            if state.get(t) == 1:
                cycle = stack[stack.index(t):] + [t]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if t in g and t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(g):
        if m not in state:
            visit(m)


def test_the_graph_sees_imports_inside_functions_and_relative_ones():
    assert "sst_core.spec.configs" in imports_of(PACKAGE / "store" / "records.py")
    src = "def f():\n    from sst_core.sweep import runner\n    from ..experiments import registry\n"
    found = imports_in(src, "sst_core.store.probe")
    assert {"sst_core.sweep.runner", "sst_core.experiments.registry"} <= found
    assert layer_of("sst_core.sweep.runner") > layer_of("sst_core.store.records")


def private_imports() -> list[str]:
    """``from sst_core.x import _name`` and ``module._name`` of an imported sst_core module,
    in sst_core (a private name is private to its module)."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        modules = set()  # local names bound to sst_core modules
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sst_core") \
                    or isinstance(node, ast.ImportFrom) and node.level:
                for a in node.names:
                    if a.name.startswith("_") and not a.name.startswith("__"):
                        out.append(f"{module_name(path)} imports {a.name} from {node.module}")
                    modules.add(a.asname or a.name)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in modules and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                out.append(f"{module_name(path)} uses {node.value.id}.{node.attr}")
    return out


def test_no_private_name_is_used_across_modules():
    bad = private_imports()
    assert not bad, "\n".join(bad)
