// Attention explorer (mha_book.explore): the tokens in two columns, queries
// on the left and keys on the right, joined by one line per (query, key)
// whose opacity is the attention weight. A layer and a head (or all heads,
// each in its own colour) are chosen with two native selects; hovering,
// tapping or focusing a query token keeps only its lines and writes its
// weights next to the keys. The latest of these wins: a token reached with
// the keyboard shows its row even while the pointer rests on another, and a
// pointer that leaves gives the row back to the focused token.
//
// Keyboard: the query tokens are one listbox with a roving tabindex (the
// WAI-ARIA pattern): only one token is a tab stop (tabindex 0, the last one
// focused), ArrowUp/ArrowDown/Home/End move between the tokens, and Tab
// leaves the list for the next control.
//
// Single source: mha_book/viz/static/explorer.js. The book's build copies it into
// _static and loads it on the pages that show an explorer; the HTML that
// mha_book.explore returns inlines it too, so a notebook needs nothing else.
// Whichever copy runs first defines window.mhaExplorer; a later copy only
// mounts the widgets it finds. Every word shown comes from the data (the
// Python side picks the page's language): nothing here is in English.
(function () {
  "use strict";
  if (window.mhaExplorer) {
    window.mhaExplorer.mountAll();
    return;
  }
  let count = 0; // widgets on the page, for unique element ids

  // One hue per head; the lightness suits the theme (explorer.css).
  function headColour(h, H) {
    return `hsl(${Math.round((360 * h) / H)}, 80%, var(--mha-explorer-lightness, 45%))`;
  }

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function select(id, label, options, value) {
    const wrap = el("span", "mha-explorer__control");
    const lab = el("label", "", label);
    lab.htmlFor = id;
    const box = el("select", "");
    box.id = id;
    for (const [optValue, optText] of options) {
      const opt = el("option", "", optText);
      opt.value = String(optValue);
      box.append(opt);
    }
    box.value = String(value);
    wrap.append(lab, box);
    return [wrap, box];
  }

  function mount(root) {
    if (root.dataset.mounted) return;
    const source = root.querySelector("script.mha-explorer-data");
    if (!source) return;
    root.dataset.mounted = "true";
    const data = JSON.parse(source.textContent);
    const { tokens, labels } = data;
    // Whole thousandths in the page ("scale": 1000): back to weights in [0, 1].
    const scale = data.scale || 1;
    const weights = data.weights.map((l) => l.map((h) => h.map((row) => row.map((w) => w / scale))));
    const L = weights.length;
    const H = weights[0].length;
    const T = tokens.length;
    const id = `mha-explorer-${++count}`;
    const state = {
      layer: data.layer,
      head: data.head, // a number, or "all"
      hovered: null, // the token under the pointer
      focused: null, // the token with the keyboard focus
      shown: null, // the token whose row is drawn: the latest interaction's
      stop: 0, // the token that is the list's tab stop
    };

    root.setAttribute("role", "group");
    root.setAttribute("aria-label", data.title || labels.widget);
    root.style.setProperty("--mha-explorer-rows", T);
    if (data.title) root.append(el("p", "mha-explorer__title", data.title));

    const controls = el("div", "mha-explorer__controls");
    const layerOptions = [...Array(L).keys()].map((l) => [l, String(l)]);
    const headOptions = [["all", labels.all_heads]].concat(
      [...Array(H).keys()].map((h) => [h, String(h)]),
    );
    const [layerWrap, layerBox] = select(`${id}-layer`, labels.layer, layerOptions, state.layer);
    const [headWrap, headBox] = select(`${id}-head`, labels.head, headOptions, state.head);
    layerBox.classList.add("mha-explorer__layer");
    headBox.classList.add("mha-explorer__head");
    controls.append(layerWrap, headWrap);
    const hint = el("p", "mha-explorer__hint", labels.hint);

    const board = el("div", "mha-explorer__board");
    const queryColumnName = el("span", "mha-explorer__heading", labels.queries);
    queryColumnName.id = `${id}-queries`;
    board.append(
      queryColumnName,
      el("span", "mha-explorer__heading mha-explorer__mean", ""),
      el("span", "mha-explorer__heading mha-explorer__heading--keys", labels.keys),
    );
    const meanNote = board.children[1];
    const queries = el("div", "mha-explorer__queries");
    queries.setAttribute("role", "listbox");
    queries.setAttribute("aria-labelledby", queryColumnName.id);
    const canvas = el("div", "mha-explorer__canvas");
    const keys = el("div", "mha-explorer__keys");
    // Written as markup so the parser gives it the SVG namespace; every row
    // of the token columns is one unit of the viewBox.
    canvas.innerHTML =
      `<svg class="mha-explorer__lines" viewBox="0 0 100 ${T}" ` +
      `preserveAspectRatio="none" aria-hidden="true" focusable="false"></svg>`;
    const svg = canvas.firstChild;
    const buttons = tokens.map((token, i) => {
      const button = el("button", "mha-explorer__query", token);
      button.type = "button";
      button.title = token;
      button.dataset.index = i;
      button.setAttribute("role", "option");
      queries.append(button);
      return button;
    });
    const numbers = tokens.map((token) => {
      const row = el("div", "mha-explorer__key");
      const number = el("span", "mha-explorer__weight", "");
      const word = el("span", "mha-explorer__token", token);
      word.title = token;
      row.append(number, word);
      keys.append(row);
      return number;
    });
    board.append(queries, canvas, keys);
    const legend = el("div", "mha-explorer__legend");
    legend.append(el("span", "", `${labels.head}:`));
    for (let h = 0; h < H; h++) {
      const item = el("span", "mha-explorer__swatch", String(h));
      item.style.setProperty("--mha-explorer-swatch", headColour(h, H));
      legend.append(item);
    }
    root.append(controls, hint, board, legend);

    function draw() {
      const l = state.layer;
      const all = state.head === "all";
      const heads = all ? [...Array(H).keys()] : [state.head];
      const query = state.shown;
      const rows = query === null ? [...Array(T).keys()] : [query];
      const NS = svg.namespaceURI;
      const lines = [];
      for (const h of heads) {
        for (const i of rows) {
          for (let k = 0; k < T; k++) {
            const w = weights[l][h][i][k];
            if (w <= 0) continue; // invisible anyway: a missing line means 0
            const line = document.createElementNS(NS, "line");
            line.setAttribute("x1", "0");
            line.setAttribute("y1", String(i + 0.5));
            line.setAttribute("x2", "100");
            line.setAttribute("y2", String(k + 0.5));
            line.setAttribute("stroke-opacity", String(w));
            line.setAttribute("vector-effect", "non-scaling-stroke");
            if (all) line.style.stroke = headColour(h, H);
            lines.push(line);
          }
        }
      }
      svg.replaceChildren(...lines);
      for (let k = 0; k < T; k++) {
        let text = "";
        if (query !== null) {
          let sum = 0;
          for (const h of heads) sum += weights[l][h][query][k];
          text = (sum / heads.length).toFixed(3);
        }
        numbers[k].textContent = text;
      }
      buttons.forEach((b, i) => {
        b.classList.toggle("mha-explorer__query--active", i === query);
        b.setAttribute("aria-selected", String(i === query));
        b.tabIndex = i === state.stop ? 0 : -1; // one tab stop: the roving tabindex
      });
      meanNote.textContent = all && query !== null ? labels.mean : "";
      root.classList.toggle("mha-explorer--all", all);
    }

    layerBox.addEventListener("change", () => {
      state.layer = Number(layerBox.value);
      draw();
    });
    headBox.addEventListener("change", () => {
      state.head = headBox.value === "all" ? "all" : Number(headBox.value);
      draw();
    });
    // Pointer events rather than mouse events: a touch ends with pointerleave,
    // so a tap leaves no hover behind (the tap focuses the token instead).
    buttons.forEach((button, i) => {
      button.addEventListener("pointerenter", () => {
        state.hovered = i;
        state.shown = i;
        draw();
      });
      button.addEventListener("pointerleave", () => {
        state.hovered = null;
        state.shown = state.focused;
        draw();
      });
      button.addEventListener("focus", () => {
        state.focused = i;
        state.shown = i;
        state.stop = i;
        draw();
      });
      button.addEventListener("blur", () => {
        state.focused = null;
        state.shown = state.hovered;
        draw();
      });
      // Safari does not focus a tapped button: do it, so a tap selects too.
      button.addEventListener("click", () => button.focus());
      button.addEventListener("keydown", (event) => {
        const step = { ArrowDown: 1, ArrowUp: -1 }[event.key];
        const to = { Home: 0, End: T - 1 }[event.key] ?? (step ? i + step : null);
        if (to === null || to < 0 || to >= T) return;
        event.preventDefault();
        buttons[to].focus();
      });
    });
    draw();
  }

  function mountAll() {
    document.querySelectorAll(".mha-explorer").forEach(mount);
  }

  window.mhaExplorer = { mount, mountAll };
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", mountAll);
  }
  mountAll(); // the widgets already parsed (an inline copy runs after its widget)
})();
