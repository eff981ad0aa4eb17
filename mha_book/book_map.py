"""The map of the book: its parts, its chapters, and which chapter needs which.

One source for every list of chapters the book shows: the sidebar's captioned
parts and the PDF's table of contents (``docs/_ext/book_toc.py`` writes the
toctrees from it), the parts and the reading-path figure of the index
(:func:`mha_book.viz.diagrams.reading_path`), the reading path of chapter 08,
the next steps of chapter 09, and the chapter titles that chapter 09's map of
the package prints. A new chapter is one more :class:`Chapter` in
``CHAPTERS``; ``tools/check_pages.py`` checks before every build that the
map and the pages agree (every ``NN-name.md`` of both editions is here, under
its own title, and nothing else is).

Texts are ``(zh, en)`` pairs; :func:`text` picks one. A chapter's ``summary``
is MyST (it may hold ``{term}`` and ``{cite:p}`` roles), since the build parses
it into the pages; titles are plain text.

Example:
    >>> [p.key for p in PARTS]
    ['article', 'learning', 'efficiency', 'positions']
    >>> [c.number for c in chapters_in("efficiency")]
    [12, 13, 17]
    >>> text(chapter(5).title, "en")
    'Verification: Shapes, Masks, Heatmaps and Cost'
"""

from __future__ import annotations

from dataclasses import dataclass

from mha_book.book import LANGUAGES, book_language

__all__ = [
    "BACK_MATTER",
    "BACK_MATTER_CAPTION",
    "CHAPTERS",
    "PARTS",
    "Chapter",
    "Part",
    "chapter",
    "chapter_label",
    "chapters_in",
    "part_of",
    "reading_order",
    "text",
]

Text = tuple[str, str]  # (zh, en)


@dataclass(frozen=True)
class Part:
    """One part of the book.

    Args:
        key: a short name, used by ``part`` of a :class:`Chapter`.
        title: the part's caption in the sidebar and the PDF, ``(zh, en)``.
        short: the part's name in the reading-path figure, ``(zh, en)``.
        after: one sentence: what a reader can do after the part, ``(zh, en)``.
    """

    key: str
    title: Text
    short: Text
    after: Text


@dataclass(frozen=True)
class Chapter:
    """One chapter: its page, its part, and the chapters it builds on.

    Args:
        number: the chapter's number, the ``NN`` of its page ``NN-name.md``.
        slug: the page's name without ``.md``.
        part: the ``key`` of a :class:`Part` of its part.
        title: the page's first heading, ``(zh, en)``.
        needs: the chapters a reader should have read first (earlier numbers
            of this map).
        summary: what the chapter does, one or two sentences of MyST, ``(zh, en)``.
    """

    number: int
    slug: str
    part: str
    title: Text
    needs: tuple[int, ...]
    summary: Text


PARTS: tuple[Part, ...] = (
    Part(
        "article",
        (
            "第一部分：从公式到经过验证的模块",
            "Part I: From the Formula to a Checked Module",
        ),
        ("第一部分", "Part I"),
        (
            "读完这一部分，你能照着公式写出多头注意力，让它与 PyTorch 的模块逐个数值地一致，"
            "并能从症状找出写错的掩码或形状。",
            "After this part you can write multi-head attention from its formula, match "
            "PyTorch's module number for number, and trace a wrong mask or shape "
            "from its symptom.",
        ),
    ),
    Part(
        "learning",
        ("第二部分：会学习的模型", "Part II: Models That Learn"),
        ("第二部分", "Part II"),
        (
            "读完这一部分，你能训练小型的解码器和编码器-解码器，读懂一个预训练模型的各个头，"
            "并用公平的基线评判它们学到了什么。",
            "After this part you can train small decoders and an encoder–decoder, read the "
            "heads of a pretrained model, and judge what they learned against fair "
            "baselines.",
        ),
    ),
    Part(
        "efficiency",
        ("第三部分：更高效的注意力", "Part III: Attention Made Efficient"),
        ("第三部分", "Part III"),
        (
            "读完这一部分，你能说清分块计算、共享键值头以及窗口、分页和潜在向量缓存各自省下了"
            "什么，并亲手测出省了多少。",
            "After this part you can explain what tiling, shared key and value heads and "
            "windowed, paged and latent caches save, and measure how much.",
        ),
    ),
    Part(
        "positions",
        ("第四部分：位置", "Part IV: Positions"),
        ("第四部分", "Part IV"),
        (
            "读完这一部分，你能在正弦、可学习、旋转和 ALiBi 几种位置方案之间作出选择，"
            "并检验用短文本训练的模型在更长的文本上表现如何。",
            "After this part you can choose among sinusoidal, learned, rotary and ALiBi "
            "positions, and test how a model trained on short text does on longer "
            "text.",
        ),
    ),
)

CHAPTERS: tuple[Chapter, ...] = (
    Chapter(
        1,
        "01-overview",
        "article",
        (
            "速览：一次前向传播里发生了什么",
            "At a Glance: What Happens in One Forward Pass",
        ),
        (),
        ("一次前向传播，记号与形状。", "One forward pass, the symbols and the shapes."),
    ),
    Chapter(
        2,
        "02-scaled-dot-product",
        "article",
        ("缩放点积注意力", "Scaled Dot-Product Attention"),
        (1,),
        ("公式与缩放因子 $\\sqrt{d_k}$。", "The formula and the scale $\\sqrt{d_k}$."),
    ),
    Chapter(
        3,
        "03-multi-head",
        "article",
        ("多头注意力", "Multi-Head Attention"),
        (2,),
        (
            "把投影拆成多个头，再合并回来。",
            "Splitting the projections into heads and back.",
        ),
    ),
    Chapter(
        4,
        "04-implementation",
        "article",
        ("实现：对照源码读懂模块", "Implementation: the Module, Read from Its Source"),
        (3,),
        ("带四个投影的 `nn.Module`。", "The `nn.Module` with its four projections."),
    ),
    Chapter(
        5,
        "05-verification",
        "article",
        (
            "功能验证：形状、掩码、热力图与开销",
            "Verification: Shapes, Masks, Heatmaps and Cost",
        ),
        (4,),
        (
            "形状、掩码、热力图、时间与内存。",
            "Shapes, masks, heatmaps, time and memory.",
        ),
    ),
    Chapter(
        6,
        "06-applications",
        "article",
        ("多头注意力在真实模型中的位置", "Multi-Head Attention in Real Models"),
        (5,),
        (
            "编码器层与解码器层，BERT、GPT-2、ViT。",
            "Encoder and decoder layers, BERT, GPT-2, ViT.",
        ),
    ),
    Chapter(
        7,
        "07-troubleshooting",
        "article",
        (
            "常见问题排查：八种典型错误的复现与修复",
            "Troubleshooting: Eight Common Failures, Reproduced and Fixed",
        ),
        (6,),
        ("八种常见错误的复现与修复。", "Eight common failures, reproduced and fixed."),
    ),
    Chapter(
        8,
        "08-best-practices",
        "article",
        (
            "最佳实践：小尺寸调试、数值对比、训练几步",
            "Best Practices: Debug Small, Compare, Train a Few Steps",
        ),
        (7,),
        (
            "小尺寸调试、数值对比、训练几步。",
            "Small sizes, numerical checks, a short training run.",
        ),
    ),
    Chapter(
        9,
        "09-summary",
        "article",
        ("总结与下一步", "Summary and Next Steps"),
        (8,),
        (
            "前八章建了什么，以及接下来读什么。",
            "What the first eight chapters built, and what to read next.",
        ),
    ),
    Chapter(
        10,
        "10-decoder-char-lm",
        "learning",
        ("会写莎士比亚的因果解码器", "A Causal Decoder That Writes Shakespeare"),
        (6,),
        (
            "把去掉{term}`交叉注意力`的解码器层堆起来，在莎士比亚的三部剧作上训练它预测下一个"
            "字符，再看它生成了什么。",
            "Stack decoder layers without {term}`cross-attention`, train them on "
            "three plays by Shakespeare to predict the next character, and read "
            "what the model writes.",
        ),
    ),
    Chapter(
        11,
        "11-pretrained-bert",
        "learning",
        (
            "走进预训练 BERT：72 个真实的注意力头",
            "Inside a Pretrained BERT: 72 Real Heads",
        ),
        (6, 10),
        (
            "把一个预训练的小型 BERT 式编码器 {cite:p}`devlin2019bert` 载入本书的模块，"
            "看它各个头的{term}`注意力权重`，再把头逐个关掉，看每个头贡献了什么。",
            "Load a small pretrained BERT-style encoder {cite:p}`devlin2019bert` "
            "into the book's modules, look at the {term}`attention weights` of its "
            "heads, and switch heads off to see what each contributes.",
        ),
    ),
    Chapter(
        12,
        "12-flash-attention",
        "efficiency",
        (
            "FlashAttention：一块一块算出的精确注意力",
            "FlashAttention: Exact Attention, One Tile at a Time",
        ),
        (5,),
        (
            "借助在线 softmax {cite:p}`milakov2018online` 分块算出同样的结果，从不存下 "
            "`(B, H, T, S)` 的权重 {cite:p}`dao2022flashattention`，并测量内存与时间。",
            "Compute the same result tile by tile with an online softmax "
            "{cite:p}`milakov2018online`, never storing the `(B, H, T, S)` weights "
            "{cite:p}`dao2022flashattention`, and measure memory and time.",
        ),
    ),
    Chapter(
        13,
        "13-mqa-gqa-kv-cache",
        "efficiency",
        ("MQA、GQA 与 KV 缓存", "MQA, GQA and the KV Cache"),
        (4,),
        (
            "逐词元生成时存下过去的键和值（{term}`KV 缓存`），再让多个查询头共享键值头"
            "（{cite:p}`shazeer2019fast`、{cite:p}`ainslie2023gqa`），算出缓存能缩小多少。",
            "Store the past keys and values while generating token by token (the "
            "{term}`KV cache`), let query heads share key and value heads "
            "{cite:p}`shazeer2019fast,ainslie2023gqa`, and count how much smaller "
            "the cache gets.",
        ),
    ),
    Chapter(
        14,
        "14-positions",
        "positions",
        ("我在哪里？注意力中的位置", "Where Am I? Positions in Attention"),
        (10, 13),
        (
            "比较正弦位置、可学习位置、旋转位置编码 {cite:p}`su2024roformer` 和 ALiBi "
            "{cite:p}`press2022train`，并复现“短训练、长测试”的实验。",
            "Compare sinusoidal and learned positions, rotary embeddings "
            "{cite:p}`su2024roformer` and ALiBi {cite:p}`press2022train`, and repeat "
            "the train-short, test-long experiment.",
        ),
    ),
    Chapter(
        15,
        "15-tang-poems",
        "learning",
        ("注意力写唐诗", "Attention Writes Tang Poems"),
        (10, 14),
        (
            "用第 10 章的解码器学习五言诗，测量生成的诗有多少合乎格律，"
            "并在离线可用的注意力浏览器里查看每个头。",
            "Train chapter 10's decoder on five-character poems, measure how many "
            "generated poems keep the form, and look at every head in an attention "
            "explorer that works offline.",
        ),
    ),
    Chapter(
        16,
        "16-cross-attention",
        "learning",
        ("交叉注意力学会对齐", "Cross-Attention Learns to Align"),
        (10, 11, 13),
        (
            "训练一个编码器-解码器把英文和中文写的日期译成同一种形式，"
            "测量它的交叉注意力头如何对齐两者 {cite:p}`bahdanau2015neural`。",
            "Train an encoder–decoder to translate dates written in English and "
            "Chinese into one form, and measure how its cross-attention heads align "
            "the two {cite:p}`bahdanau2015neural`.",
        ),
    ),
    Chapter(
        17,
        "17-inference",
        "efficiency",
        ("大规模推理中的注意力", "Attention at Inference Scale"),
        (11, 13, 14, 15),
        (
            "滚动窗口缓存、注意力汇点 {cite:p}`xiao2024efficient`、分页缓存 "
            "{cite:p}`kwon2023efficient`、潜在注意力 {cite:p}`deepseekai2024deepseekv2`，"
            "以及写成 FlexAttention 函数的掩码。",
            "A rolling window cache, attention sinks {cite:p}`xiao2024efficient`, a "
            "paged cache {cite:p}`kwon2023efficient`, latent attention "
            "{cite:p}`deepseekai2024deepseekv2`, and the book's masks as "
            "FlexAttention functions.",
        ),
    ),
)

# The pages after the chapters, in the sidebar's last group.
BACK_MATTER: tuple[str, ...] = ("api", "glossary", "references")
BACK_MATTER_CAPTION: Text = ("参考资料", "Reference")


def text(pair: Text, lang: str | None = None) -> str:
    """The ``(zh, en)`` pair's text in ``lang`` (default: the book's language).

    Example:
        >>> text(("位置", "Positions"), "zh")
        '位置'
    """
    lang = book_language() if lang is None else lang
    if lang not in LANGUAGES:
        raise ValueError(f"lang must be one of {LANGUAGES}, got {lang!r}")
    return pair[LANGUAGES.index(lang)]


def chapter(number: int) -> Chapter:
    """The chapter with this number.

    Example:
        >>> chapter(14).slug
        '14-positions'
    """
    for c in CHAPTERS:
        if c.number == number:
            return c
    raise ValueError(
        f"number must be a chapter of the book ({CHAPTERS[0].number}-"
        f"{CHAPTERS[-1].number}), got {number!r}"
    )


def part_of(number: int) -> Part:
    """The part that holds chapter ``number``.

    Example:
        >>> part_of(14).key
        'positions'
    """
    key = chapter(number).part
    return next(p for p in PARTS if p.key == key)


def chapters_in(part: str) -> list[Chapter]:
    """The chapters of a part, in the order of their numbers.

    Example:
        >>> [c.number for c in chapters_in("learning")]
        [10, 11, 15, 16]
    """
    if part not in {p.key for p in PARTS}:
        raise ValueError(f"part must be one of {[p.key for p in PARTS]}, got {part!r}")
    return [c for c in CHAPTERS if c.part == part]


def chapter_label(number: int, lang: str | None = None) -> str:
    """The chapter's number and title as a reader sees them, in ``lang``.

    Example:
        >>> chapter_label(5, "en")
        'Chapter 5. Verification: Shapes, Masks, Heatmaps and Cost'
        >>> chapter_label(5, "zh")
        '第 5 章　功能验证：形状、掩码、热力图与开销'
    """
    c = chapter(number)
    lang = book_language() if lang is None else lang
    if lang == "zh":
        return f"第 {c.number} 章　{text(c.title, lang)}"
    return f"Chapter {c.number}. {text(c.title, lang)}"


def reading_order(after: int = 0) -> list[Chapter]:
    """The chapters after ``after`` in an order that reads each after its needs.

    Parts come in the order of ``PARTS``, chapters in a part by number,
    except that a chapter waits until every chapter it needs is read.

    Example:
        >>> [c.number for c in reading_order(9)]
        [10, 11, 12, 13, 16, 14, 15, 17]
    """
    done = {c.number for c in CHAPTERS if c.number <= after}
    wanted = [c for p in PARTS for c in chapters_in(p.key) if c.number > after]
    order: list[Chapter] = []
    while wanted:
        ready = next((c for c in wanted if all(n in done for n in c.needs)), None)
        if ready is None:
            raise ValueError(
                f"CHAPTERS: the needs of chapters {[c.number for c in wanted]} "
                "form a cycle"
            )
        order.append(ready)
        done.add(ready.number)
        wanted.remove(ready)
    return order
