"""Chinese search that also segments the reader's query in the browser.

Sphinx's Chinese index is segmented by jieba, but the query box splits only at
spaces: 多头注意力 typed without spaces finds nothing. ``ChineseQuerySearch``
adds a greedy longest match against the index's own terms.

The search page ranks with the book's own index and engine, written after the
build (tools/build/search.py, docs/_ext/book_search.js), which replace
Sphinx's query and scoring but keep its search page, its result list and its
snippets. Sphinx's ``searchindex.js`` is still written (its next incremental
build reads it back), and this language class keeps ``language_data.js``
loading without an error.
"""

from __future__ import annotations

import logging

from sphinx.search.zh import SearchChinese

SPLIT_QUERY_JS = r"""
function splitQuery(query) {
  const index = (typeof Search !== "undefined" && Search._index) ? Search._index : null;
  const has = (obj, w) => obj && Object.prototype.hasOwnProperty.call(obj, w);
  const known = (w) => index && (has(index.terms, w) || has(index.titleterms, w));
  const out = [];
  const parts = query.split(/[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/gu)
    .filter((t) => t);
  for (const part of parts) {
    for (const run of part.match(/\p{Script=Han}+|[^\p{Script=Han}]+/gu) || []) {
      if (!/\p{Script=Han}/u.test(run) || !index) { out.push(run); continue; }
      // Greedy longest match against the words the index holds.
      let i = 0;
      while (i < run.length) {
        let j = run.length;
        while (j > i + 1 && !known(run.slice(i, j))) j--;
        const word = run.slice(i, j);
        if (j > i + 1 || known(word)) out.push(word);
        i = j;
      }
    }
  }
  return out;
}
"""


class ChineseQuerySearch(SearchChinese):
    """Chinese search whose browser side segments queries typed without spaces."""

    js_splitter_code = SPLIT_QUERY_JS
    # Sphinx 9.0 ships english-stemmer.js for Chinese (Latin words are stemmed
    # as English) but then sets ``window.Stemmer = ChineseStemmer``, which does
    # not exist: every search dies with "Stemmer is not defined". Naming the
    # stemmer after the code that is really shipped fixes it.
    language_name = "English"


def setup(app):
    try:
        import jieba

        jieba.setLogLevel(logging.WARNING)
    except ImportError:  # pragma: no cover
        pass
    app.add_search_language(ChineseQuerySearch)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
