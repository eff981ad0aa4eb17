/* The book's search ranking, in Sphinx's search page (tools/build/search.py
 * appends the edition's index: Search.setIndex({book: 1, ...})).
 *
 * Replaces Search.query of Sphinx's searchtools.js; the results are shown by
 * Sphinx's own code (its list, its snippets, its messages in the page's
 * language). A page's score is BM25 over every query word, each word weighed
 * by where it stands on the page (title > heading > text > code), times the
 * share of the query's words the page holds, times the page's prior (lists
 * and definitions below chapters). A query that is a glossary name (a term,
 * its other-language name, a variant) is also searched as each of the entry's
 * names, and the page the entry points to (the one that teaches it) comes
 * first. An exact API name opens its entry first.
 */
"use strict";

const BookSearch = {
  K1: 1.2,
  B: 0.75,
  run: /[a-z0-9_]+|[\u3400-\u9fff]+/g,

  norm: (text) => text.normalize("NFKC").toLowerCase(),
  // Glossary names and queries compared without spaces, hyphens or case.
  squash: (text) => BookSearch.norm(text).replace(/[\s\-‐–—_·・]+/g, ""),

  stem: (w) => {
    if (w.length > 4 && w.endsWith("ies")) return w.slice(0, -3) + "y";
    if (w.length > 3 && w.endsWith("s") && !/(ss|us|is|as)$/.test(w)) return w.slice(0, -1);
    return w;
  },

  // Chinese: the longest words the index holds; a character it does not hold
  // as a word stays (and is looked for inside longer words).
  cutHan: (run, terms) => {
    const out = [];
    for (let i = 0; i < run.length; ) {
      let j = Math.min(run.length, i + 8);
      while (j > i + 1 && !Object.hasOwn(terms, run.slice(i, j))) j--;
      out.push(run.slice(i, j));
      i = j;
    }
    return out;
  },

  words: (text, terms) => {
    const out = [];
    for (const run of BookSearch.norm(text).match(BookSearch.run) || []) {
      if (/[\u3400-\u9fff]/.test(run)) out.push(...BookSearch.cutHan(run, terms));
      else out.push(BookSearch.stem(run));
    }
    return [...new Set(out)];
  },

  // The index words a query word stands for: itself (1), else words that
  // start with it (Latin) or hold it (Chinese), worth less.
  expand: (word, terms, vocab) => {
    if (Object.hasOwn(terms, word)) return [[word, 1]];
    const han = /[\u3400-\u9fff]/.test(word);
    if (!han && word.length < 3) return [];
    const found = vocab.filter((t) => (han ? t.includes(word) : t.startsWith(word)));
    return found.slice(0, 40).map((t) => [t, 0.5]);
  },

  // The section whose heading holds the most query words (0: the page's top).
  section: (words, page) => {
    let [best, most] = [0, 0];
    page[2].forEach(([, heading], s) => {
      const h = BookSearch.squash(heading);
      const held = words.filter((w) => h.includes(w)).length;
      if (held > most) [best, most] = [s, held];
    });
    return best;
  },

  // Scores of every page for one reading of the query: {page: [score, section]}.
  scoreReading: (text, index, vocab) => {
    const { terms, lens, prior } = index;
    const n = lens.length;
    const avg = lens.reduce((a, b) => a + b, 0) / n;
    const words = BookSearch.words(text, terms);
    const pages = {};
    for (const word of words) {
      const seen = {};
      for (const [term, worth] of BookSearch.expand(word, terms, vocab)) {
        const post = terms[term];
        const df = post.length / 2;
        const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
        for (let i = 0; i < post.length; i += 2) {
          const [p, w] = [post[i], post[i + 1] / 2];
          const tf = (w * (BookSearch.K1 + 1)) / (w + BookSearch.K1 * (1 - BookSearch.B + (BookSearch.B * lens[p]) / avg));
          const score = worth * idf * tf;
          if (!seen[p] || score > seen[p][0]) seen[p] = [score, worth];
        }
      }
      for (const [p, [score, worth]] of Object.entries(seen)) {
        const page = (pages[p] ||= { score: 0, held: 0 });
        page.score += score;
        page.held += worth === 1 ? 1 : 0.25; // a longer word holding it: weaker evidence
      }
    }
    const out = {};
    for (const [p, page] of Object.entries(pages)) {
      const share = page.held / words.length;
      out[p] = [page.score * share * share * prior[p], BookSearch.section(words, index.pages[p])];
    }
    return out;
  },

  // The readings of a query: itself, and every name of a glossary entry it
  // names (with the page that entry points to).
  readings: (query, index) => {
    const q = BookSearch.squash(query);
    const out = [[query, null]];
    for (const [names, page] of index.glossary || [])
      if (names.some((name) => BookSearch.squash(name) === q))
        for (const name of names) out.push([name, page]);
    return out;
  },

  // A query that stands whole in the title or a heading: that page, at that section.
  phrase: (text, page, found) => {
    const q = BookSearch.squash(text);
    if (q.length < 2) return found;
    const [, title, sections] = page;
    if (BookSearch.squash(title).includes(q)) return [found[0] * 2, found[1]];
    const s = sections.findIndex(([, heading]) => BookSearch.squash(heading).includes(q));
    return s >= 0 ? [found[0] * 1.5, s] : found;
  },

  // [[page, score, section]], best first.
  rank: (query, index) => {
    const vocab = Object.keys(index.terms);
    const best = {};
    for (const [text, teaches] of BookSearch.readings(query, index)) {
      for (const [p, found] of Object.entries(BookSearch.scoreReading(text, index, vocab))) {
        const [score, s] = BookSearch.phrase(text, index.pages[p], found);
        if (!best[p] || score > best[p][0]) best[p] = [score, s];
      }
    }
    // The page a glossary entry points to teaches the term: it comes first.
    const top = Math.max(0, ...Object.values(best).map(([score]) => score));
    for (const [, teaches] of BookSearch.readings(query, index))
      if (teaches !== null && best[teaches]) best[teaches][0] = Math.max(2 * best[teaches][0], 1.01 * top);
    return Object.entries(best)
      .filter(([, [score]]) => score > 0)
      .map(([p, [score, s]]) => [+p, score, s])
      .sort((a, b) => b[1] - a[1] || a[0] - b[0]);
  },

  // Sphinx's result items ([docname, title, anchor, descr, score, filename,
  // kind]), best LAST (Sphinx shows them with pop()).
  items: (query, index) => {
    const items = [];
    const seen = new Set();
    const q = query.trim();
    for (const api of index.api.map((p) => index.pages[p])) {
      for (const [anchor] of api[2]) {
        const parts = anchor.split(".");
        if (parts[0] !== "mha_book" || seen.has(anchor)) continue;
        if (q === anchor || q === parts.at(-1) || q === parts.slice(-2).join(".")) {
          seen.add(anchor);
          items.push([api[0], parts.at(-1), "#" + anchor, anchor, 1e9, "", "object"]);
        }
      }
    }
    for (const [p, score, s] of BookSearch.rank(query, index)) {
      const [name, title, sections] = index.pages[p];
      const [anchor, heading] = sections[s] || ["", ""];
      // The anchor always names a section: Sphinx's snippet is then cut from
      // the article, not from the whole page with its menus.
      const top = s === 0 || !heading;
      items.push([name, top ? title : `${title} › ${heading}`, anchor ? "#" + anchor : "", null, score, "", "text"]);
    }
    return items.reverse();
  },
};

Search.query = (query) => {
  const index = Search._index;
  const items = BookSearch.items(query, index);
  // The snippets show the words found, a glossary name's other names too.
  const readings = BookSearch.readings(query, index).map(([text]) => text);
  const highlight = [...new Set(readings.flatMap((text) => BookSearch.words(text, index.terms)))];
  _displayNextItem(items, items.length, highlight, highlight);
};
