"""environment.yml and pyproject.toml pin the same versions of the same packages."""
import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins(lines):
    pins = {}
    for line in lines:
        line = line.strip()
        if line.startswith("-e") or not line:
            continue
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([^\s;]+)", line)
        assert m, f"not an exact pin: {line!r}"
        pins[_norm(m.group(1))] = m.group(2)
    return pins


def pyproject_pins():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = list(data["dependencies"])
    for extra in data.get("optional-dependencies", {}).values():
        lines += extra
    return _pins(lines)


def environment_pins():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = [d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert len(pip) == 1, "environment.yml needs exactly one pip: section"
    return _pins(pip[0])


def test_same_packages_same_versions():
    py, env = pyproject_pins(), environment_pins()
    assert set(py) == set(env), f"only in pyproject: {set(py) - set(env)}; only in environment.yml: {set(env) - set(py)}"
    drift = {k: (py[k], env[k]) for k in py if py[k] != env[k]}
    assert not drift, f"versions differ (pyproject, environment.yml): {drift}"


def test_required_toolchain_is_pinned():
    py = pyproject_pins()
    assert py["torch"] == "2.13.0"
    assert py["jupyter-book"].startswith("1.")
    for name in ("jupytext", "papermill", "ipywidgets", "ipykernel", "numpy", "sympy",
                 "matplotlib", "tqdm", "pytest"):
        assert name in py


def test_python_is_311():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert "python=3.11" in env["dependencies"]
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "3.11" in data["requires-python"]


def test_installed_versions_match_pins():
    from importlib import metadata

    for name, version in pyproject_pins().items():
        installed = metadata.version(name)
        assert installed.split("+")[0] == version, f"{name}: installed {installed}, pinned {version}"
