"""The book's Sphinx extension (sst_core.book.site): one setting for the repository and its
buttons, the jupytext source in every chapter's download menu, the install check that
downloads start with, a quiet console; on constructed options and on a one-chapter book
built with and without the setting."""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from sst_core.book import site

REPO = "https://github.com/example-owner/example-repo"


def test_one_key_turns_the_repository_buttons_on_and_off():
    on = site.derive_buttons({"repository_url": REPO, "launch_buttons": {"thebe": False}})
    assert on["use_repository_button"] and on["use_issues_button"]
    assert on["launch_buttons"] == {"thebe": False, "binderhub_url": site.BINDERHUB_URL}
    assert "colab_url" not in on["launch_buttons"]  # Colab needs committed .ipynb files
    for empty in ({}, {"repository_url": ""}, {"repository_url": "  "}):
        off = site.derive_buttons(empty)
        assert not off["use_repository_button"] and not off["use_issues_button"]
        assert off["launch_buttons"]["binderhub_url"] == ""
    kept = site.derive_buttons({"repository_url": REPO,
                                "launch_buttons": {"binderhub_url": "https://hub.example"}})
    assert kept["launch_buttons"]["binderhub_url"] == "https://hub.example"


def test_the_environment_variable_is_the_one_setting(monkeypatch):
    monkeypatch.delenv(site.REPOSITORY_ENV, raising=False)
    assert site.repository_url("") == ""
    assert site.repository_url(f" {REPO} ") == REPO
    monkeypatch.setenv(site.REPOSITORY_ENV, "https://github.com/other/fork")
    assert site.repository_url(REPO) == "https://github.com/other/fork"  # the variable wins
    monkeypatch.setenv(site.REPOSITORY_ENV, " ")
    assert site.repository_url(REPO) == REPO


def test_the_config_gets_buttons_static_files_and_a_colour_mode(monkeypatch):
    """What the extension sets when Sphinx has read the configuration (config-inited)."""
    class Config(dict):
        __getattr__, __setattr__ = dict.__getitem__, dict.__setitem__

    def inited(**extra):
        config = Config({"html_theme_options": {"repository_url": "", "launch_buttons": {}},
                         "html_static_path": ["_vendor"], "html_context": {},
                         "nb_ipywidgets_js": {"require.js": {},
                                              "html-manager/embed-amd.js": {"a": "b"}},
                         **extra})
        site._config_inited(None, config)
        return config

    monkeypatch.setenv(site.REPOSITORY_ENV, REPO)
    config = inited()
    assert config.html_theme_options["repository_url"] == REPO
    assert config.html_theme_options["use_repository_button"]
    assert config.html_theme_options["launch_buttons"]["binderhub_url"] == site.BINDERHUB_URL
    assert config.html_static_path == ["_vendor", str(site.STATIC)]
    assert (site.STATIC / site.WIDGET_SHIM).is_file()
    assert list(config.nb_ipywidgets_js) == ["require.js", site.WIDGET_SHIM,
                                             "html-manager/embed-amd.js"]
    assert config.html_context == {"default_mode": "auto"}
    monkeypatch.delenv(site.REPOSITORY_ENV)
    assert not inited().html_theme_options["use_repository_button"]
    assert inited(html_context={"default_mode": "dark"}).html_context["default_mode"] == "dark"


def test_each_script_appears_once_in_its_first_place():
    from sphinx.builders.html._assets import _JavaScript

    thebe = _JavaScript(None, body="const THEBE_JS_URL = 1")
    scripts = [_JavaScript("a.js"), thebe, _JavaScript("b.js"),
               _JavaScript("", body="const THEBE_JS_URL = 1", priority=400)]
    context = {"script_files": scripts, "css_files": []}
    site.quiet_console(None, "p", "page.html", context, None)
    assert context["script_files"] is scripts  # the page's own list, changed in place
    assert [js.filename for js in scripts] == ["a.js", None, "b.js"]
    assert scripts[1] is thebe


def test_a_page_without_sections_but_with_wide_content_gets_a_hidden_sidebar():
    def page(body, items):
        context = {"body": body, "secondary_sidebar_items": items}
        site.quiet_console(None, "p", "page.html", context, None)
        return context["body"]

    wide = '<div class="cell tag_full-width docutils container">x</div>'
    assert page(wide, []) == wide + site.NO_SIDEBAR
    assert page(wide, ["page-toc"]) == wide  # the theme's sidebar is there
    plain = '<div class="cell docutils container">full-width</div>'  # a word, not a class
    assert page(plain, []) == plain


def without_sst_core(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "sst_core" else real(name, *a))


def test_the_install_check_says_what_to_install(monkeypatch):
    source = site.install_check(REPO)
    exec(compile(source, "cell", "exec"), {})  # sst_core is here: nothing happens
    without_sst_core(monkeypatch)
    for url, clone in ((REPO, f"git clone {REPO}"), ("", "a clone of its repository")):
        try:
            exec(compile(site.install_check(url), "cell", "exec"), {})
        except SystemExit as stop:
            message = str(stop)
        else:
            raise AssertionError("the check did not stop without sst_core")
        assert clone in message and "pip install -e ." in message and "environment.yml" in message


def test_a_downloaded_notebook_stops_at_its_first_cell_with_the_message(tmp_path):
    """In a kernel without sst_core (find_spec patched by a cell run before it), the check
    is an error output that holds the message and no traceback, and nothing after it runs."""
    import nbclient
    import nbformat

    nb = site.with_install_check(nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("print('after the check')")]), REPO)
    assert nb.cells[0].metadata["tags"] == ["remove-cell"]
    nb.cells.insert(0, nbformat.v4.new_code_cell(
        "import importlib.util as u\nreal = u.find_spec\n"
        "u.find_spec = lambda n, *a: None if n == 'sst_core' else real(n, *a)"))
    client = nbclient.NotebookClient(nb, kernel_name="python3", allow_errors=False,
                                     resources={"metadata": {"path": str(tmp_path)}})
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError:
        pass
    else:
        raise AssertionError("the notebook ran past the check")
    (error,) = [o for o in nb.cells[1].outputs if o.output_type == "error"]
    assert error.ename == "SystemExit" and f"git clone {REPO}" in error.evalue
    assert not any("File " in line or "Traceback" in line for line in error.traceback)
    assert not nb.cells[2].get("outputs")


def test_the_download_menu_gains_the_jupytext_source(tmp_path):
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "ch.py").write_text("# %%\nprint(1)\n")

    class App:
        srcdir = tmp_path

    def menu():
        return [{"label": "download-buttons", "buttons": [{"label": "download-source-button"},
                                                          {"label": "download-pdf-button"}]}]

    context = {"header_buttons": menu(), "pathto": lambda what, rel: f"../{what}"}
    site.add_source_download(App, "notebooks/ch", "page.html", context, None)
    labels = [b["label"] for b in context["header_buttons"][0]["buttons"]]
    assert labels == ["download-source-button", "download-jupytext-button", "download-pdf-button"]
    assert context["header_buttons"][0]["buttons"][1]["url"] == "../_sources/notebooks/ch.py"
    for page in ("notebooks/missing", "book/intro"):  # no jupytext source: unchanged
        context = {"header_buttons": menu(), "pathto": lambda what, rel: f"../{what}"}
        site.add_source_download(App, page, "page.html", context, None)
        assert len(context["header_buttons"][0]["buttons"]) == 2


def tiny_book(root: Path, url: str, env_url: str | None = None) -> Path:
    """A book of one jupytext chapter (paired .ipynb), built strictly, with ``url`` as its
    ``repository.url`` and ``env_url`` (None: unset) as ``$SST_REPOSITORY_URL``; its
    chapter page."""
    (root / "notebooks").mkdir(parents=True)
    src = root / "notebooks" / "ch.py"
    src.write_text("# %% [markdown]\n# # A chapter\n\n# %%\nprint(1 + 1)\n")
    jupytext = Path(sys.executable).with_name("jupytext")
    subprocess.run([str(jupytext), "--to", "ipynb", "--set-kernel", "python3", "-q", str(src)],
                   check=True, capture_output=True)
    (root / "intro.md").write_text("# Intro\n")
    (root / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n"
                                   "  - file: notebooks/ch\n")
    config = yaml.safe_load((Path(__file__).parents[1] / "_config.yml").read_text())
    config = {"title": "t", "only_build_toc_files": True, "execute": config["execute"],
              "repository": dict(config["repository"], url=url),
              "launch_buttons": config["launch_buttons"],
              "sphinx": {"extra_extensions": config["sphinx"]["extra_extensions"]}}
    (root / "_config.yml").write_text(yaml.safe_dump(config))
    exe = Path(sys.executable).with_name("jupyter-book")
    env = {k: v for k, v in os.environ.items() if k != site.REPOSITORY_ENV}
    if env_url is not None:
        env[site.REPOSITORY_ENV] = env_url
    done = subprocess.run([str(exe), "build", str(root), "-W", "-n", "--keep-going"],
                          capture_output=True, text=True, check=False, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return root / "_build" / "html" / "notebooks" / "ch.html"


def test_a_built_chapter_has_the_buttons_only_with_the_setting(tmp_path):
    """With the repository setting ($SST_REPOSITORY_URL, the committed config's key empty):
    the Binder link to the paired notebook, the repository and issues buttons; without it
    (the committed default) none. Both: the .py in the download menu, and the file it points
    to: the source with the install check first."""
    import jupytext

    with_key = tiny_book(tmp_path / "with", "", env_url=REPO).read_text()
    assert ('href="https://mybinder.org/v2/gh/example-owner/example-repo/main'
            '?urlpath=tree/notebooks/ch.ipynb"') in with_key
    assert f'href="{REPO}"' in with_key
    assert f'href="{REPO}/issues/new?title=Issue%20on%20page%20' in with_key
    without = tiny_book(tmp_path / "without", "").read_text()
    assert "mybinder.org" not in without and "example-owner" not in without
    for root, page in ((tmp_path / "with", with_key), (tmp_path / "without", without)):
        assert 'href="../_sources/notebooks/ch.py"' in page
        assert page.count("const THEBE_JS_URL") == 1  # twice: a SyntaxError
        assert f'href="../_static/{site.STYLE}' in page
        assert (root / "_build" / "html" / "_static" / site.STYLE).is_file()
        copied = jupytext.read(root / "_build" / "html" / "_sources" / "notebooks" / "ch.py")
        source = jupytext.read(root / "notebooks" / "ch.py")
        url = REPO if page is with_key else ""
        assert copied.cells[0].source == site.install_check(url).strip()
        assert [c.source for c in copied.cells[1:]] == [c.source for c in source.cells]


def test_binder_post_build_pairs_every_chapter(tmp_path):
    """The repository's postBuild (what Binder runs) writes notebooks/<name>.ipynb for each
    jupytext chapter, which the launch button opens."""
    root = Path(__file__).parents[1]
    shutil.copytree(root / "notebooks", tmp_path / "notebooks",
                    ignore=shutil.ignore_patterns("*.ipynb", "__pycache__"))
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
    subprocess.run(["bash", str(root / "postBuild")], cwd=tmp_path, env=env, check=True,
                   capture_output=True)
    chapters = sorted(p.stem for p in (tmp_path / "notebooks").glob("*.py"))
    assert chapters and sorted(p.stem for p in (tmp_path / "notebooks").glob("*.ipynb")) == chapters


def test_every_module_the_notation_page_names_exists():
    """The notation page's module column (modules of ``sst_core``, without the prefix) names
    modules a reader can import."""
    import importlib
    import re

    text = (Path(__file__).resolve().parents[1] / "book" / "notation.md").read_text()
    modules, in_table = set(), False
    for line in text.splitlines():
        if line.startswith("| symbol | meaning | code | module |"):
            in_table = True
        elif not line.startswith("|"):
            in_table = False
        elif in_table and not line.startswith("|---"):
            modules.update(re.findall(r"`([a-z_.0-9]+)`", line.rstrip(" |").split(" | ")[-1]))
    assert len(modules) >= 10, modules
    for name in sorted(modules):
        importlib.import_module(f"sst_core.{name}")
