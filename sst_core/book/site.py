"""What a reader of the built book expects beyond Jupyter Book's own settings: a Sphinx
extension, named in ``_config.yml`` (``sphinx: extra_extensions``).

- **One key for the repository.** ``repository.url`` in ``_config.yml`` (empty by default)
  turns on, when set, the repository and issues buttons and the Binder launch button of
  every chapter; empty, none of them appears. The chapters are stored as jupytext sources
  (``notebooks/<name>.py``); Binder builds ``environment.yml`` and then runs the
  repository's ``postBuild``, which pairs each source with the ``.ipynb`` the button opens.
  Colab opens only ``.ipynb`` files committed to GitHub, which this repository does not
  keep, so its button stays off (a fork that commits executed notebooks can set
  ``launch_buttons.colab_url`` itself; an explicit setting always wins).
- **Downloads.** Every chapter's download menu offers its jupytext source beside the
  executed ``.ipynb``: the sources are copied into the site's ``_sources/``.
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

__all__ = ["BINDERHUB_URL", "add_source_download", "copy_sources", "derive_buttons", "setup",
           "source_of"]

BINDERHUB_URL = "https://mybinder.org"
SOURCES = "notebooks"  # the folder of the jupytext chapters, relative to the book's root


def derive_buttons(theme_options: dict[str, Any]) -> dict[str, Any]:
    """The theme options with the repository-dependent buttons set from the one key
    ``repository_url`` (``_config.yml``'s ``repository.url``): on where it is set, off where
    it is empty; an option set explicitly to true stays as it is."""
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


def _config_inited(app, config) -> None:
    config.html_theme_options = derive_buttons(config.html_theme_options or {})


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


def copy_sources(app, exception) -> None:
    """Copy the jupytext sources into the site's ``_sources/notebooks/``."""
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir) / "_sources" / SOURCES
    out.mkdir(parents=True, exist_ok=True)
    for path in sorted((Path(app.srcdir) / SOURCES).glob("*.py")):
        shutil.copyfile(path, out / path.name)


def setup(app) -> dict[str, Any]:
    app.connect("config-inited", _config_inited)
    # after sphinx-book-theme's header buttons (priority 501)
    app.connect("html-page-context", add_source_download, priority=600)
    app.connect("build-finished", copy_sources)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
