// A tap on a figure opens the image at its full size: on a phone a wide
// figure is shrunk to the screen, and its labels are easier to read when the
// picture can be zoomed on its own.
document.addEventListener("DOMContentLoaded", () => {
  const zh = document.documentElement.lang.startsWith("zh");
  for (const img of document.querySelectorAll("article.bd-article figure img, article.bd-article .cell_output img")) {
    if (img.closest("a")) continue;
    const link = document.createElement("a");
    link.href = img.getAttribute("src");
    link.className = "book-full-image";
    link.title = zh ? "查看原尺寸图片" : "Open the full-size image";
    img.replaceWith(link);
    link.appendChild(img);
  }
  // A solution's title ("Solution to Exercise 3") links back to its exercise,
  // which sits just above it; on a phone a tap on that link jumped instead of
  // opening the solution, so the title keeps its words and loses the link.
  for (const link of document.querySelectorAll(".solution > .admonition-title a")) {
    link.replaceWith(...link.childNodes);
  }
  // Screen readers name the solutions' toggle buttons in the page's language:
  // sphinx-togglebutton labels them "Toggle hidden content" in every edition.
  // A button is named by the solution's title. (A collapsed cell's summary has
  // no such label: book_build drops myst-nb's, so its visible words name it.)
  for (const button of document.querySelectorAll(".admonition-title > button.toggle-button")) {
    const title = button.parentElement.textContent.trim();
    button.setAttribute("aria-label", (zh ? "展开或收起：" : "Show or hide: ") + title);
  }
  // A code block that scrolls sideways takes the focus, so the keyboard can
  // scroll it. The theme does it on load, but a block inside a collapsed cell
  // or a closed solution does not scroll yet then: do it again when one opens.
  const tabStops = () => {
    for (const pre of document.querySelectorAll("article.bd-article pre")) {
      if (pre.scrollWidth > pre.clientWidth + 1) pre.setAttribute("tabindex", "0");
    }
  };
  document.addEventListener("toggle", tabStops, true);  // <details> of a collapsed cell
  document.addEventListener("click", (event) => {  // a solution's button or title
    if (event.target.closest(".toggle-button, .admonition-title")) setTimeout(tabStops, 50);
  });
  document.addEventListener("keyup", (event) => {
    if (event.target.closest(".toggle-button, summary")) setTimeout(tabStops, 50);
  });
});

// Bootstrap (about 24 KiB gzipped, 80 KiB of script to run) draws the theme's
// tooltips and opens its two menus, colour mode and download; nothing needs it
// before the reader points at, focuses or taps one of those controls, so the
// pages leave it out (docs/_templates/layout.html) and it loads then. Its
// file sits beside the theme's script, with the same digest.
(() => {
  const theme = document.querySelector('script[src*="pydata-sphinx-theme.js"]');
  if (!theme || window.bootstrap) return;
  const src = theme.src.replace("pydata-sphinx-theme.js", "bootstrap.js");
  const loaded = [];  // run once Bootstrap is here
  let loading = null;
  const load = () => (loading ??= new Promise((resolve, reject) => {
    const script = Object.assign(document.createElement("script"), {src, onerror: reject});
    script.onload = () => { for (const run of loaded) run(); resolve(); };
    document.head.append(script);
  }));
  // A control under the pointer or in focus starts the load, so that it is
  // usually done by the time the reader clicks or presses Enter. Once loaded,
  // Bootstrap has made every tooltip (with its delay); one whose control is
  // still pointed at or focused shows now.
  const approach = (event) => {
    const control = event.target.closest?.("[data-bs-toggle]");
    if (!control || window.bootstrap) return;
    load().then(() => {
      const tip = control.closest('[data-bs-toggle="tooltip"]');
      if (tip?.matches(":hover, :focus-within")) bootstrap.Tooltip.getInstance(tip)?.show();
    });
  };
  document.addEventListener("pointerover", approach, true);
  document.addEventListener("focusin", approach, true);
  // A menu's button clicked (or Enter, Space) before Bootstrap is here: open it once loaded.
  document.addEventListener("click", (event) => {
    const button = event.target.closest?.('[data-bs-toggle="dropdown"]');
    if (!button || window.bootstrap) return;
    event.preventDefault();
    event.stopPropagation();
    load().then(() => bootstrap.Dropdown.getOrCreateInstance(button).toggle());
  }, true);
  // The back-to-top button shows while the reader scrolls up, below the
  // header. bootstrap.js sets it up once loaded; until then these few lines,
  // a copy of its own, do.
  const back = document.getElementById("pst-back-to-top");
  const header = document.querySelector(".bd-header");
  if (!back || !header) return;
  let headerBottom = null, previous = scrollY;  // measured at the first scroll, not at load
  const toTop = () => {
    document.body.scrollTop = 0;
    document.documentElement.scrollTop = 0;
  };
  const onScroll = () => {
    headerBottom ??= header.getBoundingClientRect().bottom + scrollY;
    back.style.display = previous > scrollY && scrollY > headerBottom ? "block" : "none";
    previous = scrollY;
  };
  back.addEventListener("click", toTop);
  addEventListener("scroll", onScroll, {passive: true});
  loaded.push(() => {  // Bootstrap's own handlers take over
    back.removeEventListener("click", toTop);
    removeEventListener("scroll", onScroll);
  });
})();
