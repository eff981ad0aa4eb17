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
//
// Four steps, one function each: readData (the page's JSON), build (the
// elements), draw (the lines and weights for a state) and wire (the events,
// which change the state and draw again); mount runs them for one widget.
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

  // The widget's data: the JSON in the page, weights back in [0, 1].
  function readData(root) {
    const source = root.querySelector("script.mha-explorer-data");
    if (!source) return null;
    const data = JSON.parse(source.textContent);
    // Whole thousandths in the page ("scale": 1000): back to weights in [0, 1].
    const scale = data.scale || 1;
    data.weights = data.weights.map((l) => l.map((h) => h.map((row) => row.map((w) => w / scale))));
    return data;
  }

  // Building: the controls, the hint, the two token columns with the lines
  // between them, and the legend. Returns the elements that drawing and the
  // events use.
  function build(root, data, id) {
    const { tokens, labels, weights } = data;
    // Cross-attention (chapter 16) has its own key tokens; self-attention's
    // keys are the query tokens.
    const keyTokens = data.key_tokens || tokens;
    const L = weights.length;
    const H = weights[0].length;
    const rows = Math.max(tokens.length, keyTokens.length);
    root.setAttribute("role", "group");
    root.setAttribute("aria-label", data.title || labels.widget);
    root.style.setProperty("--mha-explorer-rows", rows);
    if (data.title) root.append(el("p", "mha-explorer__title", data.title));

    const controls = el("div", "mha-explorer__controls");
    const layerOptions = [...Array(L).keys()].map((l) => [l, String(l)]);
    const headOptions = [["all", labels.all_heads]].concat(
      [...Array(H).keys()].map((h) => [h, String(h)]),
    );
    const [layerWrap, layerBox] = select(`${id}-layer`, labels.layer, layerOptions, data.layer);
    const [headWrap, headBox] = select(`${id}-head`, labels.head, headOptions, data.head);
    layerBox.classList.add("mha-explorer__layer");
    headBox.classList.add("mha-explorer__head");
    controls.append(layerWrap, headWrap);
    const hint = el("p", "mha-explorer__hint", labels.hint);

    const board = el("div", "mha-explorer__board");
    const queryColumnName = el("span", "mha-explorer__heading", labels.queries);
    queryColumnName.id = `${id}-queries`;
    const meanNote = el("span", "mha-explorer__heading mha-explorer__mean", "");
    board.append(
      queryColumnName,
      meanNote,
      el("span", "mha-explorer__heading mha-explorer__heading--keys", labels.keys),
    );
    const queries = el("div", "mha-explorer__queries");
    queries.setAttribute("role", "listbox");
    queries.setAttribute("aria-labelledby", queryColumnName.id);
    const canvas = el("div", "mha-explorer__canvas");
    const keys = el("div", "mha-explorer__keys");
    // Written as markup so the parser gives it the SVG namespace; every row
    // of the token columns is one unit of the viewBox.
    canvas.innerHTML =
      `<svg class="mha-explorer__lines" viewBox="0 0 100 ${rows}" ` +
      `preserveAspectRatio="none" aria-hidden="true" focusable="false"></svg>`;
    const buttons = tokens.map((token, i) => {
      const button = el("button", "mha-explorer__query", token);
      button.type = "button";
      button.title = token;
      button.dataset.index = i;
      button.setAttribute("role", "option");
      queries.append(button);
      return button;
    });
    const numbers = keyTokens.map((token) => {
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
    return { root, layerBox, headBox, svg: canvas.firstChild, buttons, numbers, meanNote };
  }

  // Drawing: one line per (query, key) of the chosen layer and head(s), as
  // opaque as its weight; with a query shown, only its row, and its weights
  // (the mean over the heads drawn) beside the keys.
  function draw(view, weights, state) {
    const H = weights[0].length;
    const T = view.buttons.length;
    const S = view.numbers.length; // keys: T in self-attention
    const l = state.layer;
    const all = state.head === "all";
    const heads = all ? [...Array(H).keys()] : [state.head];
    const query = state.shown;
    const rows = query === null ? [...Array(T).keys()] : [query];
    const NS = view.svg.namespaceURI;
    const lines = [];
    for (const h of heads) {
      for (const i of rows) {
        for (let k = 0; k < S; k++) {
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
    view.svg.replaceChildren(...lines);
    for (let k = 0; k < S; k++) {
      let text = "";
      if (query !== null) {
        let sum = 0;
        for (const h of heads) sum += weights[l][h][query][k];
        text = (sum / heads.length).toFixed(3);
      }
      view.numbers[k].textContent = text;
    }
    view.buttons.forEach((b, i) => {
      b.classList.toggle("mha-explorer__query--active", i === query);
      b.setAttribute("aria-selected", String(i === query));
      b.tabIndex = i === state.stop ? 0 : -1; // one tab stop: the roving tabindex
    });
    view.meanNote.textContent = all && query !== null ? view.meanLabel : "";
    view.root.classList.toggle("mha-explorer--all", all);
  }

  // Events: the two selects, and hover, focus, tap and the arrow keys on the
  // query tokens. Each changes the state, then redraws.
  function wire(view, state, redraw) {
    const { layerBox, headBox, buttons } = view;
    const T = buttons.length;
    layerBox.addEventListener("change", () => {
      state.layer = Number(layerBox.value);
      redraw();
    });
    headBox.addEventListener("change", () => {
      state.head = headBox.value === "all" ? "all" : Number(headBox.value);
      redraw();
    });
    // Pointer events rather than mouse events: a touch ends with pointerleave,
    // so a tap leaves no hover behind (the tap focuses the token instead).
    buttons.forEach((button, i) => {
      button.addEventListener("pointerenter", () => {
        state.hovered = i;
        state.shown = i;
        redraw();
      });
      button.addEventListener("pointerleave", () => {
        state.hovered = null;
        state.shown = state.focused;
        redraw();
      });
      button.addEventListener("focus", () => {
        state.focused = i;
        state.shown = i;
        state.stop = i;
        redraw();
      });
      button.addEventListener("blur", () => {
        state.focused = null;
        state.shown = state.hovered;
        redraw();
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
  }

  function mount(root) {
    if (root.dataset.mounted) return;
    const data = readData(root);
    if (!data) return;
    root.dataset.mounted = "true";
    const view = build(root, data, `mha-explorer-${++count}`);
    view.meanLabel = data.labels.mean;
    const state = {
      layer: data.layer,
      head: data.head, // a number, or "all"
      hovered: null, // the token under the pointer
      focused: null, // the token with the keyboard focus
      shown: null, // the token whose row is drawn: the latest interaction's
      stop: 0, // the token that is the list's tab stop
    };
    const redraw = () => draw(view, data.weights, state);
    wire(view, state, redraw);
    redraw();
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
