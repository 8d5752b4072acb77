"""MkDocs hooks that make the built site work with no network, and add the example notebooks to it.

Mermaid, which draws the handout's diagrams, is served from the site itself: ``mermaid.min.js`` from the npm
package pinned in ``.ci/site/package.json`` is copied to ``assets/javascripts/mermaid.min.js`` and loaded as extra
JavaScript, and Material, finding ``mermaid`` already defined, fetches nothing. The file is looked for in
``$BUB_NB_SITE_ASSETS/node_modules`` (where ``.ci/run`` installs the package) and then in
``.ci/site/node_modules`` (``cd .ci/site && npm ci``); without it the build fails rather than ship a site that
needs a CDN.

The example notebooks appear under ``examples/``: from ``$BUB_NB_SITE_NOTEBOOKS`` when it names a folder of
executed copies (``bub-nb run`` writes them; the folder is named ``examples``, as the pages' addresses are), else
from ``examples/`` as committed, without outputs. mkdocs-jupyter renders them; it never executes them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
MERMAID_URI = "assets/javascripts/mermaid.min.js"
MERMAID_IN_PACKAGE = Path("node_modules", "mermaid", "dist", "mermaid.min.js")


def mermaid_script() -> Path:
    """The installed ``mermaid.min.js``, or a build failure that says how to install it."""
    places = [Path(os.environ["BUB_NB_SITE_ASSETS"])] if os.environ.get("BUB_NB_SITE_ASSETS") else []
    places.append(ROOT / ".ci" / "site")
    for place in places:
        if (place / MERMAID_IN_PACKAGE).is_file():
            return place / MERMAID_IN_PACKAGE
    raise PluginError(
        "mermaid.min.js not found: run `npm ci` in .ci/site (or set BUB_NB_SITE_ASSETS to where it is installed)"
    )


def notebooks_folder() -> Path:
    folder = Path(os.environ.get("BUB_NB_SITE_NOTEBOOKS") or ROOT / "examples").resolve()
    if folder.name != "examples" or not folder.is_dir():
        raise PluginError(f"BUB_NB_SITE_NOTEBOOKS must be a folder named examples: {folder}")
    return folder


def on_config(config: Any) -> Any:
    mermaid_script()  # fail early, before anything is built
    notebooks_folder()
    if MERMAID_URI not in [str(script) for script in config.extra_javascript]:
        config.extra_javascript.append(MERMAID_URI)
    return config


# Before mkdocs-jupyter's own on_files, so that it renders the notebooks added here.
@event_priority(100)
def on_files(files: Files, config: Any) -> Files:
    files.append(File.generated(config, MERMAID_URI, abs_src_path=str(mermaid_script())))
    folder = notebooks_folder()
    for notebook in sorted(folder.glob("*.ipynb")):
        # A file read from its folder, not a generated one: mkdocs-jupyter reads the path from the folder.
        files.append(File(f"examples/{notebook.name}", str(folder.parent), config.site_dir, config.use_directory_urls))
    return files
