"""Bibliography styles that speak the edition's language.

Both editions cite from one ``docs/references.bib``. pybtex's ``plain`` style
writes its connectives in English ("and", "and others", "In", "Technical
Report", "Volume ... of") and sphinxcontrib-bibtex's ``author_year`` writes
"et al." and "and" in the citations of the text. This extension registers
two pybtex plugins per edition, which ``conf.py`` selects by language:

* ``book_en`` / ``book_zh`` (``bibtex_default_style``): the list on the
  references page, ``plain`` with the edition's words (the zh edition writes
  “等” for the authors an entry leaves out and “载于” for "In");
* ``author_year_en`` / ``author_year_zh`` (``bibtex_reference_style``): the
  citations in the text ("Xiao et al. [2024]", “Xiao 等 [2024]”).

Both list styles print an arXiv preprint once: an entry with an ``eprint``
gets its "arXiv:NNNN" link, and its ``url`` only when that leads elsewhere.
Titles are set in sentence case as ``plain`` does; a proper noun in a title
keeps its capitals only inside braces in the .bib (``{BERT}``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pybtex.plugin
import sphinxcontrib.bibtex.plugin
from pybtex.richtext import Text
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.sorting.author_year_title import SortingStyle as AuthorYearTitle
from pybtex.style.template import (
    FieldIsMissing,
    Node,
    first_of,
    href,
    join,
    node,
    optional,
    optional_field,
    sentence,
    together,
    words,
)
from pybtex.style.template import field as bib_field
from sphinxcontrib.bibtex.style.referencing import PersonStyle
from sphinxcontrib.bibtex.style.referencing.author_year import (
    AuthorYearReferenceStyle,
)

# The words each edition's styles write. "others" ends a list of authors that
# leaves some out (``and others`` in the .bib).
WORDS = {
    "en": {
        "sep2": " and ",
        "last_sep": ", and ",
        "others": "and others",
        "et_al": " et al.",
        "in": "In",
        "techreport": "Technical Report",
        "url": "URL:",
    },
    "zh": {
        "sep2": " 和 ",
        "last_sep": " 和 ",
        "others": "等",
        "et_al": " 等",
        "in": "载于",
        "techreport": "技术报告",
        "url": "网址：",
    },
}


@node
def _names(children, context, role, words):
    """The persons of ``role``, with the edition's separators; ``others`` last
    becomes the edition's word for the authors left out."""
    if children:
        raise ValueError(children)
    try:
        persons = context["entry"].persons[role]
    except KeyError:
        raise FieldIsMissing(role, context["entry"]) from None
    style = context["style"]
    others = bool(persons) and str(persons[-1]) == "others"
    shown = [style.format_name(p, style.abbreviate_names) for p in persons]
    if others:
        listed = join(sep=", ")[shown[:-1]].format_data(context)
        return Text(listed, " ", words["others"])
    joined = join(sep=", ", sep2=words["sep2"], last_sep=words["last_sep"])
    return joined[shown].format_data(context)


class UnbracedSorting(AuthorYearTitle):
    """plain's order (author, year, title) with an author written in braces, an
    organisation (``{DeepSeek-AI}``), sorted by its name: "{" sorts after "z".

    Example:
        >>> from pybtex.database import Person
        >>> UnbracedSorting().person_key(Person("{NVIDIA}"))
        'nvidia    '
    """

    def person_key(self, person):
        return super().person_key(person).replace("{", "").replace("}", "")


class BookStyle(PlainStyle):
    """pybtex's ``plain`` with the words of one edition (``lang``).

    Example:
        >>> from pybtex.database import Entry, Person
        >>> entry = Entry("misc", fields={"title": "Llama 2", "year": "2023",
        ...     "eprint": "2307.09288", "url": "https://arxiv.org/abs/2307.09288"})
        >>> for name in ("Touvron, Hugo", "Martin, Louis", "others"):
        ...     entry.add_person(Person(name), "author")
        >>> entry.key = "touvron2023llama2"
        >>> def text(style):
        ...     (formatted,) = style().format_entries([entry])
        ...     return formatted.text.render_as("text")
        >>> text(BookStyleZh)
        'Hugo Touvron, Louis Martin 等. Llama 2. 2023. arXiv:2307.09288.'
        >>> text(BookStyleEn)
        'Hugo Touvron, Louis Martin, and others. Llama 2. 2023. arXiv:2307.09288.'
    """

    lang = "en"
    default_sorting_style = "book_author_year_title"

    @property
    def words(self) -> dict[str, str]:
        return WORDS[self.lang]

    def format_names(self, role, as_sentence=True):
        if self.lang == "en":
            return super().format_names(role, as_sentence)
        formatted = _names(role=role, words=self.words)
        return sentence[formatted] if as_sentence else formatted

    def get_inproceedings_template(self, e):
        return self._with_in(super().get_inproceedings_template(e))

    def get_incollection_template(self, e):
        return self._with_in(super().get_incollection_template(e))

    def _with_in(self, template):
        """``template`` with plain's literal "In" replaced by the edition's word."""
        if self.lang == "en":
            return template
        return _replace_word(template, "In", self.words["in"])

    def get_techreport_template(self, e):
        return _replace_word(
            super().get_techreport_template(e),
            "Technical Report",
            self.words["techreport"],
        )

    def format_volume_and_series(self, e, as_sentence=True):
        if self.lang == "en":
            return super().format_volume_and_series(e, as_sentence)
        # "PMLR 第 139 卷"
        result = first_of[
            optional[
                words[
                    optional_field("series"),
                    together["第", bib_field("volume"), "卷"],
                ]
            ],
            optional_field("series"),
        ]
        return sentence[result] if as_sentence else result

    def format_web_refs(self, e):
        # An arXiv entry links its preprint once; a url that leads elsewhere stays.
        eprint = e.fields.get("eprint", "")
        url = e.fields.get("url", "")
        same = bool(eprint) and url.rstrip("/").endswith(eprint)
        parts = [] if same else [optional[self.format_url(e)]]
        parts += [optional[self.format_eprint(e)], optional[self.format_doi(e)]]
        return sentence[parts]

    def format_url(self, e):
        url = bib_field("url", raw=True)
        sep = "" if self.lang == "zh" else " "  # “网址：https://…”, "URL: https://…"
        return join(sep=sep)[self.words["url"], href(url)[url]]


def _replace_word(template, old, new):
    """A copy of a pybtex template with every literal child ``old`` set to ``new``."""
    copy = template._clone()
    copy.children = [
        new
        if child == old
        else _replace_word(child, old, new)
        if isinstance(child, Node)
        else child
        for child in template.children
    ]
    return copy


class BookStyleEn(BookStyle):
    lang = "en"


class BookStyleZh(BookStyle):
    lang = "zh"


class AuthorYearEn(AuthorYearReferenceStyle):
    """``author_year`` as sphinxcontrib-bibtex ships it: "Xiao et al. [2024]"."""


def _zh_person() -> PersonStyle:
    w = WORDS["zh"]
    return PersonStyle(sep2=w["sep2"], last_sep=w["last_sep"], other=Text(w["et_al"]))


@dataclass
class AuthorYearZh(AuthorYearReferenceStyle):
    """``author_year`` with “等” and “和”: “Xiao 等 [2024]”."""

    person: PersonStyle = field(default_factory=_zh_person)


pybtex.plugin.register_plugin(
    "pybtex.style.sorting", "book_author_year_title", UnbracedSorting
)
for _lang, _list_style, _cite_style in (
    ("en", BookStyleEn, AuthorYearEn),
    ("zh", BookStyleZh, AuthorYearZh),
):
    pybtex.plugin.register_plugin(
        "pybtex.style.formatting", f"book_{_lang}", _list_style
    )
    sphinxcontrib.bibtex.plugin.register_plugin(
        "sphinxcontrib.bibtex.style.referencing", f"author_year_{_lang}", _cite_style
    )


def setup(app):
    """The plugins are registered on import; nothing to connect."""
    return {"parallel_read_safe": True, "parallel_write_safe": True}
