"""Browser test of the built website (_build/html), fully offline.

Serves _build/html on 127.0.0.1 and opens every page in Debian's Chromium through
Playwright (the session's `browser`, tests/conftest.py). Every request that does not go
to the local server is aborted and reported, so a pass proves the site needs no network: math is typeset by the
vendored MathJax, widgets are rendered by the vendored ipywidgets HTML manager, and
every image, script, style sheet and font comes from the site itself.

Needs the site built first (``make book``, or ``jupyter-book build .``). Without it
the tests skip, unless NLPCOURSE_REQUIRE_SITE=1 (then they fail). Without
/usr/bin/chromium or the playwright package they skip, unless CI is set. Playwright's
own browser download is never used.
"""
from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from contextlib import contextmanager
from html import unescape
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest
from test_teaching import MIN_FIGURES, TEACHING

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "_build" / "html"
HOST = "127.0.0.1"
TIMEOUT_MS = 60_000  # a guard against a hang, not a speed test: the CI's two cores are busy beside it
IDLE_MS = 10_000  # how long a page that has done everything may take to go "network idle" (see _check_page)

# Console messages of type "error" that are not a fault of the site. Each entry is a
# regular expression matched against the message text; keep it empty if possible.
ALLOWED_CONSOLE_ERRORS: list[str] = []

# Searches on search.html: (query, page that must be among the results).
SEARCHES = [
    ("backpropagation", "book/building_blocks.html"),
    ("Colab", "book/intro.html"),
    ("max-over-time", "book/cnn.html"),
]

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
SKIPPED_PAGES = {"genindex.html", "search.html", "py-modindex.html"}
SKIPPED_DIRS = {"_static", "_sources", "_images", "_downloads"}

pytestmark = pytest.mark.site


def _pages() -> list[str]:
    """Every HTML page of the site, relative to its root, as POSIX paths."""
    if not SITE.is_dir():
        return []
    pages = []
    for path in sorted(SITE.rglob("*.html")):
        rel = path.relative_to(SITE)
        if rel.parts[0] in SKIPPED_DIRS or rel.as_posix() in SKIPPED_PAGES:
            continue
        pages.append(rel.as_posix())
    return pages


# When the site is missing, one placeholder keeps the parametrized test, so that it
# reports the skip (or, in CI, the failure) instead of vanishing.
PAGES = _pages() or ["index.html"]


def _require_env(name: str) -> bool:
    return os.environ.get(name, "").strip() not in ("", "0", "false", "no")


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def site_root() -> Path:
    if not (SITE / "index.html").is_file():
        message = (
            f"the website is not built: {SITE / 'index.html'} is missing "
            "(run `make book` or `jupyter-book build .` first)"
        )
        if _require_env("NLPCOURSE_REQUIRE_SITE"):
            pytest.fail(message + "; NLPCOURSE_REQUIRE_SITE=1 requires it")
        pytest.skip(message)
    return SITE


@contextmanager
def _serve(folder: Path):
    """``folder`` served on the loopback address while the block runs; yields its URL."""
    class QuietHandler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # keep pytest output clean
            pass

    handler = functools.partial(QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer((HOST, 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://{HOST}:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def base_url(site_root: Path):
    with _serve(site_root) as url:
        yield url


class PageRecorder:
    """Opens one page offline and records everything that went wrong while loading it."""

    def __init__(self, browser, base_url: str):
        self.origin = urlsplit(base_url).netloc
        self.context = browser.new_context(service_workers="block")
        self.context.set_default_timeout(TIMEOUT_MS)
        self.external: list[str] = []
        self.failed: list[str] = []
        self.bad_status: list[str] = []
        self.console_errors: list[str] = []
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.in_flight: dict[object, str] = {}  # requests sent and not finished: what a page that never idles waits on
        self.page.on("request", lambda r: self.in_flight.__setitem__(r, r.url))
        self.page.on("requestfinished", lambda r: self.in_flight.pop(r, None))
        self.page.on("requestfailed", lambda r: self.in_flight.pop(r, None))
        self.page.on("requestfailed", self._on_failed)
        self.page.on("response", self._on_response)
        self.page.on("console", self._on_console)
        self.page.on("pageerror", lambda exc: self.console_errors.append(f"uncaught: {exc}"))

    def _local(self, url: str) -> bool:
        parts = urlsplit(url)
        if parts.scheme in ("data", "blob", "about"):
            return True
        return parts.scheme in ("http", "https") and parts.netloc == self.origin

    def _route(self, route):
        url = route.request.url
        if self._local(url):
            route.continue_()
        else:
            self.external.append(url)
            route.abort("blockedbyclient")

    def _on_failed(self, request):
        if self._local(request.url):
            self.failed.append(f"{request.url} ({request.failure})")

    def _on_response(self, response):
        if response.status >= 400 and self._local(response.url):
            self.bad_status.append(f"{response.url} (HTTP {response.status})")

    def _on_console(self, message):
        if message.type != "error":
            return
        text = message.text
        if any(re.search(pattern, text) for pattern in ALLOWED_CONSOLE_ERRORS):
            return
        location = message.location or {}
        self.console_errors.append(f"{text} [{location.get('url', '')}:{location.get('lineNumber', '')}]")

    def problems(self) -> list[str]:
        out = []
        out += [f"request to the network (blocked): {u}" for u in self.external]
        out += [f"request failed: {u}" for u in self.failed]
        out += [f"bad status: {u}" for u in self.bad_status]
        out += [f"console error: {e}" for e in self.console_errors]
        return out

    def close(self):
        self.context.close()


@pytest.fixture
def recorder(browser, base_url):
    rec = PageRecorder(browser, base_url)
    try:
        yield rec
    finally:
        rec.close()


# --------------------------------------------------------------------------- helpers

# Resources a page loads by itself: <script src>, and <link href> except plain links.
_SCRIPT_SRC = re.compile(r"<script\b[^>]*\bsrc\s*=\s*[\"']([^\"']+)[\"']", re.I)
_LINK_TAG = re.compile(r"<link\b[^>]*>", re.I)
_HREF = re.compile(r"\bhref\s*=\s*[\"']([^\"']+)[\"']", re.I)
_REL = re.compile(r"\brel\s*=\s*[\"']([^\"']+)[\"']", re.I)
_NAVIGATION_RELS = {"canonical", "index", "search", "next", "prev", "author", "license", "alternate"}
_META_REFRESH = re.compile(
    r"<meta\s+http-equiv=[\"']refresh[\"']\s+content=[\"'][^\"']*url=([^\"']+)[\"']", re.I
)


def _loaded_resource_urls(html: str) -> list[str]:
    urls = _SCRIPT_SRC.findall(html)
    for tag in _LINK_TAG.findall(html):
        href = _HREF.search(tag)
        rel = _REL.search(tag)
        rels = set(rel.group(1).lower().split()) if rel else set()
        if href and (not rels or not rels <= _NAVIGATION_RELS):
            urls.append(href.group(1))
    return urls


def _open(recorder: PageRecorder, base_url: str, page_path: str, html: str):
    page = recorder.page
    page.goto(base_url + quote(page_path), wait_until="load")
    redirect = _META_REFRESH.search(html)
    if redirect:  # e.g. index.html -> book/intro.html
        target = redirect.group(1).strip()
        page.wait_for_url(re.compile(re.escape(target.split("#")[0]) + r"(#.*)?$"))
        page.wait_for_load_state("load")
    return page


# --------------------------------------------------------------------------- tests


def test_site_has_pages(site_root):
    pages = _pages()
    assert pages, f"no HTML pages found under {site_root}"
    assert any(p.startswith("book/") for p in pages), pages


@pytest.mark.parametrize("page_path", PAGES)
def test_page_references_no_network_resource(site_root, page_path):
    """Static check of the HTML: every script, style sheet, font or icon it loads is local."""
    html = (site_root / page_path).read_text(encoding="utf-8")
    remote = [u for u in _loaded_resource_urls(html) if re.match(r"^(https?:)?//", u)]
    assert not remote, f"{page_path} loads resources from the network: {remote}"
    # Jupyter Book adds every .js under a top-level _static/ folder to every page; if
    # the vendored MathJax ended up there, pages would load dozens of MathJax files.
    mathjax_scripts = re.findall(r"<script\b[^>]*\bsrc=[\"'][^\"']*/js/mathjax/", html)
    assert len(mathjax_scripts) <= 1, f"{page_path} loads {len(mathjax_scripts)} MathJax scripts"


# A normal laptop screen: both sidebars shown, the narrowest text column of the layout.
LAPTOP = {"width": 1280, "height": 800}


@pytest.mark.parametrize("page_path", PAGES)
def test_page_renders_offline_and_cuts_no_code(site_root, base_url, recorder, page_path):
    """The page, loaded once at laptop width: math, widgets and images render offline (_check_page), and no
    code is cut (_check_code_fits)."""
    html = (site_root / page_path).read_text(encoding="utf-8")
    recorder.page.set_viewport_size(LAPTOP)
    try:
        _check_page(recorder, base_url, page_path, html)
        _check_code_fits(recorder.page, page_path)
    except Exception as exc:
        # A wait that timed out usually has its cause among the recorded problems.
        problems = recorder.problems()
        if problems:
            raise AssertionError(
                f"{exc}\n{page_path}, while loading:\n  " + "\n  ".join(problems)
            ) from exc
        raise
    problems = recorder.problems()
    assert not problems, f"{page_path}:\n  " + "\n  ".join(problems)


def _check_page(recorder: PageRecorder, base_url: str, page_path: str, html: str) -> None:
    page = _open(recorder, base_url, page_path, html)

    # Math: every .math element (Sphinx wraps all math, MyST $...$ and notebook
    # LaTeX outputs alike, in one) typeset by MathJax, with no TeX error.
    has_math = page.evaluate("() => document.querySelectorAll('.math').length > 0")
    if has_math:
        page.wait_for_function(
            "() => window.MathJax && MathJax.startup && MathJax.startup.promise",
            timeout=TIMEOUT_MS,
        )
        page.evaluate("() => MathJax.startup.promise")
        state = page.evaluate(
            """() => ({
                containers: document.querySelectorAll('mjx-container').length,
                untypeset: Array.from(document.querySelectorAll('.math'))
                    .filter(e => !e.querySelector('mjx-container'))
                    .map(e => e.textContent.slice(0, 80)),
                errors: Array.from(document.querySelectorAll('mjx-merror'))
                    .map(e => e.getAttribute('data-mjx-error') || e.textContent),
            })"""
        )
        assert state["containers"] > 0, f"{page_path}: MathJax rendered no math"
        assert not state["untypeset"], f"{page_path}: math left untypeset: {state['untypeset']}"
        assert not state["errors"], f"{page_path}: MathJax errors: {state['errors']}"

    # Widgets: one rendered widget per widget view in the page.
    if WIDGET_VIEW in html:
        views = page.evaluate(
            f"() => document.querySelectorAll('script[type=\"{WIDGET_VIEW}\"]').length"
        )
        page.wait_for_selector(".jupyter-widgets", state="visible", timeout=TIMEOUT_MS)
        page.wait_for_function(
            "n => document.querySelectorAll('.widget-subarea > .jupyter-widgets').length >= n",
            arg=views,
            timeout=TIMEOUT_MS,
        )
        broken = page.evaluate(
            "() => Array.from(document.querySelectorAll('.jupyter-widgets-error-widget'))"
            ".map(e => e.parentElement.textContent.slice(0, 200))"
        )
        assert not broken, f"{page_path}: widgets failed to render: {broken}"

    # Images: every <img> loaded (also those the browser would load lazily).
    page.evaluate("() => document.querySelectorAll('img').forEach(i => { i.loading = 'eager'; })")
    page.wait_for_function(
        "() => Array.from(document.images).every(i => i.complete)", timeout=TIMEOUT_MS
    )
    broken_images = page.evaluate(
        "() => Array.from(document.images).filter(i => i.naturalWidth === 0)"
        ".map(i => i.getAttribute('src'))"
    )
    assert not broken_images, f"{page_path}: images that did not load: {broken_images}"
    _check_figures(page, page_path)

    # Let late requests (fonts, lazily loaded MathJax parts) finish before the report. Some pages (a different
    # few on each run, each passing alone) never reach Playwright's "networkidle" although the page has no
    # request open (recorder.in_flight is empty), with every check above passed: wait IDLE_MS for it, then
    # judge the page on what it did, printing what was still open.
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError  # the browser fixture has it

    try:
        page.wait_for_load_state("networkidle", timeout=IDLE_MS)
    except PlaywrightTimeoutError:
        print(f"{page_path}: not idle after {IDLE_MS} ms; open: {sorted(set(recorder.in_flight.values()))}")


def _check_figures(page, page_path: str) -> None:
    """Every figure shows a loaded image with alt text and a caption; a chapter that follows the teaching
    pattern (tests/test_teaching.py's TEACHING) shows at least MIN_FIGURES of them."""
    figures = page.evaluate(
        """() => Array.from(document.querySelectorAll('figure')).map(f => {
            const img = f.querySelector('img'), cap = f.querySelector('figcaption');
            return {id: f.id, alt: img ? (img.getAttribute('alt') || '') : '',
                    loaded: !!img && img.naturalWidth > 0, caption: cap ? cap.textContent.trim() : ''};
        })"""
    )
    bad = [f for f in figures
           if not f["loaded"] or len(f["alt"].split()) < 5 or f["alt"].startswith(("../", "_images"))
           or not f["caption"]]
    assert not bad, f"{page_path}: figures without a loaded image, alt text or caption: {bad}"
    chapter = page_path.removeprefix("book/").removesuffix(".html")
    if chapter in TEACHING:
        assert len(figures) >= MIN_FIGURES, f"{page_path} shows {len(figures)} figures"


@pytest.mark.parametrize(("query", "expected"), SEARCHES, ids=[q for q, _ in SEARCHES])
def test_search_finds_page(site_root, base_url, recorder, query, expected):
    if not (site_root / expected).is_file():
        pytest.fail(f"{expected} is not in the built site")
    page = recorder.page
    page.goto(f"{base_url}search.html?q={quote(query)}", wait_until="load")
    link = page.locator(f"#search-results a[href*='{expected}']")
    link.first.wait_for(state="attached", timeout=TIMEOUT_MS)
    assert link.count() >= 1
    problems = recorder.problems()
    assert not problems, f"search.html?q={query}:\n  " + "\n  ".join(problems)


def _check_code_fits(page, page_path: str) -> None:
    """Code cells fit their box at laptop width; any other wide block scrolls, never cuts.

    Chapter code is at most 88 characters a line (tests/test_chapters.py) and
    book/_static/course.css sizes the code font so that 88 fit; outputs may be wider
    and must then get a horizontal scroll bar (overflow-x auto or scroll).
    """
    blocks = page.evaluate(
        """() => Array.from(document.querySelectorAll('.bd-article pre')).map(pre => {
            const style = getComputedStyle(pre);
            const cell = pre.closest('div.cell_input, div.cell_output');
            const source = cell ? cell.classList.contains('cell_input') :
                !pre.closest('.output');
            return {
                source: source,
                in_cell: cell !== null,
                scroll: pre.scrollWidth,
                client: pre.clientWidth,
                overflow: style.overflowX,
                visible: pre.offsetParent !== null,
                text: pre.textContent.split('\\n')[0].slice(0, 60),
            };
        })"""
    )
    cut = [b for b in blocks if b["visible"] and b["scroll"] > b["client"] + 1
           and b["overflow"] not in ("auto", "scroll")]
    assert not cut, f"{page_path}: blocks cut at the right edge (no scroll bar): {cut}"
    too_wide = [b for b in blocks if b["visible"] and b["source"] and b["in_cell"]
                and b["scroll"] > b["client"] + 1]
    assert not too_wide, (
        f"{page_path}: code cells wider than their box at {LAPTOP['width']} px: {too_wide}"
    )


def _repository_url() -> str:
    """`repository: url:` of _config.yml, the one place the repository's address is set."""
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    url = str((config.get("repository") or {}).get("url") or "").strip().rstrip("/")
    return "" if url == "https://github.com/executablebooks/jupyter-book" else url


_BUTTON_HREF = re.compile(
    r"<a\s+href=[\"']([^\"']*)[\"'][^>]*\bclass=[\"'][^\"']*\bbtn-source-[a-z-]+", re.I
)
_LAUNCH_HREF = re.compile(r'<a\s+href="([^"]*)"[^>]*\btitle="Launch on (\w+)"')
_BUILT_FOR = re.compile(r'<meta name="nlpcourse:repository" content="([^"]*)"')


def _built_repository(html: str) -> str:
    """The repository the page was built for: its nlpcourse:repository tag (book/_ext/course_repository.py:
    $NLPCOURSE_REPOSITORY at build time, else _config.yml's), else, on a page built before the tag, _config.yml's."""
    found = _BUILT_FOR.search(html)
    return unescape(found.group(1)) if found else _repository_url()


def _launch_notebook_urls(repository: str, docname: str) -> dict[str, str]:
    """Where the Colab and Binder buttons of page ``docname`` must point: its notebook on the branch `launch`
    (scripts/launch_notebooks.py), with the services of _config.yml's `launch_buttons:`."""
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["launch_buttons"]
    org_repo = repository.removeprefix("https://github.com/")
    ui = {"jupyterlab": "lab/tree", "classic": "tree"}[config.get("notebook_interface", "classic")]
    return {"Colab": f"{config['colab_url'].rstrip('/')}/github/{org_repo}/blob/launch/{docname}.ipynb",
            "Binder": f"{config['binderhub_url'].rstrip('/')}/v2/gh/{org_repo}/launch?urlpath={ui}/{docname}.ipynb"}


@pytest.mark.parametrize("page_path", PAGES)
def test_buttons_link_only_to_the_configured_repository(site_root, page_path):
    """Repository, issue and launch buttons exist only with a repository and use it.

    Without one (`repository: url:` of _config.yml, which a course fork fills in, or $NLPCOURSE_REPOSITORY at
    build time, which the publishing workflow sets) no button may point at a repository that does not exist;
    chapters still offer their .ipynb download. With one, a chapter's Colab and Binder buttons open its
    notebook on the branch `launch`, and a site built by `make book` holds that notebook in launch/.
    """
    html = (site_root / page_path).read_text(encoding="utf-8")
    url = _built_repository(html)
    repo_links = _BUTTON_HREF.findall(html)
    if not url:
        assert not repo_links, f"{page_path}: repository buttons without a repository URL"
        launch = ("dropdown-launch-buttons", 'title="Launch on')
        assert not any(marker in html for marker in launch), (
            f"{page_path}: launch buttons without a repository URL"
        )
    else:
        wrong = [h for h in repo_links if not h.startswith(url)]
        assert not wrong, f"{page_path}: buttons that do not link to {url}: {wrong}"
        docname = page_path.removesuffix(".html")
        if "cell_input" in html and url.startswith("https://github.com/"):
            launch_links = {name: unescape(href) for href, name in _LAUNCH_HREF.findall(html)}
            assert launch_links == _launch_notebook_urls(url, docname), page_path
            if (site_root / "launch").is_dir():
                assert (site_root / "launch" / f"{docname}.ipynb").is_file(), f"launch/{docname}.ipynb is missing"
    if "cell_input" in html:
        notebook = re.search(r'href="([^"]+\.ipynb)"[^>]*btn-download-notebook-button', html)
        assert notebook, f"{page_path}: no .ipynb download button"
        target = (site_root / page_path).parent / notebook.group(1)
        assert target.resolve().is_file(), f"{page_path}: {notebook.group(1)} is missing"


EXAMPLE_REPOSITORY = "https://github.com/example/course"


def _cached_chapter(cache: Path) -> str | None:
    """The first chapter of _toc.yml whose executed notebook the build's cache holds for its current source,
    so that a rebuild renders it without running it; None when there is none (the cache is out of date)."""
    import yaml
    from jupyter_cache import get_cache
    from myst_nb.core.read import read_myst_markdown_notebook
    from myst_parser.config.main import MdParserConfig

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    db = get_cache(str(cache))
    for chapter in [c["file"] for part in toc.get("parts", []) for c in part.get("chapters", [])]:
        text = (ROOT / f"{chapter}.md").read_text(encoding="utf-8")
        if "\nkernelspec:" not in text.split("\n---\n", 1)[0]:
            continue
        try:
            db.match_cache_notebook(read_myst_markdown_notebook(text, MdParserConfig()))
        except KeyError:
            continue
        return chapter
    return None


def _build_for_repository(out: Path, chapter: str) -> subprocess.CompletedProcess:
    """`make book`'s two steps for the root page and ``chapter`` only, with $NLPCOURSE_REPOSITORY set: Jupyter
    Book (the chapter from the copy of the cache in ``out``, never executed) and the launch notebooks."""
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    # The root page is rendered without running it; a chapter missing from the cache fails in seconds.
    config["execute"].update(cache=str(out / "_build" / ".jupyter_cache"), exclude_patterns=[f"{toc['root']}.md"],
                             timeout=10)
    sphinx = config["sphinx"]  # local extensions are found relative to the config file's folder
    sphinx["local_extensions"] = {k: str(ROOT / v) for k, v in sphinx["local_extensions"].items()}
    # sort_keys=False: the widget scripts (nb_ipywidgets_js) load in the order they are listed.
    (out / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    (out / "_toc.yml").write_text(yaml.safe_dump({"format": "jb-book", "root": toc["root"],
                                                   "chapters": [{"file": chapter}]}), encoding="utf-8")
    env = {**os.environ, "NLPCOURSE_REPOSITORY": EXAMPLE_REPOSITORY, "NLPCOURSE_REVISION": "0" * 40,
           "NLPCOURSE_PROGRESS": "0"}
    jupyter_book = shutil.which("jupyter-book", path=str(Path(sys.executable).parent)) or "jupyter-book"
    build = subprocess.run([jupyter_book, "build", ".", "--config", str(out / "_config.yml"), "--toc",
                            str(out / "_toc.yml"), "--path-output", str(out)],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    if build.returncode != 0:
        return build
    launch = subprocess.run([sys.executable, "scripts/launch_notebooks.py", "--out", str(out / "_build/html/launch")],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    return subprocess.CompletedProcess(build.args, launch.returncode, build.stdout + launch.stdout,
                                       build.stderr + launch.stderr)


@pytest.mark.slow
def test_site_built_for_a_repository_opens_the_chapter_notebook_in_colab(site_root, browser, tmp_path):
    """The publishing workflow's build: with $NLPCOURSE_REPOSITORY set, a chapter's Colab button (in Chromium)
    opens its notebook on the branch `launch`, which the site's launch/ folder holds. The chapter is rendered
    from the build's executed notebooks (a copy of _build/.jupyter_cache), not run again."""
    cache = ROOT / "_build" / ".jupyter_cache"
    if not cache.is_dir():
        pytest.skip(f"{cache} is missing (run `make book` first)")
    shutil.copytree(cache, tmp_path / "_build" / ".jupyter_cache")  # the rebuild leaves the real cache alone
    chapter = _cached_chapter(tmp_path / "_build" / ".jupyter_cache")
    if chapter is None:
        pytest.skip("no chapter's executed notebook in _build/.jupyter_cache matches its source (run `make book`)")
    build = _build_for_repository(tmp_path, chapter)
    log = build.stdout + build.stderr
    assert build.returncode == 0, log[-3000:]
    assert "Executing notebook" not in log, "the rebuild ran a notebook instead of reusing the cache"
    html_root = tmp_path / "_build" / "html"
    expected = _launch_notebook_urls(EXAMPLE_REPOSITORY, chapter)["Colab"]
    assert expected == f"https://colab.research.google.com/github/example/course/blob/launch/{chapter}.ipynb"
    with _serve(html_root) as url:
        recorder = PageRecorder(browser, url)
        try:
            page = recorder.page
            page.goto(f"{url}{chapter}.html", wait_until="load")
            page.locator(".dropdown-launch-buttons button").first.click()
            # By its text: Bootstrap's tooltip takes the link's title attribute away.
            colab = page.locator(".dropdown-launch-buttons a", has_text="Colab").first
            colab.wait_for(state="visible")
            assert colab.get_attribute("href") == expected
            assert recorder.problems() == []
        finally:
            recorder.close()
    notebook = html_root / "launch" / f"{chapter}.ipynb"
    assert notebook.is_file(), f"{notebook} is missing"
    assert f"git+{EXAMPLE_REPOSITORY}@{'0' * 40}" in notebook.read_text(encoding="utf-8")
    if (site_root / "launch").is_dir():  # the site `make book` built holds it too
        assert (site_root / "launch" / f"{chapter}.ipynb").is_file()


def test_data_page_credits_every_bundled_corpus():
    """book/data.md lists every file of data/registry.json (no build needed)."""
    registry = json.loads((ROOT / "data" / "registry.json").read_text(encoding="utf-8"))
    text = (ROOT / "book" / "data.md").read_text(encoding="utf-8")
    corpora = [entry for name, entry in registry.items() if name != "checkpoints"]  # models: the next test
    missing = [entry["file"] for entry in corpora if f"`{entry['file']}`" not in text]
    assert not missing, f"book/data.md does not credit: {missing}"


def test_data_page_names_every_saved_model():
    """book/data.md's table names every model file of data/checkpoints/, and no file that is not there."""
    text = (ROOT / "book" / "data.md").read_text(encoding="utf-8")
    saved = {p.name for p in (ROOT / "data" / "checkpoints").iterdir() if p.suffix in (".pt", ".bin")}
    table = text.split("## Trained models", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"^\| `([\w.]+\.(?:pt|bin))` \|", table, re.M))
    assert named == saved, f"missing from book/data.md: {saved - named}; not saved: {named - saved}"
