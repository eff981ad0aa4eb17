"""Sphinx configuration shared by the Chinese and English builds.

The book is two Sphinx builds (``docs/zh`` and ``docs/en``) made by
``tools/build_book.py``, which sets ``MHA_BOOK_LANG``. Notebook kernels
inherit that variable; pages read it through ``mha_book.book_language()``.
"""

import os
import sys
from datetime import date
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
# tools.build.environment_key: the kernels' environment, which keys the execution cache
sys.path.insert(0, str(ROOT))

import book_cache  # noqa: E402
import book_math  # noqa: E402
import book_refs  # noqa: E402

LANG = os.environ.get("MHA_BOOK_LANG")
if LANG not in ("zh", "en"):
    raise RuntimeError(
        f"MHA_BOOK_LANG must be 'zh' or 'en', got {LANG!r}; build with `make html`"
    )
OTHER = {"zh": "en", "en": "zh"}[LANG]

project = {
    "zh": "多头注意力：从公式到 PyTorch",
    "en": "Multi-Head Attention, from Formula to PyTorch",
}[LANG]
author = "mha_book"
copyright = f"{date.today().year}{'，' if LANG == 'zh' else ', '}mha_book"
language = {"zh": "zh_CN", "en": "en"}[LANG]

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.intersphinx",
    "book_api",  # the API page: every public module of mha_book, read from the package
    "book_refs",  # every Python reference resolves: short names, other projects
    "book_math",  # the math as HTML, rendered by KaTeX during the build
    "sphinx_copybutton",
    "sphinxcontrib.bibtex",
    "book_bib",  # the bibliography and citations in the edition's language
    "sphinx_togglebutton",
    "sphinx_exercise",
    "book_build",  # how the pages execute: kernels, output, execution report
    "book_cache",  # which pages execute again: the code each one runs
    "book_pages",  # what each HTML page gets: downloads, figures, accessibility
    "book_launch",  # "open in Colab" (and Binder), with MHA_BOOK_REPO_URL set
    "book_search",  # Chinese search that segments the reader's query
    "book_assets",
    "book_progress",
    "book_written",  # a page damaged on disk is written again
    "sphinx_last_updated_by_git",
]
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
# Every Python reference must resolve: a {py:func} in a page, a type in a
# docstring. Labels, documents and terms warn anyway. Nothing is ignored: a
# nitpick_ignore that matched other kinds of reference would also silence
# Sphinx's own warning for a missing label or page (tests/build/test_partial_build.py).
nitpicky = True
# torch, the standard library, matplotlib...: inventories written from
# book_refs.EXTERNAL into the build folder, so the build reads no network.
intersphinx_mapping = book_refs.write_inventories()

# --- MyST and notebook execution -------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
nb_execution_mode = "cache"
nb_execution_cache_path = book_cache.execution_cache_path(LANG)
# A raising cell fails the build (unless tagged "raises-exception"): myst-nb
# reports it as a warning, which -W makes fatal, and book_progress replaces
# its traceback with a short message and a log (raise_on_error=True would end
# the build in Sphinx's crash report instead).
nb_execution_raise_on_error = False
nb_execution_allow_errors = False
nb_output_stderr = "warn"  # stderr output becomes a warning, -W makes it fatal
# No limit per cell: a limit in seconds measures the machine, not the work, and
# a busy machine (chapter 10's training cell: about 60 s on two quiet cores,
# over 200 s with other work on them) must not fail the build. A hang is
# stopped by the edition's wall-clock limit (tools/build/editions.py), which
# names the edition and the reason. A page may still set its own limit in its
# front matter (mystnb: execution_timeout).
nb_execution_timeout = -1
nb_execution_show_tb = False  # the traceback goes to <build>/reports/<lang>/<page>.log
nb_merge_streams = True
# The toggle of a cell tagged hide-input, in the page's language.
nb_code_prompt_show = {"zh": "显示代码", "en": "Show code"}[LANG]
nb_code_prompt_hide = {"zh": "隐藏代码", "en": "Hide code"}[LANG]
# The hint beside a collapsed solution's button. sphinx-togglebutton reads its
# own catalogue before the language is known, so every edition would say
# "Click to show".
togglebutton_hint = {"zh": "点击显示", "en": "Click to show"}[LANG]
togglebutton_hint_hide = {"zh": "点击隐藏", "en": "Click to hide"}[LANG]

# --- citations: one .bib for both editions; docs/<lang>/references.md lists them
bibtex_bibfiles = ["docs/references.bib"]  # relative to this file
bibtex_default_style = f"book_{LANG}"  # plain, in the edition's words (book_bib)
bibtex_reference_style = f"author_year_{LANG}"  # "Xiao et al." / “Xiao 等”

# --- autodoc ----------------------------------------------------------------
autodoc_member_order = "bysource"
autodoc_typehints = "description"
# Types go beside the parameters and return value a docstring describes; with
# "all", a docstring whose sections are split by "Shape:" got a second,
# description-less copy of every parameter and of the return type.
autodoc_typehints_description_target = "documented"
# A method without a docstring of its own (forward, extra_repr) is not listed,
# rather than shown with torch.nn.Module's text about re-implementing it.
autodoc_inherit_docstrings = False
napoleon_google_docstring = True
napoleon_numpy_docstring = False

# --- HTML -------------------------------------------------------------------
html_theme = "sphinx_book_theme"
html_title = project
html_favicon = "docs/_static/favicon.svg"
templates_path = ["docs/_templates"]
# mha_book/viz/static holds the attention explorer's explorer.js and explorer.css
# (package data, the single source); book_pages loads them only on the pages
# that show an explorer.
html_static_path = [
    "docs/_static",
    str(ROOT / "mha_book" / "viz" / "static"),
    book_math.katex_static_dir(),
]
html_css_files = ["book.css"]
html_js_files = ["book.js"]
katex_prerender = True
katex_css_path = book_math.CSS_NAME
katex_js_path = book_math.katex_js_path()
# The theme's UI strings its zh catalogue lacks (docs/locale/zh_CN/LC_MESSAGES/sphinx.po).
locale_dirs = ["../locale"]  # relative to docs/<lang>
gettext_auto_build = True
html_search_language = "zh" if LANG == "zh" else "en"
# Domain words for jieba, so 多头注意力 and friends are indexed as words.
html_search_options = (
    {"dict": str(ROOT / "docs" / "_ext" / "jieba_terms.txt")} if LANG == "zh" else {}
)
html_copy_source = True
html_show_sourcelink = True
# "Last updated" (the theme's footer, in the page's language) is the date of
# the last commit that changed the page's source or a file it includes (a
# literalinclude of mha_book), from sphinx-last-updated-by-git, in UTC.
html_last_updated_fmt = "%Y-%m-%d"
git_last_updated_timezone = "UTC"
# A page that git does not know (a new, uncommitted page, or a build outside a
# clone) shows no date and keeps its source link; a shallow clone shows no
# dates (clone with full history, as .github/workflows/pages.yml does). None
# of these fails the strict build.
git_untracked_show_sourcelink = True
suppress_warnings = ["git.subprocess_error", "git.command_not_found", "git.too_shallow"]
git_last_updated_metatags = False  # article:modified_time: with the share tags below
html_context = {
    "book_lang": LANG,
    # Without a valid default the theme script logs a console error on a first visit.
    "default_mode": "auto",
    "book_other_lang": OTHER,
    "book_other_label": {"zh": "English", "en": "中文"}[LANG],
    "book_hreflang": {"zh": "zh-CN", "en": "en"},
    # The whole edition as a PDF (tools/build_pdf.py), offered in every page's
    # download menu only when tools/build_book.py prints it or finds it
    # printed (it then passes the tag: sphinx-build -t pdf): a build without
    # Chromium links nothing that is not there.
    "book_pdf": f"mha-book-{LANG}.pdf" if tags.has("pdf") else "",  # noqa: F821
}
BUILD_FOOTER = {
    "zh": "构建于 {day}，torch {torch}，mha_book {book}",
    "en": "Built on {day} with torch {torch} and mha_book {book}",
}[LANG].format(
    day=date.today().isoformat(),
    torch=metadata.version("torch"),
    book=metadata.version("mha-book"),
)
html_theme_options = {
    "extra_footer": f'<p class="book-build-info">{BUILD_FOOTER}</p>',
    "home_page_in_toc": True,
    # The sidebar has the search field; pydata-sphinx-theme would add a second
    # one in a top bar (its default persistent navbar item) at every width.
    "navbar_persistent": [],
    "show_navbar_depth": 1,
    "use_download_button": True,
    "use_fullscreen_button": False,
    "article_header_end": ["lang-switch.html", "article-header-buttons.html"],
    "search_bar_text": {"zh": "搜索本书……", "en": "Search this book…"}[LANG],
    "toc_title": {"zh": "本页目录", "en": "Contents"}[LANG],
}

# --- "open in Colab" (and Binder): only when the repository is known ----------
# MHA_BOOK_REPO_URL is the GitHub repository (https://github.com/<owner>/<repo>)
# whose `notebooks` branch holds every page's downloadable notebook (the Pages
# workflow publishes it); MHA_BOOK_BINDER_URL (e.g. https://mybinder.org) adds
# Binder. Unset, no page has the buttons (docs/_ext/book_launch.py).
book_repo_url = os.environ.get("MHA_BOOK_REPO_URL", "").strip()
book_binder_url = os.environ.get("MHA_BOOK_BINDER_URL", "").strip()

# --- links that share well: only when the site's public address is known ------
# MHA_BOOK_BASE_URL is where _build/html is published (e.g.
# https://example.org/mha-book/); each edition lives under BASE/zh/ and BASE/en/.
# Unset (local builds), none of this is emitted. With it, sphinx-sitemap writes
# each edition's sitemap.xml (tools/build_book.py joins them into BASE/sitemap.xml
# with zh-CN/en alternates), sphinxext-opengraph adds Open Graph and Twitter card
# tags to every page, and each page gets a canonical link (html_baseurl).
BASE_URL = os.environ.get("MHA_BOOK_BASE_URL", "").strip()
if BASE_URL:
    EDITION_URL = f"{BASE_URL.rstrip('/')}/{LANG}/"
    # book_share loads sphinxext.opengraph and hands it each page's first paragraph.
    extensions += ["sphinx_sitemap", "book_share"]
    html_baseurl = EDITION_URL
    site_url = EDITION_URL
    sitemap_url_scheme = "{link}"  # site_url already names the edition
    sitemap_locales = [None]  # alternates: added across editions by build_book.py
    sitemap_show_lastmod = True  # the git date of each page, as shown on it
    # Generated lists, not pages of the book.
    sitemap_excludes = ["search.html", "genindex.html", "py-modindex.html"]
    ogp_site_url = EDITION_URL
    # The preview: chapter 03's attention heads, drawn in the edition's language
    # (a copy of that figure as the book builds it).
    ogp_image = f"_static/preview-{LANG}.png"
    ogp_image_alt = {
        "zh": "四个注意力头在句子“那只猫坐在垫子上”上的注意力权重热力图",
        "en": "Heatmaps of four attention heads' weights over the sentence "
        "'the cat sat on the mat'",
    }[LANG]
    ogp_type = "article"
    git_last_updated_metatags = True  # article:modified_time, the git date
    # og:description: the page's first paragraph (docs/_ext/book_share.py).
    ogp_description_length = 200
    # The preview is about square: Twitter's "summary" card, not the wide one.
    ogp_custom_meta_tags = [
        '<meta name="twitter:card" content="summary" />',
        f'<meta property="og:locale" content="{language}" />',
        '<meta property="og:locale:alternate" content="{}" />'.format(
            {"zh": "en", "en": "zh_CN"}[LANG]
        ),
    ]
