#!/usr/bin/env python3
"""Copy the JavaScript the built book serves itself from node_modules/ into book/_vendor/.

The website must render math (MathJax 3) and ipywidgets (the ipywidgets HTML
manager, loaded through RequireJS) with no network access, so these files are
served from the site itself instead of a CDN.  npm pins the versions
(package.json + package-lock.json); this script copies the subset the site
needs into ``book/_vendor/`` (gitignored), which ``_config.yml`` lists in
``html_static_path``, so that Sphinx copies it to ``_build/html/_static/``:

    book/_vendor/js/mathjax/          MathJax es5/ (tex-chtml.js + everything it lazy-loads)
    book/_vendor/js/requirejs/        require.js
    book/_vendor/js/jupyter-widgets/  embed-amd.js + the font files it loads,
                                      and setup.js (from scripts/widgets_setup.js)

The folder is deliberately not called ``_static``: Jupyter Book adds every
.js/.css file found under a ``_static`` folder to every page.

Usage (from the repository root, after ``npm ci --no-audit --no-fund``):

    python scripts/vendor_js.py

Standard library only.  Exits with status 1 and a clear message when
node_modules/ is missing or does not match package-lock.json.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NODE_MODULES = ROOT / "node_modules"
LOCKFILE = ROOT / "package-lock.json"
DEST = ROOT / "book" / "_vendor"
JS = DEST / "js"

# npm package -> list of (source, destination) pairs, relative to the package
# folder and to JS.  A source ending in "/" is a whole folder.
PACKAGES: dict[str, list[tuple[str, str]]] = {
    "mathjax": [
        # The whole es5/ folder: tex-chtml.js lazy-loads input/tex extensions,
        # output/chtml/fonts/woff-v2, a11y/ and ui/ components from beside itself.
        # (latest.js, which fetches "the latest MathJax" from a CDN, and the
        # Node.js entry point are left out; see SKIP.)
        ("es5/", "mathjax/"),
        ("LICENSE", "mathjax/LICENSE"),
    ],
    "requirejs": [
        ("require.js", "requirejs/require.js"),
    ],
    "@jupyter-widgets/html-manager": [
        # embed-amd.js bundles @jupyter-widgets/base, controls and output; the
        # fonts (Font Awesome, used by the controls' CSS) are loaded from the
        # folder that holds embed-amd.js.  Copied by pattern below.
        ("dist/embed-amd.js", "jupyter-widgets/embed-amd.js"),
        ("dist/embed.js.LICENSE.txt", "jupyter-widgets/LICENSE.txt"),
    ],
}
# Files inside copied folders that the site must not serve.
SKIP = shutil.ignore_patterns("latest.js", "node-main.js", "*.map")

# Asset files next to embed-amd.js that it loads at run time.
WIDGET_ASSET_SUFFIXES = (".woff2", ".woff", ".ttf", ".eot", ".svg")

# Our own glue (tracked in the repository), copied next to embed-amd.js as setup.js:
# RequireJS paths so the HTML manager finds its fonts, and a MathJax 2 "Hub" shim
# for widget labels; see the comment at the top of the file.
GLUE = ROOT / "scripts" / "widgets_setup.js"
GLUE_DEST = "jupyter-widgets/setup.js"

# Files that the site's configuration points at; checked after copying.
ENTRY_POINTS = (
    "mathjax/tex-chtml.js",
    "mathjax/output/chtml/fonts/woff-v2/MathJax_Main-Regular.woff",
    "requirejs/require.js",
    "jupyter-widgets/embed-amd.js",
    GLUE_DEST,
)


class VendorError(Exception):
    """A problem the user must fix before the site can be built."""


def locked_versions() -> dict[str, str]:
    if not LOCKFILE.is_file():
        raise VendorError(f"{LOCKFILE.relative_to(ROOT)} is missing.")
    lock = json.loads(LOCKFILE.read_text(encoding="utf-8"))
    packages = lock.get("packages", {})
    versions = {}
    for name in PACKAGES:
        entry = packages.get(f"node_modules/{name}")
        if not entry or "version" not in entry:
            raise VendorError(f"package-lock.json does not pin {name!r}.")
        versions[name] = entry["version"]
    return versions


def check_node_modules(versions: dict[str, str]) -> None:
    if not NODE_MODULES.is_dir():
        raise VendorError(
            "node_modules/ not found at "
            f"{NODE_MODULES}.\n"
            "Install the pinned JavaScript packages first, from the repository root:\n"
            "    npm ci --no-audit --no-fund"
        )
    for name, version in versions.items():
        manifest = NODE_MODULES / name / "package.json"
        if not manifest.is_file():
            raise VendorError(
                f"node_modules/{name} is missing; run `npm ci --no-audit --no-fund`."
            )
        installed = json.loads(manifest.read_text(encoding="utf-8")).get("version")
        if installed != version:
            raise VendorError(
                f"node_modules/{name} is {installed}, package-lock.json pins {version}; "
                "run `npm ci --no-audit --no-fund`."
            )


def copy(src: Path, dst: Path) -> int:
    """Copy a file or folder; return the number of files copied."""
    if not src.exists():
        raise VendorError(f"expected {src.relative_to(ROOT)} in the npm package, not found.")
    if src.is_dir():
        shutil.copytree(src, dst, ignore=SKIP)
        return sum(1 for p in dst.rglob("*") if p.is_file())
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dst)
    return 1


def vendor() -> int:
    versions = locked_versions()
    check_node_modules(versions)

    if DEST.exists():
        shutil.rmtree(DEST)
    JS.mkdir(parents=True)

    counts: dict[str, int] = {}
    for name, pairs in PACKAGES.items():
        pkg = NODE_MODULES / name
        n = 0
        for src, dst in pairs:
            n += copy(pkg / src.rstrip("/"), JS / dst.rstrip("/"))
        if name == "@jupyter-widgets/html-manager":
            for asset in sorted((pkg / "dist").iterdir()):
                if asset.suffix in WIDGET_ASSET_SUFFIXES:
                    n += copy(asset, JS / "jupyter-widgets" / asset.name)
        counts[name] = n

    copy(GLUE, JS / GLUE_DEST)

    for entry in ENTRY_POINTS:
        if not (JS / entry).is_file():
            raise VendorError(f"after copying, {(JS / entry).relative_to(ROOT)} is missing.")

    # Record what was copied (served as _static/js/VERSIONS.json on the site).
    (JS / "VERSIONS.json").write_text(
        json.dumps(versions, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    for name in PACKAGES:
        print(f"vendor_js: {name}@{versions[name]}: {counts[name]} files")
    print(f"vendor_js: wrote {DEST.relative_to(ROOT)}/")
    return 0


def main() -> int:
    try:
        return vendor()
    except VendorError as err:
        print(f"vendor_js: error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
