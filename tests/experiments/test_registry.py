"""The experiment registry is the one table of experiments: every config class has an
entry, every entry resolves, and every entry is reachable from `sst sweep` and `sst status`."""
import dataclasses
import inspect

import pytest

from sst_core import cli
from sst_core.book import params
from sst_core.experiments import registry
from sst_core.spec import configs
from sst_core.spec.profiles import get_profile
from sst_core.store.codeversion import resolve as resolve_dotted


def config_classes():
    return [c for _, c in inspect.getmembers(configs, inspect.isclass)
            if dataclasses.is_dataclass(c) and "experiment" in {f.name for f in dataclasses.fields(c)}]


def test_every_config_class_has_an_entry_naming_it():
    assert len(config_classes()) == len(registry.EXPERIMENTS)
    for cls in config_classes():
        name = {f.name: f for f in dataclasses.fields(cls)}["experiment"].default
        assert name in registry.EXPERIMENTS, cls.__name__
        assert registry.resolve(registry.EXPERIMENTS[name].config) is cls


def test_every_entry_resolves_lazily():
    for exp in registry.EXPERIMENTS.values():
        assert callable(registry.runner(exp.name))
        for dep in exp.code_deps:
            resolve_dotted(dep)
        for grid in exp.grids:
            # a grid with no chapter is a sweep no page reads yet (the pilots)
            assert callable(registry.resolve(grid.target)) and grid.description


def test_every_entry_is_reachable_from_sweep_and_status():
    parser = cli._parser()
    P = get_profile("smoke")
    reached = set()
    for name in registry.SWEEPS:
        assert parser.parse_args(["sweep", name]).experiment == name
        assert parser.parse_args(["status", "--experiment", name]).experiment == [name]
        for phase in registry.phases(name, P):
            reached |= {c.experiment for c in phase}
    for exp in registry.EXPERIMENTS.values():  # every experiment is some sweep's
        assert exp.grids and all(g.sweep in registry.SWEEPS for g in exp.grids), exp.name
    # at smoke every experiment has runs, but the one whose grid is Figure 4's selection
    # of stored diagnostics, empty before them (tests/test_spread_tail.py gives it records)
    assert set(registry.EXPERIMENTS) - reached <= {"tracking_spread_tail"}


def test_phases_put_every_tracker_before_its_analyses():
    P = get_profile("smoke")
    for name in registry.SWEEPS:
        ph = registry.phases(name, P)
        assert (all(ph) or ph == [[]]) and len(ph) <= 2  # [[]]: nothing at this profile
        first = set(ph[0])
        assert not any(hasattr(c, "run") for c in first)
        if len(ph) == 2:
            assert all(hasattr(c, "run") and c.run in first for c in ph[1])


def test_chapters_of_the_grids_are_the_book_notebooks():
    for ch in registry.CHAPTERS:
        assert ch in params.NOTEBOOKS
        assert all(s in registry.SWEEPS for s in registry.chapter_sweeps(ch))
    assert registry.chapter_sweeps("bench") == ()
    assert registry.chapter_sweeps("p2_memory") == ("memory",)


def test_unknown_names_are_clear_errors():
    with pytest.raises(ValueError, match="unknown experiment 'nope'; allowed: groups_order"):
        registry.get_experiment("nope")
    with pytest.raises(ValueError, match="unknown sweep 'tabel2'; allowed: groups, table2"):
        registry.phases("tabel2", get_profile("smoke"))
