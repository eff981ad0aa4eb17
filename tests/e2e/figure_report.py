"""Print how large each figure's smallest text is shown on a phone.

Usage (from the repository root, which holds the tools package):
    PYTHONPATH=. python tests/e2e/figure_report.py [SITE] [--lang zh|en] [PAGE.html ...]

SITE defaults to _build/html (a `tools/build_book.py --build-dir DIR` build
is at DIR/html). A figure passes at >= 11 CSS px (MIN_TEXT_CSS_PX) in a 390 px viewport; the
browser test `test_figure_text_is_legible_on_a_phone` applies the same rule.
Needs /usr/bin/chromium.
"""

import argparse
import sys
from pathlib import Path

from browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    MIN_TEXT_CSS_PX,
    PHONE,
    figure_text_sizes,
    serve,
    site_pages,
)

ROOT = Path(__file__).resolve().parents[2]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", nargs="?", type=Path, default=ROOT / "_build" / "html")
    parser.add_argument("--lang", choices=["zh", "en"], action="append")
    parser.add_argument("pages", nargs="*")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    failing = 0
    with sync_playwright() as p, serve(args.site) as url:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_context(
            viewport=PHONE, device_scale_factor=3, is_mobile=True, has_touch=True
        ).new_page()
        for lang in args.lang or ["zh", "en"]:
            for path in args.pages or site_pages(args.site, lang):
                for fig in figure_text_sizes(page, f"{url}/{lang}/{path}", args.site):
                    shown = fig["shown_text_px"]
                    ok = shown is not None and shown >= MIN_TEXT_CSS_PX
                    failing += not ok
                    print(
                        f"{'ok  ' if ok else 'FAIL'} {lang}/{path} {Path(fig['src']).name}: "
                        f"{fig['natural']} px wide, shown {fig['shown']:.0f} px, smallest text "
                        f"{fig['min_text_px']} px -> {shown and round(shown, 1)} px"
                    )
        browser.close()
    print(f"{failing} figure(s) below {MIN_TEXT_CSS_PX} px")
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
