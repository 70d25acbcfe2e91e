"""The code fingerprint (sst_core.store.codeversion): it follows what the code reaches and nothing
else, on a throwaway package written per test, and on the real package's experiments."""
import itertools
import json
import subprocess
import sys
import textwrap

import pytest

from sst_core.experiments import registry as experiments_registry
from sst_core.store.codeversion import fingerprint, reachable, resolve

PKG = "cv_fake_pkg"  # the package the walker treats as "ours" in these tests

FILES = {name: textwrap.dedent(text) for name, text in {
    "ops.py": '''
        import functools

        SCALE = 2


        def double(x):
            """Twice x."""
            return SCALE * x  # the scale


        def unrelated(x):
            return x - 1


        @functools.lru_cache(maxsize=None)
        def cached(x):
            return x + 3
    ''',
    "models.py": '''
        from . import ops


        class Layer:
            def forward(self, x):
                return ops.double(x) + 1


        def build_layer():
            return Layer()


        def build_other():
            return None


        BUILDERS = {"layer": build_layer, "other": build_other}
    ''',
    "train.py": '''
        from .models import BUILDERS


        def train(name, x):
            model = BUILDERS[name]()
            return step(model.forward(x))


        def step(y):
            return y * 10


        def lazy(x):
            from .ops import cached
            return cached(x)


        def ping(n):
            return pong(n - 1) if n else 0


        def pong(n):
            return ping(n - 1) if n else 1
    ''',
}.items()}


def _edit(files: dict[str, str], module: str, old: str, new: str) -> dict[str, str]:
    assert old in files[module], old
    return {**files, module: files[module].replace(old, new)}


def _purge() -> None:
    for name in [m for m in sys.modules if m == PKG or m.startswith(PKG + ".")]:
        del sys.modules[name]


@pytest.fixture
def load(tmp_path, monkeypatch):
    """load(files) -> the folder holding the package ``PKG`` written from ``files``, freshly
    imported (each call in a folder of its own, so neither the import system nor
    linecache sees an older version)."""
    count = itertools.count()

    def write(files: dict[str, str]):
        folder = tmp_path / str(next(count))
        (folder / PKG).mkdir(parents=True)
        (folder / PKG / "__init__.py").write_text("")
        for name, text in files.items():
            (folder / PKG / name).write_text(text)
        _purge()
        monkeypatch.syspath_prepend(str(folder))
        return folder

    yield write
    _purge()


def _fp(entries: str = "train.train", narrow=None) -> str:
    return fingerprint([resolve(f"{PKG}.{e}") for e in entries.split()], package=PKG,
                       narrow=narrow)


def test_docstrings_comments_and_formatting_do_not_count(load):
    load(FILES)
    before = _fp()
    edited = _edit(FILES, "ops.py", '"""Twice x."""', '"""Two times x, documented at length."""')
    edited = _edit(edited, "ops.py", "# the scale", "# the scale factor (see SCALE)")
    edited = _edit(edited, "ops.py", "return SCALE * x", "return (SCALE\n              * x)")
    load(edited)
    assert _fp() == before


@pytest.mark.parametrize("module, old, new", [
    ("train.py", "return y * 10", "return y * 11"),  # called directly
    ("ops.py", "return SCALE * x", "return SCALE * x + 0"),  # through a module attribute,
    # from a method of a class a registry builder returns
    ("models.py", "return ops.double(x) + 1", "return ops.double(x) + 2"),  # the method
    ("models.py", "return Layer()", "return Layer() or None"),  # a builder in a registry
    ("ops.py", "SCALE = 2", "SCALE = 3"),  # a module-level constant it uses
])
def test_a_change_to_reached_code_changes_the_fingerprint(load, module, old, new):
    load(FILES)
    before = _fp()
    load(_edit(FILES, module, old, new))
    assert _fp() != before


@pytest.mark.parametrize("module, old, new", [
    ("ops.py", "return x - 1", "return x - 2"),  # an unrelated function beside used ones
    ("ops.py", "return x + 3", "return x + 4"),  # one that only another entry point uses
    ("train.py", "def pong(n):", "def added(n):\n    return n\n\n\ndef pong(n):"),  # a new one
])
def test_a_change_elsewhere_leaves_the_fingerprint_alone(load, module, old, new):
    load(FILES)
    before = _fp()
    load(_edit(FILES, module, old, new))
    assert _fp() == before


def test_imports_inside_functions_and_decorated_functions_are_followed(load):
    load(FILES)
    before = _fp("train.lazy")
    assert f"{PKG}.ops.cached" in reachable([resolve(f"{PKG}.train.lazy")], package=PKG)
    load(_edit(FILES, "ops.py", "return x + 3", "return x + 4"))  # behind lru_cache
    assert _fp("train.lazy") != before


def test_cycles_terminate_and_are_followed(load):
    load(FILES)
    before = _fp("train.ping")
    names = reachable([resolve(f"{PKG}.train.ping")], package=PKG)
    assert {f"{PKG}.train.ping", f"{PKG}.train.pong"} <= set(names)
    load(_edit(FILES, "train.py", "else 1", "else 2"))
    assert _fp("train.ping") != before


def test_reachable_names_what_is_covered(load):
    load(FILES)
    names = reachable([resolve(f"{PKG}.train.train")], package=PKG)
    for covered in ("train.train", "train.step", "models.BUILDERS", "models.build_layer",
                    "models.build_other", "models.Layer", "models.Layer.forward",
                    "ops.double", "ops.SCALE"):
        assert f"{PKG}.{covered}" in names, covered
    for left_out in ("ops.unrelated", "ops.cached", "train.lazy", "train.ping"):
        assert f"{PKG}.{left_out}" not in names, left_out
    assert not [n for n in names if not n.startswith(PKG)]  # torch, stdlib: never followed


def test_narrow_keeps_only_the_registry_entries_a_run_reads(load):
    narrow = {f"{PKG}.models.BUILDERS": ["layer"]}
    load(FILES)
    before, whole = _fp(narrow=narrow), _fp()
    assert f"{PKG}.models.build_other" not in reachable(
        [resolve(f"{PKG}.train.train")], package=PKG, narrow=narrow)
    load(_edit(FILES, "models.py", '"other": build_other}', '"other": build_other, "new": None}'))
    assert _fp(narrow=narrow) == before
    assert _fp() != whole


def test_the_fingerprint_is_the_same_in_a_fresh_process(load):
    folder = load(FILES)
    here = _fp("train.train train.lazy train.ping")
    code = (f"import sys; sys.path.insert(0, {str(folder)!r}); "
            "from sst_core.store.codeversion import fingerprint, resolve; "
            f"print(fingerprint([resolve('{PKG}.train.' + e) for e in ('train', 'lazy', 'ping')], "
            f"package={PKG!r}))")
    for seed in ("1", "2"):  # string hashing (set order) differs between these
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True, env={"PYTHONHASHSEED": seed, "PATH": ""})
        assert out.stdout.strip() == here


# -- the real package -----------------------------------------------------------------------

def _reach(experiment: str, model: str | None = None) -> set[str]:
    points, scope = experiments_registry.code_scope(experiment, model)
    return set(reachable(points, **scope))


def test_tracking_covers_training_and_its_models_but_not_the_analyses():
    reach = _reach("tracking")
    for covered in ("sst_core.training.tracking.train_tracking", "sst_core.training.stacked.train_tracking_stacked",
                    "sst_core.ops.selective_scan.selective_scan", "sst_core.ops.scan.linear_scan",
                    "sst_core.groups.get_group", "sst_core.tasks.tracking.sample",
                    "sst_core.models.registry.build", "sst_core.models.cells.tanh_rnn"):
        assert covered in reach, covered
    for left_out in ("sst_core.groups.derived_series", "sst_core.analysis.error_control.diagnose",
                     "sst_core.training.lra.train_lra", "sst_core.models.s4.S4DModel",
                     "sst_core.experiments.registry.code_hash"):
        assert left_out not in reach, left_out


def test_lra_and_tracking_cover_different_code():
    lra, tracking = _reach("lra"), _reach("tracking")
    assert {"sst_core.training.lra.train_lra", "sst_core.models.s4.S4DModel"} <= lra
    for tracking_only in ("sst_core.training.tracking.train_tracking", "sst_core.groups.get_group",
                          "sst_core.ops.selective_scan.selective_scan"):
        assert tracking_only in tracking and tracking_only not in lra, tracking_only
    assert experiments_registry.code_hash("lra") != experiments_registry.code_hash("tracking")


def test_a_tracking_record_covers_only_its_own_model():
    mamba = _reach("tracking", "mamba")
    assert "sst_core.ops.selective_scan.selective_scan" in mamba
    assert not [n for n in mamba if n.startswith(("sst_core.models.attention",
                                                  "sst_core.models.cells"))]
    assert _reach("tracking", "tanh_rnn") & {"sst_core.models.cells.tanh_rnn"}
    # a diagnostics record names its model through the run it analyses
    assert (experiments_registry.code_hash("tracking_diagnostics", {"run": {"model": "mamba"}})
            != experiments_registry.code_hash("tracking_diagnostics", {"run": {"model": "tanh_rnn"}}))


def test_analyses_cover_loading_their_tracker_but_not_training_it():
    """An analysis loads its tracker through the store; the training code is the training
    record's own business (its code hash), so it is not followed."""
    reach = _reach("tracking_diagnostics", "mamba")
    assert {"sst_core.analysis.error_control.diagnose", "sst_core.analysis.trackers.load_tracker",
            "sst_core.training.tracking.load_weights",
            "sst_core.ops.selective_scan.selective_scan"} <= reach
    assert not reach & {"sst_core.experiments.runs.run", "sst_core.training.lra.train_lra",
                        "sst_core.training.tracking.train_tracking",
                        "sst_core.training.stacked.train_tracking_stacked"}


def test_the_code_hash_does_not_depend_on_what_the_process_ran_before(monkeypatch):
    """Module state a run changes (the native scan's loaded library, caches) is not part of
    the hash: a process that trained a model first gets the same hash as this one, which
    has run other tests before (its cache is emptied: some of them monkeypatch the
    training code while they store records)."""
    monkeypatch.setattr(experiments_registry, "_code_hashes", {})
    code = ("import torch, json; from sst_core.models import build; "
            "from sst_core.experiments import registry; "
            "m = build('mamba', 6, 6, d_model=8, d_state=4); "
            "m(torch.randint(0, 6, (2, 300))).sum().backward(); "
            "print(json.dumps([registry.code_hash(e, {'model': 'mamba'}) "
            "for e in sorted(registry.EXPERIMENTS)]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    here = [experiments_registry.code_hash(e, {"model": "mamba"}) for e in sorted(experiments_registry.EXPERIMENTS)]
    assert json.loads(out.stdout) == here


def test_code_files_of_a_module_count(load):
    """A module's CODE_FILES (e.g. C source it compiles) count where the walk reaches it."""
    files = _edit(FILES, "ops.py", "SCALE = 2", 'SCALE = 2\nCODE_FILES = ("loops.c",)')
    folder = load({**files, "loops.c": "int f(void) { return 1; }\n"})
    before = _fp()
    assert f"{PKG}.ops:loops.c" in reachable([resolve(f"{PKG}.train.train")], package=PKG)
    (folder / PKG / "loops.c").write_text("int f(void) { return 2; }\n")
    assert _fp() != before
    assert _fp("train.ping") == _fp("train.ping")  # a walk that never reaches ops.py
    load({**files, "loops.c": "int f(void) { return 3; }\n"})
    ping = _fp("train.ping")
    load({**files, "loops.c": "int f(void) { return 4; }\n"})
    assert _fp("train.ping") == ping


def test_the_native_scan_source_counts_for_tracking():
    assert "sst_core.ops.native:native_scan.c" in _reach("tracking", "aussm")


def test_the_selective_scan_source_counts_for_mamba_only():
    """The selective scan's C source is its own library's, so that editing it leaves the
    records of models without a selective scan alone."""
    source = "sst_core.ops.native_selective:native_selective.c"
    assert source in _reach("tracking", "mamba")
    assert source in _reach("tracking", "negative_mamba")
    assert source not in _reach("tracking", "tanh_rnn")


def test_a_file_edited_after_import_is_detected_not_misread(load):
    """inspect reads a function's source from its file at the line numbers of the code
    that was loaded: after an edit that moves the definition, that is other code. The
    walk says so instead of hashing it (a sweep worker loaded its code hours before)."""
    from sst_core.store.codeversion import SourceChanged

    folder = load(FILES)
    entry = resolve(f"{PKG}.train.train")  # imported now
    path = folder / PKG / "train.py"
    path.write_text("# two lines\n# added above\n" + path.read_text())
    with pytest.raises(SourceChanged, match=r"train.*no longer holds its definition"):
        fingerprint([entry], package=PKG)
