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
