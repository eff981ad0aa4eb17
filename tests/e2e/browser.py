"""Browser checks of the built site, shared by the e2e tests.

Each check returns a list of problems (empty = fine), so the same function
both guards the real site and is shown to catch a deliberately broken copy.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote, urlsplit

# The PDF tool drives the same Chromium over the same local server.
from tools.build_pdf import CHROMIUM_ARGS, serve  # noqa: F401

CHROMIUM = Path("/usr/bin/chromium")
LOCAL_HOSTS = {"127.0.0.1", "localhost"}
SKIP_PAGES = {"genindex.html", "search.html", "py-modindex.html"}


def site_pages(site: Path, lang: str) -> list[str]:
    """Paths (relative to the language root) of the book's pages."""
    root = site / lang
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*.html")
        if p.name not in SKIP_PAGES and not p.relative_to(root).parts[0].startswith("_")
    )


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
    page.on(
        "console",
        lambda m: seen["console"].append(m.text) if m.type == "error" else None,
    )
    page.on("pageerror", lambda e: seen["console"].append(f"page error: {e}"))
    page.on("requestfailed", lambda r: seen["failed"].append(f"{r.url} ({r.failure})"))
    page.on(
        "response",
        lambda r: (
            seen["failed"].append(f"{r.url} (HTTP {r.status})")
            if r.status >= 400
            else None
        ),
    )
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

# The math is HTML written by KaTeX during the build (docs/_ext/book_math.py):
# every formula Sphinx marks (.math) holds KaTeX's markup and none is an
# error, KaTeX's stylesheet applies, and its fonts load.
MATH_JS = """async () => {
  const maths = [...document.querySelectorAll("span.math, div.math")];
  if (!maths.length) return {hasMath: false, untypeset: 0, errors: 0, styled: true, fonts: 0, cut: 0};
  await document.fonts.ready;
  const first = document.querySelector(".katex");
  // A display formula wider than the column must start inside it (and scroll).
  const cut = [...document.querySelectorAll("div.math")].filter((m) => {
    const start = m.querySelector(".katex-html .base");
    return start && m.offsetParent && start.getBoundingClientRect().left < m.getBoundingClientRect().left - 1;
  }).length;
  return {hasMath: true, cut,
          untypeset: maths.filter((m) => !m.querySelector(".katex")).length,
          errors: document.querySelectorAll(".katex-error").length,
          styled: !!first && getComputedStyle(first).fontFamily.includes("KaTeX_Main"),
          fonts: [...document.fonts].filter((f) => f.family.replace(/"/g, "").startsWith("KaTeX_")
                                              && f.status === "loaded").length};
}"""


def open_page(page, url: str) -> dict[str, list[str]]:
    """Watch ``page`` (see :func:`watch`), then load ``url`` until the network is idle.

    The checks below that take ``url=None`` then inspect the loaded page, so one
    load serves several checks.
    """
    seen = watch(page)
    page.goto(url, wait_until="networkidle")
    return seen


def _load(page, url: str | None) -> None:
    if url is not None:
        page.goto(url, wait_until="networkidle")


def page_problems(page, url: str) -> list[str]:
    """Load ``url`` and list what a reader would find wrong on it."""
    return load_problems(page, open_page(page, url))


def load_problems(page, seen: dict[str, list[str]]) -> list[str]:
    """What went wrong while loading the page ``seen`` watched (:func:`open_page`).

    The figures are lazy: they are loaded (and decoded) first, so that their
    requests are among those ``seen`` records.
    """
    undecoded = page.evaluate(BROKEN_IMAGES_JS)
    problems = [f"console error: {m}" for m in seen["console"]]
    problems += [f"failed request: {u}" for u in seen["failed"]]
    problems += [f"request left localhost: {u}" for u in seen["remote"]]
    problems += [f"image not decoded: {src}" for src in undecoded]
    problems += math_problems(page.evaluate(MATH_JS))
    page.unroute("**/*")
    return problems


def math_problems(math: dict) -> list[str]:
    """What :data:`MATH_JS` found wrong with a page's formulas."""
    if not math["hasMath"]:
        return []
    problems = []
    if math["untypeset"]:
        problems.append(f"{math['untypeset']} formula(s) without KaTeX's markup")
    if math["errors"]:
        problems.append(f"{math['errors']} KaTeX error(s)")
    if not math["styled"]:
        problems.append("KaTeX's stylesheet does not apply")
    if not math["fonts"]:
        problems.append("no KaTeX font loaded")
    if math["cut"]:
        problems.append(
            f"{math['cut']} display formula(s) start left of the column, out of reach"
        )
    return problems


def switch_problems(page, base: str, lang: str, other: str, path: str) -> list[str]:
    """Follow the language switch to the other edition and back."""
    page.goto(f"{base}/{lang}/{path}")
    return follow_switch(page, base, lang, other, path) or follow_switch(
        page, base, other, lang, path
    )


def follow_switch(page, base: str, here: str, there: str, path: str) -> list[str]:
    """Click the loaded page's language switch: it must lead to the same page
    of the other edition, which must load."""
    link = page.locator("a.book-lang-switch")
    if link.count() != 1:
        return [f"{page.url}: {link.count()} language switches"]
    link.click()
    page.wait_for_load_state()
    expected = f"{base}/{there}/{path}"
    if page.url.split("#")[0] != expected:
        return [f"switch on {here}/{path} led to {page.url}, expected {expected}"]
    if page.title() == "" or "404" in page.title():
        return [f"{page.url} did not load"]
    return []


def search_hits(page, base: str, lang: str, query: str) -> list[str]:
    """Run the site's own search and return the pages it lists."""
    page.goto(f"{base}/{lang}/search.html?q={query}")
    # searchtools.js fills .search-summary once the search has finished.
    page.wait_for_function(
        "() => { const s = document.querySelector('#search-results .search-summary');"
        " return s && s.textContent.trim().length > 0; }",
        timeout=20_000,
    )
    hrefs = page.eval_on_selector_all(
        "#search-results ul.search li a", "els => els.map(e => e.getAttribute('href'))"
    )
    return sorted({re.sub(r"[?#].*$", "", h) for h in hrefs})


def search_ranking(page, base: str, lang: str, query: str) -> list[str]:
    """The pages the site's search lists for ``query``, best first, each once
    (``NN-name``, without ``.html``), read from the search page as a reader sees it."""
    page.goto(f"{base}/{lang}/search.html?q={quote(query)}")
    page.wait_for_function(
        "() => { const s = document.querySelector('#search-results .search-summary');"
        " return s && s.textContent.trim().length > 0; }",
        timeout=20_000,
    )
    hrefs = page.eval_on_selector_all(
        "#search-results ul.search > li > a:first-of-type",
        "els => els.map(e => e.getAttribute('href'))",
    )
    pages = [re.sub(r"(\.html)?([?#].*)?$", "", h) for h in hrefs]
    return list(dict.fromkeys(pages))


# --- reading on a phone --------------------------------------------------------
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}
MIN_TEXT_CSS_PX = 11.0  # the usual minimum for text on a phone
MIN_TEXT_KEY = "mha_book:min_text_px"  # written by mha_book.viz.plot.figure_png

SCROLL_JS = """(width) => {
  // Content past the right edge either scrolls the page sideways or is cut
  // off by a clipping ancestor; both are faults. Inside a box that scrolls on
  // its own (a code block, a wide table) it is fine.
  // `width` is the device's: a mobile browser widens its layout viewport
  // (window.innerWidth) to fit content that sticks out, then zooms out.
  const doc = document.documentElement;
  const scrollsItself = (el) => {
    for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
      const o = getComputedStyle(a).overflowX;
      if ((o === "auto" || o === "scroll") && a.getBoundingClientRect().right <= width + 1) return true;
    }
    return false;
  };
  const wide = [];
  for (const el of document.querySelectorAll("body *")) {
    const r = el.getBoundingClientRect(), style = getComputedStyle(el);
    if (r.width === 0 || r.right <= width + 1 || style.position === "fixed") continue;
    // .katex-mathml is KaTeX's clipped, invisible MathML copy for screen readers;
    // a stretchy glyph (a root's overbar, a wide arrow) is an SVG 400em wide
    // that KaTeX clips to the formula in a .hide-tail box, itself checked here.
    if (style.visibility === "hidden" || el.closest("[hidden], .onlyprint, .d-none, .katex-mathml, .hide-tail > svg")) continue;
    if (scrollsItself(el)) continue;
    wide.push(`${el.tagName.toLowerCase()}${el.className ? "." + [...el.classList].join(".") : ""}`
              + ` reaches ${Math.round(r.right)} px`);
  }
  return {scrollWidth: Math.max(doc.scrollWidth, window.innerWidth), innerWidth: width, wide};
}"""


def horizontal_scroll_problems(page, url: str | None) -> list[str]:
    """Nothing may stick out to the right: no sideways page scroll, no clipped content.

    Code blocks and tables may scroll inside themselves.
    """
    _load(page, url)
    r = page.evaluate(SCROLL_JS, page.viewport_size["width"])
    problems = []
    if r["scrollWidth"] > r["innerWidth"] + 1:
        problems.append(
            f"page is {r['scrollWidth']} px wide in a {r['innerWidth']} px viewport"
        )
    if r["wide"]:
        problems.append(
            f"{len(r['wide'])} element(s) past the right edge of the "
            f"{r['innerWidth']} px viewport, e.g. {r['wide'][:3]}"
        )
    return problems


FIGURES_JS = """async () => {
  const out = [];
  for (const img of document.querySelectorAll("article.bd-article img")) {
    img.loading = "eager";
    try { await img.decode(); } catch (e) {}
    out.push({src: img.getAttribute("src"), url: img.src,
              natural: img.naturalWidth, shown: img.getBoundingClientRect().width});
  }
  return out;
}"""


def figure_text_sizes(page, url: str | None, site: Path) -> list[dict]:
    """For every figure of the page: the CSS size its smallest text is shown at."""
    from PIL import Image

    _load(page, url)
    figures = []
    for fig in page.evaluate(FIGURES_JS):
        path = site / urlsplit(fig["url"]).path.lstrip("/")
        record = (
            Image.open(path).text.get(MIN_TEXT_KEY) if path.suffix == ".png" else None
        )
        fig["min_text_px"] = float(record) if record is not None else None
        scale = fig["shown"] / fig["natural"] if fig["natural"] else 0.0
        fig["shown_text_px"] = (
            fig["min_text_px"] * scale if record is not None else None
        )
        figures.append(fig)
    return figures


def figure_text_problems(page, url: str | None, site: Path) -> list[str]:
    """Every figure's smallest text must be legible at this viewport.

    A figure passes when its smallest text is shown at >= MIN_TEXT_CSS_PX.
    """
    problems = []
    for fig in figure_text_sizes(page, url, site):
        if fig["min_text_px"] is None:
            problems.append(
                f"{fig['src']}: no text-size record (not drawn by mha_book.viz.plot?)"
            )
        elif fig["shown_text_px"] < MIN_TEXT_CSS_PX:
            problems.append(
                f"{fig['src']}: smallest text shown at {fig['shown_text_px']:.1f} px "
                f"(image {fig['natural']} px wide shown at {fig['shown']:.0f} px)"
            )
    return problems


def upscaled_figure_problems(page, url: str | None, dpr: int) -> list[str]:
    """Every figure has at least ``dpr`` image pixels per CSS pixel it is shown at.

    A screen with ``dpr`` device pixels per CSS pixel (3 on most phones, 2 on
    many laptops) draws a figure with fewer image pixels than that upscaled,
    and soft. ``mha_book.viz.plot.figure_png`` draws at 3.
    """
    _load(page, url)
    return [
        f"{fig['src']}: {fig['natural']} px wide shown at {fig['shown']:.0f} CSS px, "
        f"upscaled at {dpr} device px per CSS px"
        for fig in page.evaluate(FIGURES_JS)
        if fig["shown"] and fig["natural"] < dpr * fig["shown"] - 1
    ]


# --- the zh interface speaks Chinese ----------------------------------------------
# Latin words a zh reader may see in the page chrome: names, file types, keys.
UI_LATIN_ALLOWED = {
    "PyTorch",
    "FlashAttention",
    "MQA",
    "GQA",
    "KV",
    "BERT",
    "Transformer",  # 视觉 Transformer: the zh glossary keeps the name
    "API",
    "mha_book",
    "torch",
    "cpu",
    "Ctrl",
    "K",
    "English",
    "ipynb",
    "md",
    "pdf",
    "PDF",
    # the launch menu's services (with MHA_BOOK_REPO_URL set): names
    "Colab",
    "Binder",
}
UI_TEXT_JS = """() => {
  const areas = document.querySelectorAll(
    ".bd-header, .bd-header-article, .bd-sidebar-primary, .bd-sidebar-secondary, footer, .bd-footer");
  // Hidden text counts too (a closed dropdown menu opens on a tap); print-only does not.
  const visible = (el) => !el.closest(".onlyprint");
  const out = [];
  for (const area of areas) {
    const walker = document.createTreeWalker(area, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const el = n.parentElement;
      // Links to pages and headings carry the book's own titles, not UI strings.
      if (!visible(el) || el.closest("nav.bd-docs-nav a, nav.page-toc a, script, style")) continue;
      if (n.textContent.trim()) out.push(n.textContent.trim());
    }
    for (const el of area.querySelectorAll("[title], [aria-label], [placeholder]")) {
      if (!visible(el)) continue;
      for (const a of ["title", "aria-label", "placeholder"])
        if (el.getAttribute(a)) out.push(el.getAttribute(a));
    }
  }
  return out;
}"""


def english_ui_problems(page, url: str | None) -> list[str]:
    """Latin words in the header, sidebars and footer of a zh page that are not names."""
    _load(page, url)
    problems = []
    for text in sorted(set(page.evaluate(UI_TEXT_JS))):
        words = [
            w for w in re.findall(r"[A-Za-z_]+", text) if w not in UI_LATIN_ALLOWED
        ]
        if words:
            problems.append(f"English UI text {text!r}")
    return problems


SEARCH_FIELDS_JS = """() => [...document.querySelectorAll(
    "form.bd-search, .search-button-field, .search-button")]
  .filter((e) => { const r = e.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && getComputedStyle(e).visibility !== "hidden"; })
  .map((e) => e.className)"""


def search_field_problems(page, url: str | None) -> list[str]:
    """A page should show exactly one way into search (a scrolled sidebar counts)."""
    _load(page, url)
    shown = page.evaluate(SEARCH_FIELDS_JS)
    if len(shown) != 1:
        return [f"{len(shown)} search fields or buttons shown: {shown}"]
    return []


CODE_SCROLL_JS = """() => [...document.querySelectorAll("article.bd-article div.highlight pre")]
  .filter((pre) => !pre.closest(".cell_output") && pre.scrollWidth > pre.clientWidth + 1)
  .map((pre) => pre.textContent.split("\\n").reduce((a, l) => (l.length > a.length ? l : a), ""))"""


def code_scroll_problems(page, url: str | None) -> list[str]:
    """Code (cells and included sources, not outputs) must fit its block at 1280 px."""
    _load(page, url)
    return [
        f"code block scrolls sideways; its longest line: {line!r}"
        for line in page.evaluate(CODE_SCROLL_JS)
    ]


# --- the attention explorer (mha_book.explore) -----------------------------------
EXPLORER_TOLERANCE = 5e-4  # the page's weights are rounded to 0.001
EXPLORER_DRAWN_JS = """(index) => {
  // What the reader sees, read from the layout rather than from the widget's
  // state: each line is assigned to the query row its left end meets and the
  // key row its right end meets, and to a head by its colour (the legend's).
  const root = document.querySelectorAll(".mha-explorer")[index];
  const data = JSON.parse(root.querySelector("script.mha-explorer-data").textContent);
  const middle = (el) => { const r = el.getBoundingClientRect(); return (r.top + r.bottom) / 2; };
  const queryRows = [...root.querySelectorAll(".mha-explorer__query")].map(middle);
  const keyRows = [...root.querySelectorAll(".mha-explorer__key")].map(middle);
  const nearest = (rows, y) => {
    let best = 0;
    rows.forEach((v, i) => { if (Math.abs(v - y) < Math.abs(rows[best] - y)) best = i; });
    return [best, Math.abs(rows[best] - y)];
  };
  const lines = [...root.querySelectorAll("svg line")].map((line) => {
    const m = line.getScreenCTM();
    const at = (x, y) => new DOMPoint(+line.getAttribute(x), +line.getAttribute(y)).matrixTransform(m);
    let [a, b] = [at("x1", "y1"), at("x2", "y2")];
    if (a.x > b.x) [a, b] = [b, a];
    const [query, offQuery] = nearest(queryRows, a.y);
    const [key, offKey] = nearest(keyRows, b.y);
    const style = getComputedStyle(line);
    return {query, key, off: Math.max(offQuery, offKey), opacity: parseFloat(style.strokeOpacity),
            colour: style.stroke, shown: style.display !== "none" && style.visibility !== "hidden"};
  });
  const legend = [...root.querySelectorAll(".mha-explorer__swatch")]
    .map((s) => getComputedStyle(s, "::before").backgroundColor);
  return {
    data, lines, legend,
    layer: root.querySelector("select.mha-explorer__layer").value,
    head: root.querySelector("select.mha-explorer__head").value,
    numbers: [...root.querySelectorAll(".mha-explorer__weight")].map((n) => n.textContent.trim()),
    width: root.getBoundingClientRect().width,
  };
}"""
ACTIVE_QUERY_JS = """(index) => {
  // Where the keyboard focus is: which query token (-1: none), the tokens that
  // are tab stops (tabindex 0), and the focused element in words.
  const root = document.querySelectorAll(".mha-explorer")[index];
  const buttons = [...root.querySelectorAll(".mha-explorer__query")];
  const active = document.activeElement;
  const style = getComputedStyle(active);
  const name = (el) => el.tagName.toLowerCase() + (el.className ? "." + [...el.classList].join(".") : "")
    + (el.textContent.trim() ? ` '${el.textContent.trim().slice(0, 20)}'` : "");
  return {index: buttons.indexOf(active),
          outline: style.outlineStyle !== "none" && parseFloat(style.outlineWidth) > 0,
          stops: buttons.flatMap((b, i) => (b.tabIndex === 0 ? [i] : [])),
          headSelect: active === root.querySelector("select.mha-explorer__head"),
          next: active === window.mhaExplorerNext,
          element: name(active)};
}"""
# The control that follows the widget in the tab order, as the browser sees it:
# a probe with tabindex 0 placed right after the widget is focused, Tab is
# pressed (NEXT_MARK_JS), and the element reached is kept.
NEXT_PROBE_JS = """(index) => {
  const root = document.querySelectorAll(".mha-explorer")[index];
  const probe = document.createElement("span");
  probe.className = "mha-explorer-probe";
  probe.tabIndex = 0;
  probe.textContent = "|";
  root.after(probe);
  probe.focus();
  return document.activeElement === probe;
}"""
NEXT_MARK_JS = """() => {
  window.mhaExplorerNext = document.activeElement;
  document.querySelector(".mha-explorer-probe").remove();
}"""


def explorer_drawing(page, index: int = 0) -> dict:
    """The explorer's JSON and what it draws now: lines, numbers, selectors."""
    return page.evaluate(EXPLORER_DRAWN_JS, index)


def explorer_mismatches(
    drawn: dict, layer: int, head: int | str, query: int
) -> list[str]:
    """Compare the drawing with the JSON weights of (layer, head, query).

    With query token ``query`` selected, the widget must draw only that
    token's lines, one per key and head with a weight above zero, each as
    opaque as its weight (a missing line counts as 0), each ending at the
    middle of a token row; the numbers beside the keys are the weights (the
    mean over the heads when all heads are shown); with all heads, each head
    has its own colour, the legend's.
    """
    scale = drawn["data"].get("scale", 1)  # whole thousandths in the page
    weights = [
        [[w / scale for w in row] for row in head]
        for head in drawn["data"]["weights"][layer]
    ]  # (H, T, S)
    data = drawn["data"]
    H, S = len(weights), len(data.get("key_tokens") or data["tokens"])
    heads = list(range(H)) if head == "all" else [head]
    problems = []
    if (drawn["layer"], drawn["head"]) != (str(layer), str(head)):
        problems.append(
            f"selectors show layer {drawn['layer']}, head {drawn['head']}, "
            f"expected {layer}, {head}"
        )
    if head == "all":
        colour_head = {c: h for h, c in enumerate(drawn["legend"])}
        if len(colour_head) != H:
            problems.append(f"the legend has {len(colour_head)} colours for {H} heads")
    else:
        colour_head = None
    opacity: dict[tuple[int, int], float] = {}
    for line in drawn["lines"]:
        where = f"line query {line['query']} -> key {line['key']}"
        if not line["shown"]:
            continue
        if line["off"] > 2:
            problems.append(f"{where} ends {line['off']:.1f} px away from a token row")
        if line["query"] != query:
            problems.append(f"{where} is drawn while query {query} is selected")
            continue
        h = head if colour_head is None else colour_head.get(line["colour"])
        if h is None:
            problems.append(f"{where} has colour {line['colour']}, no head's")
            continue
        if (h, line["key"]) in opacity:
            problems.append(f"{where} of head {h} is drawn twice")
        opacity[h, line["key"]] = line["opacity"]
    if head == "all":
        colours = {line["colour"] for line in drawn["lines"] if line["shown"]}
        if len(colours) != H:
            problems.append(f"all heads drawn in {len(colours)} colours, expected {H}")
    for h in heads:
        for k in range(S):
            want, got = weights[h][query][k], opacity.get((h, k), 0.0)
            if abs(want - got) > EXPLORER_TOLERANCE:
                problems.append(
                    f"layer {layer}, head {h}, query {query}, key {k}: "
                    f"line opacity {got:.4f}, weight {want:.3f}"
                )
    for k, text in enumerate(drawn["numbers"]):
        want = sum(weights[h][query][k] for h in heads) / len(heads)
        try:
            got = float(text)
        except ValueError:
            problems.append(f"key {k}: number {text!r} is not a weight ({want:.3f})")
            continue
        if abs(want - got) > EXPLORER_TOLERANCE + 1e-9:
            problems.append(f"key {k}: number {text}, weight {want:.3f}")
    return problems


def _explorer_select(page, layer: int, head: int | str, index: int) -> None:
    root = page.locator(".mha-explorer").nth(index)
    root.locator("select.mha-explorer__layer").select_option(str(layer))
    root.locator("select.mha-explorer__head").select_option(str(head))


def _keyboard_to(page, query: int, index: int) -> list[str]:
    """Tab once from the head selector into the token list, then arrow keys to ``query``."""
    root = page.locator(".mha-explorer").nth(index)
    root.locator("select.mha-explorer__head").focus()
    page.keyboard.press("Tab")
    active = page.evaluate(ACTIVE_QUERY_JS, index)
    if active["index"] < 0:
        return [
            f"Tab from the head selector reached {active['element']}, no query token"
        ]
    key = "ArrowDown" if query > active["index"] else "ArrowUp"
    for _ in range(abs(query - active["index"])):
        page.keyboard.press(key)
    active = page.evaluate(ACTIVE_QUERY_JS, index)
    if active["index"] != query:
        return [
            f"the arrow keys reached {active['element']}, expected query token {query}"
        ]
    if not active["outline"]:
        return [f"the focused query token {query} shows no outline"]
    return []


def explorer_problems(
    page, *, layer: int, head: int | str, query: int, via: str = "hover", index: int = 0
) -> list[str]:
    """Select ``layer`` and ``head``, reach query token ``query``, compare.

    ``via``: ``"hover"`` (the mouse), ``"keyboard"`` (one Tab from the head
    selector into the token list, then the arrow keys; the focused token must
    show a visible outline) or ``"tap"`` (a touch screen).
    """
    if via not in ("hover", "tap", "keyboard"):
        raise ValueError(f"via must be 'hover', 'keyboard' or 'tap', got {via!r}")
    _explorer_select(page, layer, head, index)
    token = page.locator(".mha-explorer").nth(index).locator(".mha-explorer__query")
    if via == "hover":
        token.nth(query).hover()
    elif via == "tap":
        token.nth(query).tap()
    else:
        page.mouse.move(0, 0)  # no hover
        problems = _keyboard_to(page, query, index)
        if problems:
            return problems
    return explorer_mismatches(explorer_drawing(page, index), layer, head, query)


def explorer_latest_wins_problems(
    page,
    *,
    layer: int,
    head: int | str,
    first: int,
    then: int,
    via: str = "hover",
    index: int = 0,
) -> list[str]:
    """The latest interaction decides which query token's row is drawn.

    Hover (``via="hover"``) or tap (``"tap"``) query token ``first``: its
    row is drawn. Then reach token ``then`` with the keyboard (as in
    :func:`explorer_problems`): ``then``'s row is drawn, although the
    pointer may still rest on ``first``. After a hover, also: the pointer
    leaving keeps the focused token's row, hovering ``first`` again draws
    ``first``'s row, and leaving gives the row back to ``then``.
    """
    if via not in ("hover", "tap"):
        raise ValueError(f"via must be 'hover' or 'tap', got {via!r}")
    if first == then:
        raise ValueError(f"first and then must differ, got {first} for both")
    _explorer_select(page, layer, head, index)
    token = page.locator(".mha-explorer").nth(index).locator(".mha-explorer__query")
    if via == "hover":
        page.mouse.move(0, 0)  # (a touch screen has no mouse: no stale position)
    getattr(token.nth(first), via)()

    def compare(query: int, when: str) -> list[str]:
        drawn = explorer_drawing(page, index)
        return [f"{when}: {p}" for p in explorer_mismatches(drawn, layer, head, query)]

    problems = compare(first, f"after a {via} on query {first}")
    keyboard = _keyboard_to(page, then, index)
    if keyboard:
        return problems + keyboard
    problems += compare(then, f"{via} on query {first}, then the keyboard to {then}")
    if via == "hover":
        page.mouse.move(0, 0)
        problems += compare(then, f"the pointer left query {first}, {then} focused")
        token.nth(first).hover()
        problems += compare(first, f"hovering query {first} while {then} is focused")
        page.mouse.move(0, 0)
        problems += compare(then, f"the pointer left query {first} again")
    return problems


def explorer_keyboard_problems(page, index: int = 0) -> list[str]:
    """The token list is one tab stop, moved by the arrow keys (a roving tabindex).

    Exactly one query token has tabindex 0. One Tab from the head selector
    reaches it; End, ArrowUp, Home and ArrowDown move the focus between the
    tokens and the tab stop with it; one Tab from a token reaches the next
    control after the widget (found by the browser itself, see
    NEXT_PROBE_JS); Shift+Tab comes back to the token last focused, and one
    more Shift+Tab reaches the head selector.
    """
    root = page.locator(".mha-explorer").nth(index)
    T = root.locator(".mha-explorer__query").count()
    page.mouse.move(0, 0)
    if not page.evaluate(NEXT_PROBE_JS, index):
        return ["the probe after the widget could not be focused"]
    page.keyboard.press("Tab")
    page.evaluate(NEXT_MARK_JS)
    problems = []
    stops = page.evaluate(ACTIVE_QUERY_JS, index)["stops"]
    if len(stops) != 1:
        problems.append(
            f"{len(stops)} query tokens are tab stops (tabindex 0): {stops[:8]}, expected 1"
        )
    root.locator("select.mha-explorer__head").focus()
    page.keyboard.press("Tab")
    active = page.evaluate(ACTIVE_QUERY_JS, index)
    if active["index"] < 0 or active["index"] not in stops:
        return problems + [
            f"Tab from the head selector reached {active['element']}, "
            f"expected the tab stop of the token list {stops[:8]}"
        ]
    moves = [("End", T - 1), ("ArrowUp", max(T - 2, 0)), ("Home", 0)]
    moves += [("ArrowDown", min(1, T - 1)), ("ArrowDown", min(2, T - 1))]
    for key, want in moves:
        page.keyboard.press(key)
        active = page.evaluate(ACTIVE_QUERY_JS, index)
        if active["index"] != want:
            return problems + [
                f"{key} moved the focus to {active['element']}, expected query token {want}"
            ]
        if active["stops"] != [want]:
            problems.append(
                f"after {key} to query token {want} the tab stops are "
                f"{active['stops'][:8]}, expected [{want}]"
            )
    last = moves[-1][1]
    page.keyboard.press("Tab")
    active = page.evaluate(ACTIVE_QUERY_JS, index)
    if not active["next"]:
        return problems + [
            f"Tab from query token {last} reached {active['element']}, expected the "
            "next control after the widget"
        ]
    page.keyboard.press("Shift+Tab")
    active = page.evaluate(ACTIVE_QUERY_JS, index)
    if active["index"] != last:
        return problems + [
            f"Shift+Tab back into the widget reached {active['element']}, expected "
            f"query token {last} (the one last focused)"
        ]
    page.keyboard.press("Shift+Tab")
    if not page.evaluate(ACTIVE_QUERY_JS, index)["headSelect"]:
        problems.append(
            f"Shift+Tab from query token {last} reached "
            f"{page.evaluate(ACTIVE_QUERY_JS, index)['element']}, expected the head selector"
        )
    return problems


# --- accessibility -----------------------------------------------------------------
AXE_IMPACTS = ("critical", "serious")
# Open every collapsed cell and solution, so that axe checks them too; a
# solution opens through its own button, as a reader opens it.
OPEN_ALL_JS = """() => {
  for (const d of document.querySelectorAll("details")) d.open = true;
  for (const b of document.querySelectorAll(".toggle-hidden > .admonition-title > button.toggle-button")) b.click();
  // book.js gives the opened code blocks that scroll their tab stops 50 ms later.
  return new Promise((resolve) => setTimeout(resolve, 100));
}"""
# Code (highlighted blocks, inline literals, API signatures) is thousands of
# small elements whose contrast depends only on their colour, their background
# and their font, and color-contrast is most of axe's time. Only the first
# element of each such style is checked (on the whole site: `seen` carries the
# styles already checked on earlier pages): color-contrast runs on its own,
# with the repeats hidden for that run (CSS visibility, which keeps the
# layout). Every other rule runs first, with nothing hidden. (Leaving the
# repeats out through axe's `exclude` made every rule slow instead: axe
# compares each node it gathers with every excluded one; 2 s per rule on a
# chapter.)
CODE_STYLES_JS = """(seen) => {
  const known = new Set(seen), fresh = [];
  const background = (el) => {
    for (let a = el; a; a = a.parentElement) {
      const bg = getComputedStyle(a).backgroundColor;
      if (bg !== "rgba(0, 0, 0, 0)" && bg !== "transparent") return bg;
    }
    return "none";
  };
  const code = "div.highlight pre span, dt.sig span, dt.sig code, code.literal, code.literal span";
  for (const el of document.querySelectorAll(code)) {
    if (!el.textContent.trim() || el.children.length) continue;
    const s = getComputedStyle(el);
    const key = [s.color, background(el), s.fontSize, s.fontWeight, s.opacity].join("|");
    if (known.has(key)) el.setAttribute("data-axe-repeat", "");
    else { known.add(key); fresh.push(key); }
  }
  return fresh;
}"""
HIDE_REPEATS_JS = """(hide) => {
  const id = "axe-hide-repeats";
  document.getElementById(id)?.remove();
  if (!hide) return;
  const style = document.createElement("style");
  style.id = id;
  style.textContent = "[data-axe-repeat] { visibility: hidden !important; }";
  document.head.append(style);
}"""
NO_CONTRAST = {"rules": {"color-contrast": {"enabled": False}}}
ONLY_CONTRAST = {"runOnly": ["color-contrast"]}


def axe_violations(page, url: str | None = None, seen: set | None = None) -> list[dict]:
    """axe-core's critical and serious violations on the page, everything opened.

    Two runs (see CODE_STYLES_JS): every rule but color-contrast, then
    color-contrast with the repeated code styles hidden.

    ``seen``: the code styles already checked (see CODE_STYLES_JS); updated.
    """
    from axe_playwright_python.sync_playwright import Axe

    _load(page, url)
    page.evaluate(OPEN_ALL_JS)
    fresh = page.evaluate(CODE_STYLES_JS, sorted(seen or ()))
    if seen is not None:
        seen.update(fresh)
    page.evaluate(Axe().axe_script)  # axe-core, once for both runs
    violations = []
    for options, hide in ((NO_CONTRAST, False), (ONLY_CONTRAST, True)):
        page.evaluate(HIDE_REPEATS_JS, hide)
        result = page.evaluate(
            "(options) => axe.run(document, options)",
            {**options, "resultTypes": ["violations"]},
        )
        violations += [v for v in result["violations"] if v["impact"] in AXE_IMPACTS]
    page.evaluate(HIDE_REPEATS_JS, False)
    return violations


def axe_problems(page, url: str | None = None, seen: set | None = None) -> list[str]:
    return [
        f"{v['id']} ({v['impact']}): {v['help']}; e.g. {v['nodes'][0]['html'][:160]}"
        f" ({len(v['nodes'])} element(s))"
        for v in axe_violations(page, url, seen)
    ]


ALT_JS = """() => [...document.querySelectorAll("article.bd-article img")]
  .map((img) => ({src: img.getAttribute("src"), alt: img.getAttribute("alt")}))"""
GENERIC_ALT = {
    "image", "figure", "picture", "graph", "chart", "plot", "diagram", "output",
    "图", "图片", "图像", "插图", "图表", "示意图", "输出",
}  # fmt: skip
CJK = re.compile(r"[\u4e00-\u9fff]")


def alt_text_problems(page, lang: str, url: str | None = None) -> list[str]:
    """Every image in the content says what it shows, in the page's language."""
    _load(page, url)
    problems = []
    for img in page.evaluate(ALT_JS):
        alt, src = (img["alt"] or "").strip(), img["src"]
        words = alt.strip(" .。").lower()
        if not alt:
            problems.append(f"{src}: no alt text")
        elif words in GENERIC_ALT or re.search(r"\.(png|jpe?g|svg|gif)$|_images/", alt):
            problems.append(f"{src}: generic alt text {alt!r}")
        elif lang == "zh" and len(CJK.findall(alt)) < 8:
            problems.append(f"{src}: alt text not in Chinese: {alt!r}")
        elif lang == "en" and (CJK.search(alt) or len(alt.split()) < 5):
            problems.append(f"{src}: alt text not an English description: {alt!r}")
    return problems


# The outline of the content (the article); the page chrome adds a "Contents"
# h2 (the theme's in-page table of contents) and a print-only h1, which the
# page-wide count below leaves out because no screen reader sees it.
HEADINGS_JS = """() => ({
  // search.html has no article: its content is the whole <main>.
  article: [...document.querySelectorAll(document.querySelector("article.bd-article")
      ? "article.bd-article :is(h1, h2, h3, h4, h5, h6)" : "main :is(h1, h2, h3, h4, h5, h6)")]
    .map((h) => ({level: +h.tagName[1], text: h.textContent.trim().slice(0, 60)})),
  h1: [...document.querySelectorAll("h1")].filter((h) => h.checkVisibility()).length,
})"""


def heading_problems(page, url: str | None = None) -> list[str]:
    """One h1 on the page and in the content, first; no level skipped going down."""
    _load(page, url)
    found = page.evaluate(HEADINGS_JS)
    headings = found["article"]
    problems = []
    if found["h1"] != 1:
        problems.append(f"{found['h1']} visible h1 headings on the page")
    h1 = [h for h in headings if h["level"] == 1]
    if len(h1) != 1:
        problems.append(
            f"{len(h1)} h1 headings in the content: {[h['text'] for h in h1]}"
        )
    if headings and headings[0]["level"] != 1:
        problems.append(f"the first heading is h{headings[0]['level']}")
    for before, h in zip(headings, headings[1:]):
        if h["level"] > before["level"] + 1:
            problems.append(
                f"h{before['level']} {before['text']!r} is followed by "
                f"h{h['level']} {h['text']!r}"
            )
    return problems


def tab_to(page, selector: str, limit: int = 400) -> bool:
    """Press Tab until the focused element matches ``selector``."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("(s) => !!document.activeElement?.matches(s)", selector):
            return True
    return False
