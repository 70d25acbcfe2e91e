"""Execute the book's notebooks with papermill and build the book strictly.

Pipeline (one direction):

1. ``notebooks/<name>.py`` (jupytext percent, the source) -> ``notebooks/<name>.ipynb``,
   with a first cell that, where ``sst_core`` is missing, says what to install
   (:func:`sst_core.book.site.with_install_check`; hidden on the site);
2. the parameters are validated (:func:`sst_core.book.params.check_parameters`) before any
   cell runs, then papermill executes the notebook in place with ``profile`` and any
   overrides; the injected-parameters cell is tagged ``remove-cell``;
3. Jupyter Book builds with execution off: ``--all -W -n --keep-going``.

Each notebook run ends with one summary line: name, profile, wall time, ok/failed.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import yaml

from sst_core.book import params as book_params
from sst_core.book import site
from sst_core.book.vendor import ensure_vendor
from sst_core.experiments import progress as progress_file
from sst_core.spec import profiles as spec_profiles

# A smoke cell that runs longer than this has hung (e.g. nbclient issue 312 with widgets):
# fail instead of stalling CI. Larger profiles train for hours and have no limit.
CELL_TIMEOUT_S = {"smoke": 600}

# The kernel talks to papermill over local IPC sockets in Jupyter's runtime folder, not TCP:
# over TCP without CurveZMQ keys every kernel warns on the terminal about plain-text
# traffic, once per chapter, in the middle of the build's progress lines.
KERNEL_CONFIG = {"KernelManager": {"transport": "ipc"}}


# What a build leaves beside the site: its profile, each notebook's run and a digest of the
# inputs it was built from, so a later step can tell whether the site is still current.
BUILD_MANIFEST = Path("_build") / "sst-book.json"
# The inputs a build reads (besides records): the book's sources and the package.
BUILD_INPUTS = ("_config.yml", "_toc.yml", "jupytext.toml", "book", "notebooks", "sst_core")


class BookError(RuntimeError):
    """A notebook failed to execute or the strict build reported problems."""


class BookUsageError(BookError, ValueError):
    """A wrong request, found before anything runs: a project root without ``_toc.yml``,
    an unknown notebook name (``sst notebooks run`` exits 2 on it, like argparse)."""


@dataclass(frozen=True)
class NotebookRun:
    name: str
    profile: str
    wall_time_s: float
    ok: bool
    error: str | None = None

    def summary(self) -> str:
        status = "ok" if self.ok else f"FAILED ({self.error})"
        return f"[sst] {self.name:<24} profile={self.profile:<6} {self.wall_time_s:7.1f}s  {status}"


def find_root(start: Path | None = None) -> Path:
    from sst_core.store.records import project_root

    root = project_root(start)
    if root is None:
        raise BookUsageError(f"no _toc.yml found in {(start or Path.cwd()).resolve()} or "
                             "above; run from inside the project or give --root")
    return root


def read_toc(root: Path) -> dict[str, Any]:
    """The parsed ``root/_toc.yml``; :class:`BookUsageError` naming the path when ``root``
    is not a project root (no such folder, no ``_toc.yml``) or the file is not a table of
    contents."""
    toc_file = Path(root) / "_toc.yml"
    if not Path(root).is_dir():
        raise BookUsageError(f"project root {root} is not a folder; expected the folder "
                             "holding _toc.yml")
    if not toc_file.is_file():
        raise BookUsageError(f"project root {root} has no _toc.yml ({toc_file} is missing); "
                             "expected the folder holding the book's _toc.yml")
    try:
        toc = yaml.safe_load(toc_file.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise BookUsageError(f"{toc_file} is unreadable: {err}") from None
    if not isinstance(toc, dict) or "root" not in toc:
        raise BookUsageError(f"{toc_file} is not a Jupyter Book table of contents "
                             "(expected a mapping with a 'root' key)")
    return toc


def toc_notebooks(root: Path) -> list[str]:
    """Names of the notebooks in the table of contents, in book order."""
    toc = read_toc(root)
    files: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "file" in node:
                files.append(str(node["file"]))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(toc)
    return [Path(f).name for f in files if f.startswith("notebooks/")]


def toc_titles(root: Path) -> dict[str, str]:
    """The title of every notebook of the table of contents, as the table of contents shows
    it (notebook name -> the first heading of its source ``notebooks/NAME.py``, a Markdown
    cell's ``# # Title``), in book order; :class:`BookUsageError` naming a notebook whose
    source has no title."""
    titles: dict[str, str] = {}
    for name in toc_notebooks(root):
        path = Path(root) / "notebooks" / f"{name}.py"
        try:
            text = path.read_text()
        except OSError as err:
            raise BookUsageError(f"{path} is unreadable: {err}") from None
        found = re.search(r"^# # (.+)$", text, flags=re.MULTILINE)
        if found is None:
            raise BookUsageError(f"{path} has no title: expected a Markdown cell whose first "
                                 "heading reads '# # Title'")
        titles[name] = found.group(1).strip()
    return titles


def toc_parts(root: Path) -> dict[str, str]:
    """The caption of the part of the table of contents each notebook stands in (by notebook
    name), as a chapter or as a section nested under one; a notebook outside any captioned
    part is left out."""
    parts: dict[str, str] = {}

    def walk(entries: Any, caption: str) -> None:
        for entry in entries or []:
            if not isinstance(entry, dict):
                continue
            file = str(entry.get("file", ""))
            if file.startswith("notebooks/"):
                parts[Path(file).name] = caption
            walk(entry.get("sections"), caption)

    for part in read_toc(root).get("parts") or []:
        if isinstance(part, dict) and part.get("caption"):
            walk(part.get("chapters"), str(part["caption"]))
    return parts


def toc_pages(root: Path) -> list[str]:
    """Every page of the table of contents (root first), as paths without suffix."""
    toc = read_toc(root)
    pages = [toc["root"]]

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "file" in node:
                pages.append(str(node["file"]))
            for key, value in node.items():
                if key != "file":
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk({k: v for k, v in toc.items() if k != "root"})
    return pages


# The results overview and the status page report the records the other chapters read, so
# they execute after them (in this order) wherever they stand in the table of contents.
STATUS_PAGE = "book_status"
LAST_PAGES = ("overview", STATUS_PAGE)


def select(root: Path, only: Sequence[str] | None) -> list[str]:
    """The notebooks to execute, in book order but :data:`LAST_PAGES` last."""
    names = sorted(toc_notebooks(root),
                   key=lambda n: LAST_PAGES.index(n) + 1 if n in LAST_PAGES else 0)
    if not only:
        return names
    unknown = [n for n in only if n not in names]
    if unknown:
        raise BookUsageError(f"unknown notebook(s) {', '.join(map(repr, unknown))}; "
                             f"allowed: {', '.join(names)}")
    return [n for n in names if n in only]


def configured_repository(root: Path) -> str:
    """The repository URL the book is built with (:func:`sst_core.book.site.repository_url`:
    ``$SST_REPOSITORY_URL``, else ``repository.url`` of ``root/_config.yml``)."""
    try:
        config = yaml.safe_load((Path(root) / "_config.yml").read_text()) or {}
    except (OSError, yaml.YAMLError):
        config = {}
    return site.repository_url(str((config.get("repository") or {}).get("url") or ""))


def _tag_injected(path: Path) -> None:
    import nbformat

    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        tags = cell.metadata.setdefault("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            tags.append("remove-cell")
    nbformat.write(nb, path)


class ProgressWatch:
    """While a notebook executes: a thread that reads the kernel's progress file
    (:mod:`sst_core.experiments.progress`) every ``poll_s`` and shows it as a bar on
    stderr (runs done / total, the current run, elapsed, ETA); ``echo=False``: read
    only (``states`` keeps what was seen, for the tests)."""

    def __init__(self, name: str, echo: bool = True, poll_s: float = 0.5) -> None:
        import tempfile
        import threading

        fd, path = tempfile.mkstemp(prefix=f"sst-progress-{name}-", suffix=".json")
        os.close(fd)
        self.path = Path(path)
        self.name, self.echo, self.poll_s = name, echo, poll_s
        self.states: list[dict[str, Any]] = []
        self._bar = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="sst-progress")
        self._thread.start()

    def _show(self, state: dict[str, Any]) -> None:
        if self.states and state == self.states[-1]:
            return  # nothing new: no redraw (a log that is not a terminal keeps every one)
        self.states.append(state)
        if not self.echo:
            return
        from tqdm.auto import tqdm

        desc = f"  {self.name}: {state['desc']}"
        if self._bar is None or self._bar.desc != desc or self._bar.total != state["total"]:
            if self._bar is not None:
                self._bar.close()
            self._bar = tqdm(total=state["total"], desc=desc, unit="run", file=sys.stderr,
                             leave=False)
        self._bar.n = state["done"]
        self._bar.set_postfix_str(state.get("current", ""), refresh=False)
        self._bar.refresh()

    def _run(self) -> None:
        while not self._done.wait(self.poll_s):
            state = progress_file.read(self.path)
            if state is not None:
                self._show(state)

    def stop(self) -> None:
        self._done.set()
        self._thread.join()
        state = progress_file.read(self.path)
        if state is not None:
            self._show(state)
        if self._bar is not None:
            self._bar.close()
        self.path.unlink(missing_ok=True)


def run_notebook(name: str, profile: str, root: Path, parameters: dict[str, Any] | None = None,
                 results: Path | None = None, progress: bool = False) -> NotebookRun:
    """Convert, validate and execute one notebook in place; never raises on a cell error.
    ``progress``: show the kernel's runs as a bar on stderr while it executes."""
    import jupytext
    import papermill

    params = {"profile": profile, **(parameters or {})}
    book_params.check_parameters(name, params)  # fails before any work starts
    src = root / "notebooks" / f"{name}.py"
    out = src.with_suffix(".ipynb")
    # the install check first: what a reader who downloads the executed notebook runs first
    jupytext.write(site.with_install_check(jupytext.read(src), configured_repository(root)), out)
    declared = set(papermill.inspect_notebook(str(out)))
    expected = set(book_params.parameters_of(name))
    if declared != expected:
        raise BookError(f"{src}: parameters cell declares {sorted(declared)}, "
                        f"but sst_core.spec.configs.NOTEBOOKS allows {sorted(expected)}")

    os.environ["SST_PROGRESS"] = "0"  # the kernel inherits it: no progress widgets in the book
    start = time.perf_counter()
    watch = ProgressWatch(name, echo=progress)
    os.environ[progress_file.ENV] = str(watch.path)  # the kernel reports its runs there
    try:
        with results_env(root, results):
            error = _execute(out, params, profile)
    finally:
        watch.stop()
        os.environ.pop(progress_file.ENV, None)
    _tag_injected(out)
    return NotebookRun(name, profile, time.perf_counter() - start, error is None, error)


@contextmanager
def results_env(root: Path, results: Path | None):
    """``$SST_RESULTS_DIR`` for what runs inside: an explicit ``results``, else the
    caller's ``$SST_RESULTS_DIR``, else ``<root>/results``; restored afterwards."""
    before = os.environ.get("SST_RESULTS_DIR")
    os.environ["SST_RESULTS_DIR"] = str(results or before or root / "results")
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("SST_RESULTS_DIR", None)
        else:
            os.environ["SST_RESULTS_DIR"] = before


def _execute(out: Path, params: dict[str, Any], profile: str) -> str | None:
    """Execute ``out`` in place with papermill; the error in one line, or None."""
    import papermill
    from nbclient.exceptions import CellTimeoutError, DeadKernelError
    from traitlets.config import Config

    error = None
    try:
        papermill.execute_notebook(str(out), str(out), parameters=params, kernel_name="python3",
                                   cwd=str(out.parent), progress_bar=False, log_output=False,
                                   execution_timeout=CELL_TIMEOUT_S.get(profile),
                                   config=Config(KERNEL_CONFIG))
    except papermill.PapermillExecutionError as err:
        error = f"{err.ename}: {err.evalue}"[:300]
    except (CellTimeoutError, DeadKernelError) as err:
        error = f"{type(err).__name__}: {err}"[:300]
    return error


def run_notebooks(root: Path, profile: str, only: Sequence[str] | None = None,
                  parameters: dict[str, Any] | None = None, results: Path | None = None,
                  echo: bool = True) -> list[NotebookRun]:
    """Execute the chosen notebooks in book order, printing one summary line each."""
    from tqdm.auto import tqdm

    if profile not in book_params.NOTEBOOK_PROFILES:
        spec_profiles.get_profile(profile)  # raises, naming the profiles
    names = select(root, only)
    for name in names:  # validate everything before running anything
        book_params.check_parameters(name, {"profile": profile, **(parameters or {})})
    runs = []
    bar = tqdm(names, desc=f"notebooks ({profile})", unit="nb", disable=not echo, file=sys.stderr)
    for name in bar:
        bar.set_postfix_str(name)
        run = run_notebook(name, profile, root, parameters, results, progress=echo)
        runs.append(run)
        if echo:
            tqdm.write(run.summary())
    return runs


def jupyter_book_build(root: Path, echo: bool = True) -> None:
    """Strict build: execution off, every warning an error, all of them listed."""
    exe = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(exe) if exe.exists() else "jupyter-book", "build", str(root),
           "--all", "-W", "-n", "--keep-going"]
    done = subprocess.run(cmd, cwd=root, capture_output=not echo, text=True)
    if done.returncode != 0:
        detail = "" if echo else (done.stdout[-4000:] + done.stderr[-4000:])
        raise BookError(f"jupyter-book build failed (exit {done.returncode})\n{detail}")


def inputs_digest(root: Path) -> str:
    """sha256 over the path and bytes of every file a build reads besides the records
    (:data:`BUILD_INPUTS`; executed ``.ipynb`` and caches left out), in path order."""
    digest = hashlib.sha256()
    for name in BUILD_INPUTS:
        top = root / name
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        for path in files:
            rel = path.relative_to(root).as_posix()
            if "__pycache__" in path.parts or ".ipynb_checkpoints" in path.parts \
                    or path.suffix in (".pyc", ".ipynb"):
                continue
            digest.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def current_build(root: Path, profile: str) -> tuple[list[NotebookRun] | None, str]:
    """The notebook runs of the site under ``root/_build/html`` when :func:`build_book` made
    it with ``profile`` from the inputs ``root`` holds now; else None. The second item says
    which, in words (for a caller that falls back to building)."""
    path = root / BUILD_MANIFEST
    if not path.is_file():
        return None, f"{path} does not exist"
    try:
        manifest = json.loads(path.read_text())
        runs = [NotebookRun(**run) for run in manifest["runs"]]
        built_profile, built_digest = manifest["profile"], manifest["inputs"]
    except (ValueError, KeyError, TypeError) as err:
        return None, f"{path} is not a build manifest ({type(err).__name__}: {err})"
    if built_profile != profile:
        return None, f"the site at {root} was built with profile {built_profile!r}, not {profile!r}"
    if built_digest != inputs_digest(root):
        return None, f"the sources at {root} changed since its site was built"
    if not (root / "_build" / "html" / "index.html").is_file():
        return None, f"{root / '_build' / 'html' / 'index.html'} is missing"
    return runs, f"the site at {root} was built with profile {profile} from these sources"


def build_book(root: Path, profile: str, results: Path | None = None,
               echo: bool = True) -> list[NotebookRun]:
    """Execute every notebook, then build ``root/_build/html`` strictly, and leave
    :data:`BUILD_MANIFEST` beside it (see :func:`current_build`)."""
    start = time.perf_counter()
    read_toc(root)  # a wrong root is named before anything is fetched or run
    manifest = root / BUILD_MANIFEST
    manifest.unlink(missing_ok=True)  # a failed build leaves none
    digest = inputs_digest(root)  # the sources as the notebooks read them
    ensure_vendor(root, quiet=not echo)
    if echo:  # what will be computed, and roughly how long, before anything runs
        from sst_core.book.plan import book_plan, plan_text

        with results_env(root, results):
            print(plan_text(book_plan(toc_notebooks(root), profile), profile, toc_parts(root)),
                  flush=True)
    runs = run_notebooks(root, profile, results=results, echo=echo)
    failed = [r for r in runs if not r.ok]
    if failed:
        raise BookError("notebook(s) failed: " + "; ".join(f"{r.name}: {r.error}" for r in failed))
    jupyter_book_build(root, echo=echo)
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text(json.dumps({"profile": profile, "inputs": digest,
                                    "runs": [asdict(run) for run in runs]}, indent=1))
    if echo:
        print(f"[sst] book built with profile={profile} in {time.perf_counter() - start:.1f}s: "
              f"{root / '_build' / 'html' / 'index.html'}")
    return runs
