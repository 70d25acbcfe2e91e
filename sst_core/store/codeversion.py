"""Which version of the code a result depends on: a fingerprint of the code it runs.

The version lock (``results/versions.lock``) keeps, per experiment, the fingerprints of
the code its runs reach (:func:`sst_core.experiments.registry.fingerprints`), and a test
fails when the code no longer matches them, so that every change that reaches runs gets a
decision (DEVELOPING.md): raise the experiment's ``version`` (its records become stale) or
show by ``sst lock`` that nothing changed. Staleness itself is the version alone
(:func:`sst_core.experiments.registry.is_stale_record`). Hashing whole files would trip
the lock after any edit to a file an experiment shares (a new analysis function, a
comment, a newly registered model); instead
:func:`fingerprint` walks from the experiment's entry points through the names their code
uses and hashes only what it reaches:

- a function: its source without docstrings, comments and formatting (``ast.dump``;
  lambdas: their code object), then every name its source and its code objects use
  (nested ones too: lambdas, comprehensions, inner functions) looked up among its
  module's globals, what it imports inside its body, the functions in its closure and
  the one it wraps (``__wrapped__``);
- a class: its source the same way, every name that source uses (decorators, class
  attributes, bases), and its methods, properties, class- and staticmethods;
- a module of the package that such code names (``ops.linear_scan``): those of the
  code's names that are attributes of the module;
- any other global (a constant, a registry of builders, a ``functools.partial``, an
  import of torch): the source of the statements that bind it, with its name, and the
  names those statements use. Source rather than the value: a value can hold run-time
  state (a cache, a loaded library) or a path of this machine, which would make the
  fingerprint differ between processes and machines.

A module that runs code written in another language names those files in ``CODE_FILES``
(``sst_core.ops.native``: its C source); their content counts wherever the walk reaches
the module. Anything outside the package (torch, numpy, the standard library) is not
followed; its import statement is hashed like any binding, so rebinding ``act = F.gelu``
to ``F.silu`` counts. The walk errs on the side of reaching too much: a name used as an attribute
(``self.scan``) is also looked up among the globals. What it cannot see is a lookup by a
string at run time (the model registry's ``importlib.import_module``): the caller adds
such targets as entry points. Every object is visited once, and the result is sorted by
name before hashing, so it is the same in every process.
"""
from __future__ import annotations

import ast
import dis
import functools
import hashlib
import importlib
import importlib.util
import inspect
import sys
import textwrap
import types
from pathlib import Path
from typing import Any, Collection, Iterable, Iterator, Mapping

PACKAGE = "sst_core"
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


class SourceChanged(RuntimeError):
    """The source file of a function was edited after this process imported it (its line
    numbers no longer point at its definition), so no fingerprint of the code it runs can
    be read from the file."""


def fingerprint(entry_points: Iterable[Any], package: str = PACKAGE, *,
                exclude: Collection[str] = (),
                narrow: Mapping[str, Collection[Any]] | None = None) -> str:
    """16 hex digits that change when the code reachable from ``entry_points`` (functions
    or classes of ``package``) changes, not when docstrings, comments, formatting or code
    they never reach do (see the module docstring).

    ``exclude``: dotted names of functions or classes not followed (e.g. the lookup of
    another run's record, which has a fingerprint of its own). ``narrow``: for a global
    dict (dotted name) of which a run reads only some keys (the model registry), those
    keys; the statement binding it is hashed without its other entries.
    """
    h = hashlib.sha256()
    for name, description in _walk(entry_points, package, exclude, narrow or {}):
        h.update(name.encode() + b"\0" + description.encode() + b"\0")
    return h.hexdigest()[:16]


def reachable(entry_points: Iterable[Any], package: str = PACKAGE, *,
              exclude: Collection[str] = (),
              narrow: Mapping[str, Collection[Any]] | None = None) -> list[str]:
    """The qualified names :func:`fingerprint` covers (functions, classes, globals),
    sorted: what a fingerprint depends on, for tests and for reading."""
    return sorted({name for name, _ in _walk(entry_points, package, exclude, narrow or {})})


def resolve(dotted: str) -> Any:
    """The object a dotted name denotes (``"sst_core.training.tracking.train_tracking"``,
    ``"sst_core.training.tracking.Curriculum.update"``), importing its module."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        name = ".".join(parts[:i])
        try:
            obj = importlib.import_module(name)
        except ModuleNotFoundError as err:  # a shorter prefix may be the module
            if err.name is None or not (name == err.name or name.startswith(err.name + ".")):
                raise
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(f"no module in {dotted!r}")


def _walk(entry_points: Iterable[Any], package: str, exclude: Collection[str],
          narrow: Mapping[str, Collection[Any]]) -> list[tuple[str, str]]:
    walk = _Walk(package, exclude, narrow)
    for obj in entry_points:
        walk.push_callables(obj)
    walk.run()
    return sorted(walk.nodes)


# -- source ---------------------------------------------------------------------------------

def _parse(obj: Any) -> ast.AST | None:
    """The syntax tree of the source of a module, class or code object, without
    docstrings (comments, formatting and line numbers are not in ``ast.dump`` of it);
    None without a source."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(obj)))
    except (OSError, TypeError, SyntaxError):
        return None
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, *_DEFINITIONS)) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return tree


def _names(tree: ast.AST) -> set[str]:
    """The names a syntax tree uses, as variables or as attributes."""
    return {n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(tree)
            if isinstance(n, (ast.Name, ast.Attribute))}


@functools.lru_cache(maxsize=None)
def _summary(obj: Any) -> tuple[str, frozenset[str]]:
    """(description, names its source uses) of a function or class of the package.

    A function's own code, not what it wraps (``inspect.getsource`` of a function would
    unwrap it); a lambda by its code object, as its source is the whole line it is on.
    Cached per object: the code a process has loaded does not change.
    """
    if inspect.isclass(obj):
        tree = _parse(obj)
        if tree is None:
            return "<no source>", frozenset()
        return ast.dump(tree), frozenset(_names(tree))
    code = obj.__code__
    tree = None if code.co_name == "<lambda>" else _parse(code)
    if tree is not None:
        first = tree.body[0] if tree.body else None
        if not (isinstance(first, (ast.FunctionDef, ast.AsyncFunctionDef))
                and first.name == code.co_name):
            raise SourceChanged(
                f"{_qualname(obj)}: {code.co_filename} line {code.co_firstlineno} no longer "
                "holds its definition: the file was edited after this process imported it, "
                "so its source there is not the code that runs")
    names = set() if tree is None else _names(tree)
    for c in _code_objects(code):
        names.update(c.co_names)
    return _describe_code(code) if tree is None else ast.dump(tree), frozenset(names)


def _bound_names(stmt: ast.stmt) -> set[str]:
    """The names a module-level statement binds."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}
    if isinstance(stmt, _DEFINITIONS):
        return {stmt.name}
    targets = {ast.Assign: lambda s: s.targets, ast.AnnAssign: lambda s: [s.target],
               ast.AugAssign: lambda s: [s.target]}.get(type(stmt))
    if targets is None:
        return set()
    return {n.id for t in targets(stmt) for n in ast.walk(t) if isinstance(n, ast.Name)}


@functools.lru_cache(maxsize=None)
def _bindings(module: types.ModuleType) -> dict[str, list[ast.stmt]]:
    """Name -> the module-level statements that bind it (also inside ``if`` and ``try``).
    Cached per module object, like :func:`_summary`."""
    tree = _parse(module)
    found: dict[str, list[ast.stmt]] = {}

    def scan(stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            for name in _bound_names(stmt):
                found.setdefault(name, []).append(stmt)
            if isinstance(stmt, (ast.If, ast.Try)):
                for block in (stmt.body, stmt.orelse, getattr(stmt, "finalbody", []),
                              *(h.body for h in getattr(stmt, "handlers", []))):
                    scan(block)

    scan(tree.body if tree is not None else [])
    return found


def _narrowed(stmt: ast.stmt, keys: Collection[Any]) -> ast.stmt:
    """An assignment of a dict literal with only the entries of ``keys``."""
    value = getattr(stmt, "value", None)
    if not isinstance(stmt, (ast.Assign, ast.AnnAssign)) or not isinstance(value, ast.Dict):
        return stmt
    kept = [(k, v) for k, v in zip(value.keys, value.values)
            if isinstance(k, ast.Constant) and k.value in keys]
    narrowed = type(stmt)(**{f: getattr(stmt, f) for f in stmt._fields})
    narrowed.value = ast.Dict(keys=[k for k, _ in kept], values=[v for _, v in kept])
    return narrowed


def _describe_code(code: types.CodeType) -> str:
    """A code object without its line numbers and file name (for lambdas, whose source is
    the whole line they are on)."""
    consts = [_describe_code(c) if isinstance(c, types.CodeType) else _describe_const(c)
              for c in code.co_consts]
    return repr((code.co_code.hex(), consts, code.co_names, code.co_varnames,
                 code.co_freevars, code.co_cellvars, code.co_argcount,
                 code.co_posonlyargcount, code.co_kwonlyargcount, code.co_flags))


def _describe_const(value: Any) -> str:
    if isinstance(value, frozenset):  # set order depends on the process's string hashing
        return f"frozenset({sorted(map(_describe_const, value))})"
    if isinstance(value, tuple):
        return f"({', '.join(map(_describe_const, value))})"
    return repr(value)


def _code_objects(code: types.CodeType) -> Iterator[types.CodeType]:
    """``code`` and the code objects nested in it (lambdas, comprehensions, functions)."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


def _imports(code: types.CodeType, package: str | None
             ) -> Iterator[tuple[str, tuple[str, ...] | None]]:
    """(absolute module name, the names imported from it or None) of each import
    statement of ``code`` itself."""
    ops = list(dis.get_instructions(code))
    for i, op in enumerate(ops):
        if op.opname != "IMPORT_NAME" or i < 2:
            continue
        level, fromlist = ops[i - 2].argval, ops[i - 1].argval  # the two LOAD_CONSTs
        name = op.argval
        if isinstance(level, int) and level > 0:
            try:
                name = importlib.util.resolve_name("." * level + name, package)
            except (ImportError, ValueError):
                continue
        yield name, (tuple(fromlist) if isinstance(fromlist, tuple) else None)


def _unwrapped(value: Any) -> Any:
    """The function a decorated callable wraps (itself if none)."""
    try:
        return inspect.unwrap(value) if callable(value) else value
    except ValueError:  # a cycle of __wrapped__
        return value


def _qualname(obj: Any) -> str:
    return f"{obj.__module__}.{obj.__qualname__}"


# -- the walk -------------------------------------------------------------------------------

class _Walk:
    """One walk of :func:`fingerprint`: the (name, description) of everything reached."""

    def __init__(self, package: str, exclude: Collection[str],
                 narrow: Mapping[str, Collection[Any]]):
        self.package = package
        self.excluded = {id(obj): obj for obj in map(resolve, exclude)}
        self.narrow = narrow
        self.nodes: set[tuple[str, str]] = set()
        self.todo: list[Any] = []
        self.seen: dict[int, Any] = {}  # id -> function or class (kept, so no id is reused)
        self.globals_seen: set[str] = set()
        self.modules_seen: set[tuple[str, frozenset[str]]] = set()
        self.code_files_seen: set[str] = set()

    def in_package(self, module_name: Any) -> bool:
        return isinstance(module_name, str) and (
            module_name == self.package or module_name.startswith(self.package + "."))

    def ours(self, obj: Any) -> bool:
        """Whether ``obj`` is a function or class of the package. A function counts where
        its code was written (``functools.wraps`` copies ``__module__`` onto foreign
        wrappers such as ``torch.no_grad``'s); methods a dataclass generates from a
        string are covered by the class's source."""
        if inspect.isfunction(obj):
            return (not obj.__code__.co_filename.startswith("<")
                    and self.in_package(obj.__globals__.get("__name__")))
        return inspect.isclass(obj) and self.in_package(obj.__module__)

    def push_callables(self, value: Any) -> None:
        """Queue the functions and classes of the package that ``value`` is or wraps (a
        decorated function, a staticmethod, a property, a bound method, a partial)."""
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        elif isinstance(value, types.MethodType):
            value = value.__func__
        elif isinstance(value, property):
            for f in (value.fget, value.fset, value.fdel):
                self.push_callables(f)
            return
        elif isinstance(value, (functools.cached_property, functools.partial)):
            value = value.func
        if self.ours(value) and id(value) not in self.seen and id(value) not in self.excluded:
            self.seen[id(value)] = value
            self.todo.append(value)
        if callable(value):
            wrapped = getattr(value, "__wrapped__", None)  # lru_cache, torch.no_grad, ...
            if wrapped is not None and wrapped is not value:
                self.push_callables(wrapped)

    def run(self) -> None:
        while self.todo:
            obj = self.todo.pop()
            if inspect.isclass(obj):
                self.visit_class(obj)
            else:
                self.visit_function(obj)

    def visit_function(self, fn: types.FunctionType) -> None:
        code = fn.__code__
        description, names = _summary(fn)
        self.nodes.add((_qualname(fn), description))
        module = sys.modules.get(fn.__globals__.get("__name__"))
        if module is not None:
            self.code_files(module)
            self.follow_names(module, names)
            for c in _code_objects(code):
                self.follow_imports(c, module.__package__, names)
        for cell in fn.__closure__ or ():
            try:
                self.push_callables(cell.cell_contents)
            except ValueError:  # a cell not filled yet
                continue
        self.push_callables(getattr(fn, "__wrapped__", None))

    def visit_class(self, cls: type) -> None:
        description, names = _summary(cls)
        self.nodes.add((_qualname(cls), description))
        module = sys.modules.get(cls.__module__)
        if module is not None:
            self.code_files(module)
            self.follow_names(module, names)
        for base in cls.__bases__:
            self.push_callables(base)
        for member in vars(cls).values():
            self.push_callables(member)

    def code_files(self, module: types.ModuleType) -> None:
        """The content of the non-Python files a module runs (its ``CODE_FILES``, names
        beside the module's file, e.g. C source it compiles), once per module."""
        files = getattr(module, "CODE_FILES", ())
        if not files or module.__name__ in self.code_files_seen:
            return
        self.code_files_seen.add(module.__name__)
        here = Path(module.__file__).parent
        for name in files:
            node, path = f"{module.__name__}:{name}", here / name
            data = path.read_bytes() if path.is_file() else None
            digest = "<missing>" if data is None else hashlib.sha256(data).hexdigest()
            self.nodes.add((node, digest))

    def follow_names(self, module: types.ModuleType, names: Collection[str]) -> None:
        """Follow those of ``names`` that are globals of ``module``: bound by its source
        (not by a function at run time), or a submodule."""
        namespace, bound = vars(module), _bindings(module)
        for n in sorted(names):
            if n.startswith("__") and n.endswith("__"):
                continue
            value = namespace.get(n)
            submodule = inspect.ismodule(value) and value.__name__ == f"{module.__name__}.{n}"
            if n in bound or submodule:
                self.follow_global(module, n, names)

    def follow_global(self, module: types.ModuleType, name: str, names: Collection[str]) -> None:
        """Follow the global ``name`` of ``module``; ``names``: those the referring code uses
        (its attributes of a module it names)."""
        value = vars(module).get(name)
        if inspect.ismodule(value) and self.in_package(value.__name__):
            key = (value.__name__, frozenset(names))
            if key not in self.modules_seen:
                self.modules_seen.add(key)
                self.follow_names(value, names)
            return
        if self.ours(value) or self.ours(_unwrapped(value)):
            self.push_callables(value)
            return
        dotted = f"{module.__name__}.{name}"
        stmts = _bindings(module).get(name)
        if dotted in self.globals_seen or not stmts:
            return
        self.globals_seen.add(dotted)
        if dotted in self.narrow:
            stmts = [_narrowed(s, self.narrow[dotted]) for s in stmts]
        self.nodes.add((dotted, "\n".join(ast.dump(s) for s in stmts)))
        for stmt in stmts:
            if isinstance(stmt, ast.ImportFrom):
                self.follow_import_from(module, stmt, name)
            elif not isinstance(stmt, ast.Import):
                self.follow_names(module, _names(stmt))

    def follow_import_from(self, module: types.ModuleType, stmt: ast.ImportFrom,
                           name: str) -> None:
        """Follow ``name``, bound by ``from  import``, to where it was defined."""
        origin = "." * stmt.level + (stmt.module or "")
        try:
            origin = importlib.util.resolve_name(origin, module.__package__)
        except (ImportError, ValueError):
            return
        source = sys.modules.get(origin)
        if source is None or not self.in_package(origin):
            return
        for alias in stmt.names:
            if (alias.asname or alias.name) == name:
                self.follow_global(source, alias.name, ())

    def follow_imports(self, code: types.CodeType, package: str | None,
                       names: Collection[str]) -> None:
        """Follow what ``code`` imports from the package inside a function body."""
        for module_name, fromlist in _imports(code, package):
            if not self.in_package(module_name):
                continue
            try:
                module = importlib.import_module(module_name)
                for n in fromlist or ():
                    if n not in vars(module):  # a submodule not imported yet
                        importlib.import_module(f"{module_name}.{n}")
            except ImportError as err:  # e.g. an optional dependency missing here
                self.nodes.add((module_name, f"<not importable: {err.name}>"))
                continue
            if fromlist is None:  # import sst_core.x: the code names x's attributes
                self.follow_names(module, names)
            for n in fromlist or ():
                self.follow_global(module, n, names)
