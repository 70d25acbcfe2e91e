"""The book's Sphinx extension (sst_core.book.site): one key for the repository and its
buttons, the jupytext source in every chapter's download menu; on constructed options and
on a one-chapter book built with and without the key."""
from __future__ import annotations

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


def tiny_book(root: Path, url: str) -> Path:
    """A book of one jupytext chapter (paired .ipynb), built strictly; its chapter page."""
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
    done = subprocess.run([str(exe), "build", str(root), "-W", "-n", "--keep-going"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return root / "_build" / "html" / "notebooks" / "ch.html"


def test_a_built_chapter_has_the_buttons_only_with_the_key(tmp_path):
    """With the repository key (as a temporary config sets it): the Binder link to the
    paired notebook and the repository button; without it (the committed default) neither.
    Both: the .py in the download menu, and the file it points to."""
    with_key = tiny_book(tmp_path / "with", REPO).read_text()
    assert ('href="https://mybinder.org/v2/gh/example-owner/example-repo/main'
            '?urlpath=tree/notebooks/ch.ipynb"') in with_key
    assert f'href="{REPO}"' in with_key
    without = tiny_book(tmp_path / "without", "").read_text()
    assert "mybinder.org" not in without and "example-owner" not in without
    for root, page in ((tmp_path / "with", with_key), (tmp_path / "without", without)):
        assert 'href="../_sources/notebooks/ch.py"' in page
        copied = root / "_build" / "html" / "_sources" / "notebooks" / "ch.py"
        assert copied.read_text() == (root / "notebooks" / "ch.py").read_text()


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
