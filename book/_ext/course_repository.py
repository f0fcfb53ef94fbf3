"""Repository and launch buttons only when the course's repository URL is set.

`repository: url:` in _config.yml is the one place where the address of the course's
repository is written; a course fork fills it in. The repository and issue buttons and
the launch buttons (Binder, Colab) all link into that repository, so while it is empty
(or still Jupyter Book's default) they are switched off here instead of pointing at a
repository that does not exist. The .ipynb entry of the download button, which
sphinx-book-theme only adds together with the launch buttons, is kept either way.

Loaded through `sphinx: local_extensions:` (puts book/_ext on sys.path) and the
`extensions:` list under `sphinx: config:` in _config.yml.
"""
from __future__ import annotations

from pathlib import Path
from shutil import copy2

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


def repository_url(config) -> str:
    """The repository URL of _config.yml, or "" when it is not set."""
    url = str(config.html_theme_options.get("repository_url") or "").strip().rstrip("/")
    return "" if url in UNSET else url


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
    """Offer the executed chapter as .ipynb, as the theme does when launch buttons are on."""
    if repository_url(app.config) or doctree is None:
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


def setup(app):
    # After sphinx-book-theme's own config-inited handler, before its buttons are made.
    app.connect("config-inited", switch_off_without_repository, priority=900)
    # The theme builds the download button at priority 501 from context["ipynb_source"].
    app.connect("html-page-context", keep_notebook_download, priority=499)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
