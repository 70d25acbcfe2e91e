"""What a reader of the built book expects beyond Jupyter Book's own settings: a Sphinx
extension, named in ``_config.yml`` (``sphinx: extra_extensions``).

- **One setting for the repository.** ``$SST_REPOSITORY_URL`` (or, where it is unset,
  ``repository.url`` in ``_config.yml``, empty by default) turns on the repository and issues
  buttons and the Binder launch button of every chapter; empty, none of them appears. The
  chapters are stored as jupytext sources (``notebooks/<name>.py``); Binder builds
  ``environment.yml`` and then runs the repository's ``postBuild``, which pairs each source
  with the ``.ipynb`` the button opens. Colab opens only ``.ipynb`` files committed to
  GitHub, which this repository does not keep, so its button stays off (a fork that commits
  executed notebooks can set ``launch_buttons.colab_url`` itself; an explicit setting always
  wins).
- **Downloads.** Every chapter's download menu offers its jupytext source beside the
  executed ``.ipynb``: the sources are copied into the site's ``_sources/``. Both start with
  :data:`INSTALL_CHECK`, a cell that, outside the project, stops with what to install
  instead of a traceback.
- **A quiet console.** No script twice on a page (sphinx-thebe's configuration came twice:
  a ``SyntaxError`` on every page); the theme's colour mode is set (else the theme logs an
  error on a first visit); the Jupyter widget manager finds its fonts (under
  ``_static/html-manager/``, not under the page's folder) and typesets widget labels with
  the book's MathJax 3 (it calls MathJax 2's ``MathJax.Hub``): ``static/sst-widgets.js``,
  loaded just before the manager.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

__all__ = ["BINDERHUB_URL", "INSTALL_CHECK", "REPOSITORY_ENV", "add_source_download",
           "copy_sources", "derive_buttons", "install_check", "quiet_console", "repository_url",
           "setup", "source_of", "with_install_check", "widget_scripts"]

BINDERHUB_URL = "https://mybinder.org"
SOURCES = "notebooks"  # the folder of the jupytext chapters, relative to the book's root
REPOSITORY_ENV = "SST_REPOSITORY_URL"
STATIC = Path(__file__).with_name("static")  # served as _static/ beside the book's own
WIDGET_SHIM = "sst-widgets.js"

# The first cell of every notebook a reader downloads (the executed .ipynb and the
# jupytext .py): {clone} is filled with the repository, where one is set.
INSTALL_CHECK = """\
# This notebook runs inside the sst project, which provides the package sst_core.
import importlib.util

if importlib.util.find_spec("sst_core") is None:
    raise SystemExit("This notebook needs the package sst_core of the sst project. Get the "
                     "project ({clone}), install it (`pip install -e .` in its folder, or "
                     "`conda env create -f environment.yml`) and open the notebook from its "
                     "notebooks/ folder.")
"""


def repository_url(configured: str = "") -> str:
    """The repository's URL: ``$SST_REPOSITORY_URL`` where it is set, else ``configured``
    (``_config.yml``'s ``repository.url``); "" for none."""
    return (os.environ.get(REPOSITORY_ENV, "").strip() or str(configured or "").strip())


def install_check(url: str = "") -> str:
    """The source of :data:`INSTALL_CHECK` for a book whose repository is ``url``."""
    clone = f"git clone {url}" if url else "a clone of its repository"
    return INSTALL_CHECK.format(clone=clone)


def with_install_check(nb, url: str = ""):
    """``nb`` (an nbformat notebook) with :func:`install_check` as its first cell, tagged
    ``remove-cell`` (the site does not show it; a downloaded notebook runs it first)."""
    import nbformat

    cell = nbformat.v4.new_code_cell(install_check(url), metadata={"tags": ["remove-cell"]})
    nb.cells.insert(0, cell)
    return nb


def derive_buttons(theme_options: dict[str, Any]) -> dict[str, Any]:
    """The theme options with the repository-dependent buttons set from the one setting
    ``repository_url``: on where it is set, off where it is empty; an option set explicitly
    to true stays as it is."""
    out = dict(theme_options)
    on = bool(str(out.get("repository_url") or "").strip())
    for key in ("use_repository_button", "use_issues_button"):
        out[key] = on or bool(out.get(key))
    launch = dict(out.get("launch_buttons") or {})
    if on and not launch.get("binderhub_url"):
        launch["binderhub_url"] = BINDERHUB_URL
    elif not on:
        launch["binderhub_url"] = ""
    out["launch_buttons"] = launch
    return out


def widget_scripts(scripts: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    """MyST-NB's ``nb_ipywidgets_js`` (path -> attributes, loaded in order on a page with
    widgets) with :data:`WIDGET_SHIM` just before the widget manager (``embed-amd.js``)."""
    out: dict[str, dict[str, str]] = {}
    for path, attrs in scripts.items():
        if path.endswith("embed-amd.js"):
            out[WIDGET_SHIM] = {}
        out[path] = attrs
    return out


def _config_inited(app, config) -> None:
    options = dict(config.html_theme_options or {})
    options["repository_url"] = repository_url(options.get("repository_url", ""))
    config.html_theme_options = derive_buttons(options)
    config.html_static_path = [*config.html_static_path, str(STATIC)]
    if "nb_ipywidgets_js" in config:  # MyST-NB (always loaded by Jupyter Book)
        config.nb_ipywidgets_js = widget_scripts(dict(config.nb_ipywidgets_js))
    # the theme's colour mode on a first visit ("" makes it log an error)
    config.html_context = {"default_mode": "auto", **(config.html_context or {})}


# What sphinx-book-theme's script looks for on a page with margin or full-width content
# (it hides the secondary sidebar while such content is in view).
WIDE_CONTENT = ("marginnote", "sidenote", "margin", "margin-caption", "full-width", "sidebar",
                "popout")
NO_SIDEBAR = '<div class="bd-sidebar-secondary" style="display: none"></div>'


def quiet_console(app, pagename: str, templatename: str, context: dict[str, Any],
                  doctree) -> None:
    """Each script and style sheet once per page, in its first place: a second copy of an
    inline script that declares a ``const`` (sphinx-thebe's) is a SyntaxError. And a page
    without a secondary sidebar (no sections) but with margin or full-width content gets an
    empty, hidden one: the theme's script assumes it exists there (a TypeError otherwise)."""
    for key in ("script_files", "css_files"):
        if key in context:
            context[key][:] = list(dict.fromkeys(context[key]))
    body = context.get("body", "")
    classes = {c for attr in re.findall(r'class="([^"]*)"', body) for c in attr.split()}
    wide = {w for c in WIDE_CONTENT for w in (c, f"tag_{c}", c.replace("-", "_"))}
    if "secondary_sidebar_items" in context and not context["secondary_sidebar_items"] \
            and classes & wide:
        context["body"] = body + NO_SIDEBAR


def source_of(srcdir: Path, pagename: str) -> Path | None:
    """The jupytext source of a chapter page (``notebooks/<name>``), or None."""
    if not pagename.startswith(f"{SOURCES}/"):
        return None
    path = Path(srcdir) / f"{pagename}.py"
    return path if path.is_file() else None


def add_source_download(app, pagename: str, templatename: str, context: dict[str, Any],
                        doctree) -> None:
    """Add the chapter's jupytext source to its download menu (after the theme's buttons)."""
    if source_of(Path(app.srcdir), pagename) is None:
        return
    for button in context.get("header_buttons", []):
        if button.get("label") == "download-buttons":
            button["buttons"].insert(1, {
                "type": "link", "url": f"{context['pathto']('_sources', 1)}/{pagename}.py",
                "text": ".py", "icon": "fas fa-file-code",
                "tooltip": "Download the jupytext source (open it as a notebook with jupytext)",
                "label": "download-jupytext-button"})


def downloadable_source(path: Path, url: str = "") -> str:
    """The jupytext source at ``path`` as a reader downloads it: :func:`install_check` first."""
    import jupytext

    return jupytext.writes(with_install_check(jupytext.read(path), url), fmt="py:percent")


def copy_sources(app, exception) -> None:
    """Write the jupytext sources, as :func:`downloadable_source`, into the site's
    ``_sources/notebooks/``."""
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir) / "_sources" / SOURCES
    out.mkdir(parents=True, exist_ok=True)
    url = app.config.html_theme_options.get("repository_url", "")
    for path in sorted((Path(app.srcdir) / SOURCES).glob("*.py")):
        (out / path.name).write_text(downloadable_source(path, url))


def setup(app) -> dict[str, Any]:
    app.connect("config-inited", _config_inited)
    # after sphinx-book-theme's header buttons (priority 501)
    app.connect("html-page-context", add_source_download, priority=600)
    # after every extension has added its scripts
    app.connect("html-page-context", quiet_console, priority=900)
    app.connect("build-finished", copy_sources)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
