"""The "open in Colab" (and Binder) buttons on every notebook page, when the
repository's address is known.

``MHA_BOOK_REPO_URL`` (``https://github.com/<owner>/<repo>``) turns the
buttons on; unset, no page has them. ``MHA_BOOK_BINDER_URL`` (for example
``https://mybinder.org``) adds Binder. Each button opens the page's own
edition of the notebook a reader downloads (``book_pages.for_download``: its
first cell installs mha-book and sets the edition's language), as the Pages
workflow publishes it on the repository's ``notebooks`` branch
(``tools/notebooks_branch.py``): ``<lang>/<page>.ipynb``.

Written here rather than through sphinx-book-theme's ``launch_buttons``: the
theme links the page's source file, a MyST ``.md`` that Colab cannot open,
and copies executed notebooks from a folder this build does not write. The
buttons are the theme's own kind (a group of header buttons), so its
templates draw them like the download menu.
"""

from __future__ import annotations

import re

from sphinx.errors import ConfigError

REPO_ENV = "MHA_BOOK_REPO_URL"  # conf.py reads it into book_repo_url
NOTEBOOKS_BRANCH = "notebooks"
COLAB = "https://colab.research.google.com"
GITHUB = re.compile(r"https://github\.com/([\w.-]+)/([\w.-]+?)(?:\.git)?/?")
TOOLTIPS = {
    "zh": ("运行这一页的笔记本", "在 {} 中打开"),
    "en": ("Run this page's notebook", "Open in {}"),
}


def github_repo(url: str) -> tuple[str, str]:
    """(owner, name) of a GitHub repository's address.

    >>> github_repo("https://github.com/someone/mha-book.git")
    ('someone', 'mha-book')
    """
    match = GITHUB.fullmatch(url.strip())
    if not match:
        raise ValueError(
            f"{REPO_ENV} must be a GitHub repository's address, "
            f"https://github.com/<owner>/<repo>; got {url!r}"
        )
    return match.group(1), match.group(2)


def launch_links(
    repo_url: str, lang: str, pagename: str, binder_url: str = ""
) -> dict[str, str]:
    """Where each service opens the edition ``lang``'s notebook of ``pagename``.

    >>> links = launch_links("https://github.com/o/mha-book", "zh", "02-scaled")
    >>> links["Colab"]
    'https://colab.research.google.com/github/o/mha-book/blob/notebooks/zh/02-scaled.ipynb'
    >>> list(links)  # Binder only with its address
    ['Colab']
    """
    owner, repo = github_repo(repo_url)
    path = f"{lang}/{pagename}.ipynb"
    links = {"Colab": f"{COLAB}/github/{owner}/{repo}/blob/{NOTEBOOKS_BRANCH}/{path}"}
    if binder_url:
        binder = binder_url.strip().rstrip("/")
        links["Binder"] = (
            f"{binder}/v2/gh/{owner}/{repo}/{NOTEBOOKS_BRANCH}?urlpath=lab/tree/{path}"
        )
    return links


def _check_repo_url(app, config):
    if config.book_repo_url:
        try:
            github_repo(config.book_repo_url)
        except ValueError as error:
            raise ConfigError(str(error)) from None


def _offer_launch(app, pagename, templatename, context, doctree):
    """The launch menu, first among the header buttons, on notebook pages."""
    # book_pages._offer_notebook (priority 500) sets ipynb_source on those.
    if not app.config.book_repo_url or not context.get("ipynb_source"):
        return
    lang = "zh" if app.config.language.startswith("zh") else "en"
    group_tip, button_tip = TOOLTIPS[lang]
    links = launch_links(
        app.config.book_repo_url, lang, pagename, app.config.book_binder_url
    )
    buttons = [
        {"type": "link", "text": name, "tooltip": button_tip.format(name), "url": url}
        for name, url in links.items()
    ]
    group = {
        "type": "group",
        "tooltip": group_tip,
        "icon": "fas fa-rocket",
        "buttons": buttons,
        "label": "launch-buttons",
    }
    context["header_buttons"].insert(0, group)


def setup(app):
    app.add_config_value("book_repo_url", "", "html", types=[str])
    app.add_config_value("book_binder_url", "", "html", types=[str])
    app.connect("config-inited", _check_repo_url)
    # After the theme has made header_buttons (its own handlers run at 500-501).
    app.connect("html-page-context", _offer_launch, priority=502)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
