"""Fetch the JavaScript that book pages need, so a reader without network sees
rendered math and widgets.

MathJax, require.js and the Jupyter widget html-manager are fetched with ``npm pack``
(the npm registry's normal client) at build time and trimmed into ``_vendor/``;
``plotly.min.js`` is copied from the pinned plotly package. Sphinx serves ``_vendor/``
as static files (``html_static_path`` in ``_config.yml``). ``_vendor/`` is
git-ignored: about 10 MB, rebuilt from pinned versions.
"""
from __future__ import annotations

import fnmatch
import json
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

# npm spec -> [(glob inside the tarball, destination folder under _vendor/)]
PACKAGES: dict[str, list[tuple[str, str]]] = {
    "mathjax@3.2.2": [
        ("package/es5/tex-mml-chtml.js", "mathjax"),
        ("package/es5/output/chtml/fonts/woff-v2/*", "mathjax/output/chtml/fonts/woff-v2"),
        ("package/es5/input/tex/extensions/*", "mathjax/input/tex/extensions"),
    ],
    "requirejs@2.3.7": [("package/require.js", ".")],
    "@jupyter-widgets/html-manager@1.0.6": [
        ("package/dist/embed-amd.js", "html-manager"),
        ("package/dist/*.embed.js", "html-manager"),
        ("package/dist/*.woff2", "html-manager"),
    ],
}
STAMP = ".vendor.json"


def _plotly_js() -> tuple[str, Path]:
    """plotly.js as shipped inside the pinned plotly Python package (no download)."""
    import plotly

    js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    return f"plotly=={plotly.__version__}", js


def _wanted_stamp() -> dict[str, list[str]]:
    return {"packages": sorted(PACKAGES) + [_plotly_js()[0]]}


def is_current(vendor: Path) -> bool:
    stamp = vendor / STAMP
    try:
        return json.loads(stamp.read_text()) == _wanted_stamp()
    except (OSError, ValueError):
        return False


def ensure_vendor(root: Path, quiet: bool = True) -> Path:
    """Fill ``root/_vendor`` unless it already holds the pinned versions."""
    vendor = Path(root) / "_vendor"
    if is_current(vendor):
        return vendor
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError(
            "npm is needed once to fetch MathJax, require.js and the widget manager into "
            "_vendor/ (install Node.js, e.g. `apt-get install nodejs npm`)"
        )
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run([npm, "pack", "--silent", *PACKAGES], cwd=tmp,
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"npm pack failed:\n{done.stderr[-2000:]}")
        staging = Path(tmp) / "_vendor"
        for spec, rules in PACKAGES.items():
            name, version = spec.rsplit("@", 1)
            tarball = Path(tmp) / f"{name.lstrip('@').replace('/', '-')}-{version}.tgz"
            with tarfile.open(tarball) as tar:
                members = [m for m in tar.getmembers() if m.isfile()]
                for pattern, dest in rules:
                    hits = [m for m in members if fnmatch.fnmatch(m.name, pattern)]
                    if not hits:
                        raise RuntimeError(f"{spec}: nothing matches {pattern!r}")
                    for m in hits:
                        rel = Path(m.name).relative_to(Path(pattern).parent)  # keeps sub-folders
                        out = staging / dest / rel
                        out.parent.mkdir(parents=True, exist_ok=True)
                        out.write_bytes(tar.extractfile(m).read())
        shutil.copy2(_plotly_js()[1], staging / "plotly.min.js")
        (staging / STAMP).write_text(json.dumps(_wanted_stamp()))
        if vendor.exists():
            shutil.rmtree(vendor)
        shutil.move(str(staging), vendor)
    if not quiet:
        print(f"vendored {', '.join(PACKAGES)} into {vendor}")
    return vendor
