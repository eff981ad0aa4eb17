"""What the build reports: the per-page execution table it prints, and
``build-report.html`` with the last cold and warm build times.
"""

from __future__ import annotations

import datetime
import html
import json
import os
from pathlib import Path

from .common import LANGS, read_record
from .page_weight import page_weight_section


def exec_rows(build: Path, langs=LANGS) -> list[tuple]:
    """(lang, page, seconds of last execution, status in this build) for every page."""
    rows = []
    for lang in langs:
        for doc, d in read_record(build / "exec" / f"{lang}.json", {}).items():
            runtime = d.get("runtime")
            status = (
                "FAILED"
                if d.get("succeeded") is False and d["read_this_build"]
                else "executed"
                if d["executed_this_build"]
                else "from cache"
                if d["read_this_build"]
                else "unchanged"
            )
            rows.append((lang, doc, runtime, status))
    return rows


def print_exec_table(rows: list[tuple]) -> None:
    if not rows:
        return
    print(
        "\nPer-page execution time (seconds of the last execution; status in this build):"
    )
    print(f"{'lang':4}  {'page':34}  {'seconds':>8}  status")
    for lang, doc, runtime, status in rows:
        secs = f"{runtime:8.2f}" if runtime is not None else f"{'-':>8}"
        print(f"{lang:4}  {doc:34}  {secs}  {status}")
    ran = [r for r in rows if r[3] == "executed"]
    total = sum(r[2] or 0 for r in ran)
    print(f"executed in this build: {len(ran)} page(s), {total:.1f} s of kernel time")


REPORT_STYLE = """body{font-family:sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;line-height:1.5}
table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #ccc;padding:.25rem .6rem;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}"""


def write_build_report(build: Path, rows: list[tuple], seconds: float) -> None:
    """Record this build's time and publish _build/html/build-report.html.

    A build that executed every page is a cold build; one that executed none
    is a warm (no-change) rebuild. The last of each is kept in
    build/build-times.json and shown on the report with the per-page table.
    """
    times = record_build_time(build, rows, seconds)
    body = build_times_table(times) + page_table(rows)
    body.append(page_weight_section(build))
    page = (
        '<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>Build report · 构建报告</title>"
        '<link rel="icon" href="zh/_static/favicon.svg" type="image/svg+xml">'
        f"<style>{REPORT_STYLE}</style></head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )
    (build / "html" / "build-report.html").write_text(page, encoding="utf-8")


def build_kind(rows: list[tuple]) -> str:
    """cold (every page executed), warm (none) or partial.

    >>> build_kind([("zh", "a", 1.0, "executed")]), build_kind([("zh", "a", 1.0, "from cache")])
    ('cold', 'warm')
    """
    executed = sum(r[3] == "executed" for r in rows)
    if rows and executed == len(rows):
        return "cold"
    return "warm" if executed == 0 else "partial"


def record_build_time(build: Path, rows: list[tuple], seconds: float) -> dict:
    """Keep this build's time in build-times.json, as its kind and as the last."""
    times_file = build / "build-times.json"
    times = read_record(times_file, {})
    entry = {
        "seconds": round(seconds, 1),
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "executed_pages": sum(r[3] == "executed" for r in rows),
        "pages": len(rows),
        "cpus": os.cpu_count(),
    }
    times[build_kind(rows)] = times["last"] = entry
    times_file.write_text(json.dumps(times, indent=1), encoding="utf-8")
    return times


def build_time(entry: dict | None) -> str:
    """One build's time as the report shows it."""
    if not entry:
        return "—"
    return (
        f"{entry['seconds']:.1f} s ({entry['executed_pages']}/{entry['pages']} pages "
        f"executed, {entry['cpus']} CPUs, {html.escape(entry['date'])})"
    )


def build_times_table(times: dict) -> list[str]:
    """The report's heading and its table of the last cold, warm and this build."""
    return [
        "<h1>Build report · 构建报告</h1>",
        '<p><a href="zh/index.html">中文版</a> · <a href="en/index.html">English edition</a></p>',
        "<table><tr><th>build · 构建</th><th>time · 时间</th></tr>",
        "<tr><td>cold (every page executed) · 冷构建</td>"
        f"<td>{build_time(times.get('cold'))}</td></tr>",
        "<tr><td>warm (no change, nothing executed) · 无改动重建</td>"
        f"<td>{build_time(times.get('warm'))}</td></tr>",
        f"<tr><td>this build · 本次</td><td>{build_time(times.get('last'))}</td></tr>"
        "</table>",
    ]


def page_table(rows: list[tuple]) -> list[str]:
    """The report's per-page execution table."""
    lines = [
        "<h2>Per-page execution · 各页执行时间</h2>",
        "<p>Seconds of each page's last execution, and what this build did with it. "
        "各页最近一次执行所用秒数，以及本次构建对它的处理。</p>",
        "<table><tr><th>lang</th><th>page</th><th>seconds</th><th>this build</th></tr>",
    ]
    for lang, doc, runtime, status in rows:
        secs = f"{runtime:.2f}" if runtime is not None else "—"
        lines.append(
            f'<tr><td>{lang}</td><td><a href="{lang}/{doc}.html">{html.escape(doc)}</a></td>'
            f'<td class="num">{secs}</td><td>{status}</td></tr>'
        )
    lines.append("</table>")
    return lines
