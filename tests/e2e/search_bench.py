"""What a search costs a reader on a phone: bytes and time to the first result.

Usage (from the repository root):
    PYTHONPATH=. python tests/e2e/search_bench.py [SITE] [--runs N]

Opens ``search.html?q=...`` in a fresh phone context (cold cache) on
Lighthouse's mobile profile (page_weight.SLOW_4G, a CPU 4x slower), from the
local server that sends the gzip copies a host sends, and prints, per query:
the bytes transferred until the first result is listed (the search page, its
styles and scripts, the index), and the milliseconds from the start of the
navigation to the first result, with the time the ranking itself took; then
the same for a second search in the same browser (its cache holds the
index). A benchmark: it prints, it never fails (a busy machine only adds time).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from browser import CHROMIUM, CHROMIUM_ARGS, serve
from page_weight import CPU_SLOWDOWN, SLOW_4G, phone_context

ROOT = Path(__file__).resolve().parents[2]
QUERIES = {
    "zh": ["多头注意力", "键值缓存", "repeat_kv"],
    "en": ["KV cache", "shape mismatch"],
}
# Wraps the engine's ranking, before the page's own scripts run, to time it.
INIT_JS = """
window.__bookRankMs = [];
document.addEventListener("DOMContentLoaded", () => {
  if (typeof BookSearch === "undefined") return;
  const items = BookSearch.items;
  BookSearch.items = (q, i) => { const t = performance.now(); const r = items(q, i);
    window.__bookRankMs.push(performance.now() - t); return r; };
});
"""
FIRST_JS = """() => {
  const nav = performance.getEntriesByType("navigation")[0];
  const entries = [nav, ...performance.getEntriesByType("resource")];
  return {ms: performance.now(), rank_ms: window.__bookRankMs[0] ?? null,
          bytes: entries.reduce((a, e) => a + (e.transferSize || 0), 0),
          files: entries.slice(1).map((e) => [e.name.split("/").pop().split("?")[0], e.transferSize])};
}"""


def first_result(context_factory, url: str) -> dict:
    """Load ``url`` throttled; measure when the first result is listed, on a
    first visit (cold cache) and on a second search in the same browser."""
    context = context_factory()
    try:
        page = context.new_page()
        page.add_init_script(INIT_JS)
        cdp = context.new_cdp_session(page)
        cdp.send("Network.enable")
        cdp.send("Network.emulateNetworkConditions", SLOW_4G)
        cdp.send("Emulation.setCPUThrottlingRate", {"rate": CPU_SLOWDOWN})
        runs = []
        for address in (url, url + "+"):  # the second: the cache holds the index
            page.goto(address, wait_until="commit")
            page.wait_for_selector("#search-results ul.search > li", timeout=60_000)
            runs.append(page.evaluate(FIRST_JS))
        return {**runs[0], "again_ms": runs[1]["ms"], "again_bytes": runs[1]["bytes"]}
    finally:
        context.close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", nargs="?", type=Path, default=ROOT / "_build" / "html")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p, serve(args.site) as base:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        for lang, queries in QUERIES.items():
            for query in queries:
                url = f"{base}/{lang}/search.html?q={query}"
                runs = [
                    first_result(phone_context(browser), url) for _ in range(args.runs)
                ]
                ms = statistics.median(r["ms"] for r in runs)
                rank = statistics.median(r["rank_ms"] or 0 for r in runs)
                again = statistics.median(r["again_ms"] for r in runs)
                print(
                    f"{lang} {query!r}: {runs[0]['bytes'] / 1024:.0f} KiB before the "
                    f"first result, first result at {ms:.0f} ms (ranking {rank:.0f} ms); "
                    f"a second search: {runs[0]['again_bytes'] / 1024:.0f} KiB, "
                    f"{again:.0f} ms; median of {args.runs}"
                )
            print(
                "  " + ", ".join(f"{n} {b / 1024:.1f} KiB" for n, b in runs[0]["files"])
            )
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
