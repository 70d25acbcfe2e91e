"""Build the smoke book once per test session, in a temporary copy of the project.

The copy keeps the working tree clean (no executed .ipynb, no smoke records) and lets
the notebook and browser tests share one execution of every notebook.

With ``SST_TEST_BUILT_BOOK=1`` (set by ``.ci/run``, which builds the strict smoke book just
before the tests) the tests check the project's own ``_build`` instead, when
``runner.current_build`` finds that it was built with profile smoke from the sources as they
are now; otherwise they build their own copy as usual and say why.
"""
from __future__ import annotations

import os
import shutil
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from sst_core.book.runner import BookError, NotebookRun, build_book, current_build
from sst_core.book.vendor import ensure_vendor

ROOT = Path(__file__).resolve().parents[2]
BOOK_SOURCES = ("_config.yml", "_toc.yml", "jupytext.toml", "book")
REUSE_ENV = "SST_TEST_BUILT_BOOK"


@dataclass
class BuiltBook:
    root: Path
    runs: list[NotebookRun] = field(default_factory=list)
    error: str | None = None

    @property
    def html(self) -> Path:
        return self.root / "_build" / "html"


def copy_project(dest: Path) -> Path:
    for name in BOOK_SOURCES:
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, dest / name)
    (dest / "notebooks").mkdir()
    for py in (ROOT / "notebooks").glob("*.py"):
        shutil.copy2(py, dest / "notebooks" / py.name)
    shutil.copytree(ensure_vendor(ROOT), dest / "_vendor")
    return dest


@pytest.fixture(scope="session")
def smoke_book(tmp_path_factory) -> BuiltBook:
    if os.environ.get(REUSE_ENV) == "1":
        runs, why = current_build(ROOT, "smoke")
        if runs is not None:
            return BuiltBook(ROOT, runs)
        warnings.warn(f"{REUSE_ENV}=1 but {why}: building the smoke book again")
    root = copy_project(tmp_path_factory.mktemp("smoke_book"))
    book = BuiltBook(root)
    try:
        book.runs = build_book(root, "smoke", results=root / "results")
    except BookError as err:
        book.error = str(err)
    return book


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")


def require_chromium() -> None:
    """Skip the calling test module without chromium and its driver (fail in CI)."""
    if not (CHROMIUM and DRIVER):
        if os.environ.get("CI"):
            raise RuntimeError("chromium and chromedriver are required in CI (make test "
                               "installs them)")
        pytest.skip("chromium/chromedriver not installed: run `make test`, which installs them",
                    allow_module_level=True)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """Headless Chromium as a reader without network: nothing but 127.0.0.1 resolves; its
    console is kept (``console_errors``)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--window-size=1280,2000",
                 # a reader without network: nothing but the local server resolves
                 "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
                 f"--user-data-dir={tmp_path_factory.mktemp('chromium')}"):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=opts)
    # generous limits: every page loads MathJax and plotly.js (4.6 MB) from the local
    # server, on a 2-core machine that may be busy
    driver.set_page_load_timeout(180)
    driver.set_script_timeout(120)
    yield driver
    driver.quit()
