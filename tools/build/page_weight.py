"""The page weight and load times that ``make bench-pages`` measures, shown on
the build report while the site is still the one it measured.
"""

from __future__ import annotations

import hashlib
import html
import json
import sys
from pathlib import Path

PAGE_WEIGHT = "page-weight.json"  # in the build folder, written by make bench-pages
PAGE_WEIGHT_START, PAGE_WEIGHT_END = "<!-- page-weight -->", "<!-- /page-weight -->"


# Not part of what a page loads: the report itself (it shows the measurement),
# the compressed copies (made from the files), the PDF editions.
NOT_FINGERPRINTED = {".gz", ".br", ".pdf"}


def site_fingerprint(site: Path) -> str:
    """A digest of every file a reader's browser can load from ``site``.

    The page-weight measurement records the fingerprint of the site it
    measured; the report shows the numbers only while the site still has it.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     site = Path(d); _ = (site / "a.html").write_text("x")
        ...     first = site_fingerprint(site)
        ...     _ = (site / "build-report.html").write_text("report")
        ...     same = site_fingerprint(site) == first
        ...     _ = (site / "a.html").write_text("y")
        ...     (same, site_fingerprint(site) == first)
        (True, False)
    """
    digest = hashlib.sha256()
    for path in sorted(p for p in site.rglob("*") if p.is_file()):
        rel = path.relative_to(site).as_posix()
        if rel == "build-report.html" or path.suffix in NOT_FINGERPRINTED:
            continue
        digest.update(rel.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


def page_weight_section(build: Path) -> str:
    """The report's page-weight table, from the bench's last measurement.

    A build cannot measure its own pages in a browser, so ``make bench-pages``
    (tests/e2e/page_weight.py) writes ``<build>/page-weight.json`` and calls
    :func:`publish_page_weight`; the table says when it was measured, and a
    later build shows it until the bench measures again.
    """
    path = build / PAGE_WEIGHT
    # No heading without a table: a site never benched (the
    # hosted one) shows no empty section. The markers stay, for
    # publish_page_weight to fill.
    empty = "\n".join([PAGE_WEIGHT_START, PAGE_WEIGHT_END])
    if not path.exists():
        return empty
    data = read_measurement(path)
    if data is None:
        return empty
    measured_site, budget_note = data["site"], budget_paragraph(data["budget"])
    parts = [PAGE_WEIGHT_START, "<h2>Page weight · 页面体积</h2>"]
    now = site_fingerprint(build / "html")
    when = html.escape(data["measured"])
    if measured_site != now:
        parts.append(
            f"<p>The last measurement ({when}) was of another build of the site "
            f"(fingerprint {html.escape(measured_site)}; this build is {now}); its "
            "numbers are not shown. Run <code>make bench-pages</code> to "
            "measure this one. 上次测量的是另一次构建，数字不再显示。</p>"
        )
        return "\n".join(parts + [PAGE_WEIGHT_END])
    parts.append(
        f"<p>A first visit to each page with a cold cache, on a phone viewport "
        f"throttled as Lighthouse's mobile profile (slow 4G, CPU 4&times; slower), "
        f"from the local server sending the gzip copies, measured by make "
        f"bench-pages with the Performance API on {when}, on this build (site fingerprint "
        f"{now}). {budget_note} "
        "冷缓存首次访问各页（手机视口，按 Lighthouse 移动端限速：慢速 4G、CPU 慢 4 倍；"
        "本地服务器发送 gzip 副本）传输的字节数与时间，测于本次构建。</p>"
    )
    parts += weight_table(data["pages"]) + weight_summary(data.get("summary", {}))
    return "\n".join(parts + [PAGE_WEIGHT_END])


def read_measurement(path: Path) -> dict | None:
    """The bench's measurement in ``path``; None, with a warning, for an older
    or damaged file (the section then waits for the bench to measure again)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError(f"a {type(data).__name__}, not a mapping")
        # what the section reads: each raises on a damaged file
        str(data["site"])
        budget_paragraph(data["budget"])
        weight_table(data["pages"])
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        print(
            f"warning: ignoring {path} ({type(exc).__name__}: {exc})", file=sys.stderr
        )
        return None
    return data


def budget_paragraph(budget: dict) -> str:
    """The budget the measurement was held to, in one sentence."""
    return (
        f"Budget: {budget['bytes'] / 1024:.0f} KiB in all, "
        f"{budget['image_bytes'] / 1024:.0f} KiB of images (make test checks "
        "these), blocking time under "
        f"{budget['blocking_ms']} ms, largest contentful paint by {budget['lcp_ms']} ms, "
        f"load event by {budget['load_ms']} ms."
    )


def weight_table(pages: dict) -> list[str]:
    """One row per measured page."""
    rows = [
        "<table><tr><th>page</th><th>KiB</th><th>images KiB</th><th>requests</th>"
        "<th>TBT ms</th><th>LCP ms</th><th>load ms</th><th>math</th></tr>"
    ]
    for key, r in pages.items():
        rows.append(
            f'<tr><td><a href="{html.escape(key)}">{html.escape(key)}</a></td>'
            f'<td class="num">{r["bytes"] / 1024:.0f}</td>'
            f'<td class="num">{r["by_kind"].get("image", 0) / 1024:.0f}</td>'
            f'<td class="num">{r["requests"]}</td><td class="num">{r["blocking_ms"]}</td>'
            f'<td class="num">{r["lcp_ms"]}</td><td class="num">{r["load_ms"]}</td>'
            f"<td>{'yes' if r.get('math_css') else 'no'}</td></tr>"
        )
    return rows + ["</table>"]


def weight_summary(summary: dict) -> list[str]:
    """One paragraph per edition: largest and median bytes and times."""
    return [
        f"<p>{lang}: {s['pages']} pages; largest {s['max_bytes'] / 1024:.0f} KiB, "
        f"median {s['median_bytes'] / 1024:.0f} KiB; load max {s['max_load_ms']} ms, "
        f"median {s['median_load_ms']} ms; LCP max {s['max_lcp_ms']} ms, "
        f"median {s['median_lcp_ms']} ms; blocking max {s['max_blocking_ms']} ms, "
        f"median {s['median_blocking_ms']} ms.</p>"
        for lang, s in summary.items()
    ]


def publish_page_weight(build: Path, data: dict) -> None:
    """Store the bench's measurements and put them on the build report."""
    (build / PAGE_WEIGHT).write_text(json.dumps(data, indent=1), encoding="utf-8")
    report = build / "html" / "build-report.html"
    if not report.exists():
        return
    text = report.read_text(encoding="utf-8")
    section = page_weight_section(build)
    if PAGE_WEIGHT_START in text:
        head, rest = text.split(PAGE_WEIGHT_START, 1)
        text = head + section + rest.split(PAGE_WEIGHT_END, 1)[1]
    else:
        text = text.replace("\n</body>", "\n" + section + "\n</body>")
    report.write_text(text, encoding="utf-8")
