"""Browser checks of the built site, shared by the e2e tests.

Each check returns a list of problems (empty = fine), so the same function
both guards the real site and is shown to catch a deliberately broken copy.
"""

from __future__ import annotations

import functools
import http.server
import re
import threading
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
LOCAL_HOSTS = {"127.0.0.1", "localhost"}
SKIP_PAGES = {"genindex.html", "search.html", "py-modindex.html"}


def site_pages(site: Path, lang: str) -> list[str]:
    """Paths (relative to the language root) of the book's pages."""
    root = site / lang
    return sorted(
        p.relative_to(root).as_posix() for p in root.rglob("*.html")
        if p.name not in SKIP_PAGES and not p.relative_to(root).parts[0].startswith("_")
    )


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep test output clean
        pass


@contextmanager
def serve(directory: Path):
    """Serve ``directory`` on 127.0.0.1 at a free port; yield the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def watch(page) -> dict[str, list[str]]:
    """Record console errors, failed requests and requests leaving localhost.

    Requests to other hosts are aborted, so the page is checked as a reader
    without a network would see it.
    """
    seen = {"console": [], "failed": [], "remote": []}

    def route(r):
        host = urlsplit(r.request.url).hostname
        if r.request.url.startswith(("data:", "blob:")) or host in LOCAL_HOSTS:
            r.continue_()
        else:
            seen["remote"].append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on("console", lambda m: seen["console"].append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: seen["console"].append(f"page error: {e}"))
    page.on("requestfailed", lambda r: seen["failed"].append(f"{r.url} ({r.failure})"))
    page.on("response", lambda r: seen["failed"].append(f"{r.url} (HTTP {r.status})")
            if r.status >= 400 else None)
    return seen


BROKEN_IMAGES_JS = """async () => {
  const bad = [];
  for (const img of Array.from(document.images)) {
    img.loading = "eager";
    try { await img.decode(); } catch (e) { bad.push(img.getAttribute("src")); continue; }
    if (!(img.naturalWidth > 0 && img.naturalHeight > 0)) bad.push(img.getAttribute("src"));
  }
  return bad;
}"""

MATH_JS = """async () => {
  const hasMath = document.querySelector(".math, div.math, span.math") !== null;
  if (!hasMath) return {hasMath, typeset: 0, errors: 0};
  for (let i = 0; i < 100 && !(window.MathJax && MathJax.startup && MathJax.startup.promise); i++)
    await new Promise((r) => setTimeout(r, 50));
  if (!(window.MathJax && MathJax.startup)) return {hasMath, typeset: -1, errors: 0};
  await MathJax.startup.promise;
  return {hasMath,
          typeset: document.querySelectorAll("mjx-container").length,
          errors: document.querySelectorAll("mjx-merror, [data-mjx-error]").length};
}"""


def page_problems(page, url: str) -> list[str]:
    """Load ``url`` and list what a reader would find wrong on it."""
    seen = watch(page)
    page.goto(url, wait_until="networkidle")
    problems = [f"console error: {m}" for m in seen["console"]]
    problems += [f"failed request: {u}" for u in seen["failed"]]
    problems += [f"request left localhost: {u}" for u in seen["remote"]]
    problems += [f"image not decoded: {src}" for src in page.evaluate(BROKEN_IMAGES_JS)]
    math = page.evaluate(MATH_JS)
    if math["hasMath"] and math["typeset"] <= 0:
        problems.append("math is not typeset")
    if math["errors"]:
        problems.append(f"{math['errors']} MathJax error(s)")
    page.unroute("**/*")
    return problems


def switch_problems(page, base: str, lang: str, other: str, path: str) -> list[str]:
    """Follow the language switch to the other edition and back."""
    start = f"{base}/{lang}/{path}"
    page.goto(start)
    problems = []
    for here, there in ((lang, other), (other, lang)):
        link = page.locator("a.book-lang-switch")
        if link.count() != 1:
            return [f"{page.url}: {link.count()} language switches"]
        link.click()
        page.wait_for_load_state()
        expected = f"{base}/{there}/{path}"
        if page.url.split("#")[0] != expected:
            problems.append(f"switch on {here}/{path} led to {page.url}, expected {expected}")
            break
        if page.title() == "" or "404" in page.title():
            problems.append(f"{page.url} did not load")
    return problems


def search_hits(page, base: str, lang: str, query: str) -> list[str]:
    """Run the site's own search and return the pages it lists."""
    page.goto(f"{base}/{lang}/search.html?q={query}")
    # searchtools.js fills .search-summary once the search has finished.
    page.wait_for_function(
        "() => { const s = document.querySelector('#search-results .search-summary');"
        " return s && s.textContent.trim().length > 0; }",
        timeout=20_000,
    )
    hrefs = page.eval_on_selector_all("#search-results ul.search li a", "els => els.map(e => e.getAttribute('href'))")
    return sorted({re.sub(r"[?#].*$", "", h) for h in hrefs})
