"""Repository and launch buttons only when the course's repository URL is set.

`repository: url:` in _config.yml is the one place where the address of the course's
repository is written; a course fork fills it in. The repository and issue buttons and
the launch buttons (Binder, Colab) all link into that repository, so while it is empty
(or still Jupyter Book's default) they are switched off here instead of pointing at a
repository that does not exist. The .ipynb entry of the download button, which
sphinx-book-theme only adds together with the launch buttons, is kept either way.

At publish time the workflow sets the address instead (.github/workflows/pages.yml): the environment
variable NLPCOURSE_REPOSITORY wins over _config.yml, and NLPCOURSE_REVISION names the commit. With a
repository, the Colab and Binder buttons open the chapter's notebook on the branch `launch`, which
scripts/launch_notebooks.py writes (Colab cannot open the MyST .md the theme would link to). Every page
records the address in a <meta name="nlpcourse:repository"> tag, which tests/test_site.py reads.

Loaded through `sphinx: local_extensions:` (puts book/_ext on sys.path) and the
`extensions:` list under `sphinx: config:` in _config.yml.
"""
from __future__ import annotations

import os
from html import escape
from pathlib import Path
from shutil import copy2
from urllib.parse import quote

from sphinx.util import logging

LOGGER = logging.getLogger(__name__)

# Jupyter Book's default `repository: url:`, used when the key is missing altogether.
UNSET = {"", "https://github.com/executablebooks/jupyter-book"}
REPOSITORY_BUTTONS = (
    "use_repository_button",
    "use_issues_button",
    "use_edit_page_button",
    "use_source_button",
)
LAUNCH_URLS = ("binderhub_url", "jupyterhub_url", "colab_url", "deepnote_url", "jupyterlite_url")
ENV_REPOSITORY = "NLPCOURSE_REPOSITORY"
ENV_REVISION = "NLPCOURSE_REVISION"
#: The branch that holds the notebooks the launch buttons open (scripts/launch_notebooks.py).
LAUNCH_BRANCH = "launch"
UI_PREFIXES = {"classic": "tree", "jupyterlab": "lab/tree"}


def repository_url(config) -> str:
    """The repository URL (from $NLPCOURSE_REPOSITORY or _config.yml), or "" when it is not set."""
    url = str(config.html_theme_options.get("repository_url") or "").strip().rstrip("/")
    return "" if url in UNSET else url


def launch_urls(repository: str, docname: str, colab_url: str = "", binderhub_url: str = "",
                interface: str = "jupyterlab") -> dict[str, str]:
    """The Colab and Binder addresses of page ``docname``'s notebook on the launch branch:
    {"Colab": ..., "Binder": ...}, each only where its service is configured (Colab only for GitHub)."""
    repository = repository.rstrip("/").removesuffix(".git")
    notebook = f"{docname}.ipynb"
    urls = {}
    github = repository.startswith("https://github.com/")
    path = repository.removeprefix("https://github.com/")  # ORG/REPO on GitHub
    if colab_url and github:
        urls["Colab"] = f"{colab_url.rstrip('/')}/github/{path}/blob/{LAUNCH_BRANCH}/{notebook}"
    if binderhub_url:
        where = f"gh/{path}" if github else f"git/{quote(repository, safe='')}"  # Binder's own scheme for others
        ui = UI_PREFIXES.get(interface, "tree")
        urls["Binder"] = f"{binderhub_url.rstrip('/')}/v2/{where}/{LAUNCH_BRANCH}?urlpath={ui}/{notebook}"
    return urls


def use_environment(app, config) -> None:
    """$NLPCOURSE_REPOSITORY, when set, is the repository (it wins over _config.yml); $NLPCOURSE_REVISION goes
    into html_context, so that a build for another commit rewrites every page."""
    config.html_context["nlpcourse_revision"] = os.environ.get(ENV_REVISION, "").strip()
    url = os.environ.get(ENV_REPOSITORY, "").strip().rstrip("/")
    if url:
        config.html_theme_options["repository_url"] = url
        LOGGER.info(f"course_repository: repository {url} (from ${ENV_REPOSITORY})")


def switch_off_without_repository(app, config) -> None:
    options = config.html_theme_options
    if repository_url(config):
        return
    options["repository_url"] = ""
    for key in REPOSITORY_BUTTONS:
        options[key] = False
    launch = dict(options.get("launch_buttons") or {})
    for key in LAUNCH_URLS:
        launch[key] = ""
    launch["thebe"] = False
    options["launch_buttons"] = launch
    LOGGER.info(
        "course_repository: no `repository: url:` in _config.yml; "
        "repository and launch buttons are off"
    )


def keep_notebook_download(app, pagename, templatename, context, doctree) -> None:
    """Offer the executed chapter as .ipynb, as the theme does when launch buttons are on (and whatever
    they are: the theme makes no download without a launch service)."""
    if doctree is None:
        return
    if "kernelspec" not in app.env.metadata.get(pagename, {}):
        return
    executed = Path(app.outdir).parent / "jupyter_execute" / f"{pagename}.ipynb"
    if not executed.is_file():
        return
    target = Path(app.outdir) / "_sources" / f"{pagename}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    copy2(executed, target)
    context["ipynb_source"] = f"{pagename}.ipynb"


def point_launch_buttons_at_notebooks(app, pagename, templatename, context, doctree) -> None:
    """Colab and Binder open the page's notebook on the launch branch, not the .md the theme links to."""
    repository = repository_url(app.config)
    if not repository:
        return
    launch = app.config.html_theme_options.get("launch_buttons") or {}
    urls = launch_urls(repository, pagename, launch.get("colab_url", ""), launch.get("binderhub_url", ""),
                       launch.get("notebook_interface", "jupyterlab"))
    for group in context.get("header_buttons") or []:
        if group.get("label") != "launch-buttons":
            continue
        for button in group.get("buttons", []):
            if button.get("text") in urls:
                button["url"] = urls[button["text"]]


def record_repository(app, pagename, templatename, context, doctree) -> None:
    """The repository (and revision) the page was built for, in a meta tag: what tests/test_site.py checks."""
    repository = repository_url(app.config)
    revision = app.config.html_context.get("nlpcourse_revision", "")
    tags = f'<meta name="nlpcourse:repository" content="{escape(repository)}" />\n'
    if revision:
        tags += f'<meta name="nlpcourse:revision" content="{escape(revision)}" />\n'
    context["metatags"] = context.get("metatags", "") + tags


def setup(app):
    # Before switch_off_without_repository: the environment's address counts as a repository.
    app.connect("config-inited", use_environment, priority=899)
    # After sphinx-book-theme's own config-inited handler, before its buttons are made.
    app.connect("config-inited", switch_off_without_repository, priority=900)
    # The theme builds the download button at priority 501 from context["ipynb_source"].
    app.connect("html-page-context", keep_notebook_download, priority=499)
    # The theme builds the launch buttons at priority 501; this rewrites their addresses after.
    app.connect("html-page-context", point_launch_buttons_at_notebooks, priority=502)
    app.connect("html-page-context", record_repository, priority=502)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
