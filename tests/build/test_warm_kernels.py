"""Kernels forked from a zygote that has imported torch (tools/build/warm_kernel.py):
each page still starts from a clean state, as in a fresh Python, and a killed
build leaves no kernel behind (test_build_faults.py stops builds with
kernels running; they fork from the zygote too)."""

import re

from scratch_book import HEADER, cell, run_build, write_book

# Page 10-a changes what a later page would see if state leaked: torch's
# default dtype and seed, a module's attribute, the environment, matplotlib's
# settings, a name in the namespace. Page 11-b reads them.
SPOIL = cell(
    "import os, torch, matplotlib, mha_book\n"
    "torch.set_default_dtype(torch.float64)\n"
    "torch.manual_seed(123)\n"
    "mha_book.spoiled = True\n"
    "os.environ['SPOILED'] = '1'\n"
    "matplotlib.rcParams['lines.linewidth'] = 9.0\n"
    "spoiled = True"
)
READ = cell(
    "import sys\n"
    "warm = 'torch' in sys.modules  # before this page imports anything\n"
    "dynamo = 'torch._dynamo' in sys.modules\n"
    "figure = 'matplotlib.figure' in sys.modules\n"
    "import os, torch, matplotlib, mha_book\n"
    "from mha_book import _digest\n"
    "print('warm', warm)\n"
    "print('dynamo', dynamo)\n"
    "print('figure', figure)\n"
    "print('read', _digest._graph_at.cache_info().currsize > 0)\n"
    "print('dtype', torch.get_default_dtype())\n"
    "print('seed', torch.initial_seed())\n"
    "print('module', hasattr(mha_book, 'spoiled'))\n"
    "print('env', os.environ.get('SPOILED'))\n"
    "print('linewidth', matplotlib.rcParams['lines.linewidth'])\n"
    "print('name', 'spoiled' in globals())\n"
    "print('backend', matplotlib.get_backend())\n"
    "import matplotlib.pyplot as plt\n"
    "plt.close(plt.figure())  # picks the backend, which hooks into the shell\n"
    "from IPython import get_ipython\n"
    "hooks = get_ipython().events.callbacks['post_execute']\n"
    "print('hook', any(getattr(f, '__name__', '') == 'flush_figures' for f in hooks))"
)
TOC = "```{toctree}\n:glob:\n\n[0-9]*\n```\n"


def two_pages(repo, env=None):
    write_book(repo, TOC)
    for lang in ("zh", "en"):
        folder = repo / "docs" / lang
        (folder / "10-a.md").write_text(HEADER + SPOIL, encoding="utf-8")
        (folder / "11-b.md").write_text(HEADER + READ, encoding="utf-8")
    result = run_build(repo, env=env)
    assert result.returncode == 0, result.stdout[-3000:]
    # A kernel started as jupyter_client starts it prints nothing of its own.
    assert "To connect another client to this kernel" not in result.stdout
    html = (repo / "_build/html/zh/11-b.html").read_text(encoding="utf-8")
    text = re.sub(r"<[^>]+>", "", html)
    return dict(
        re.findall(
            r"^(warm|dynamo|figure|read|dtype|seed|module|env|linewidth|name|backend|hook) (.+)$",
            text,
            flags=re.M,
        )
    )


def test_a_page_starts_clean_in_a_kernel_forked_from_the_zygote(scratch):
    seen = two_pages(scratch)
    assert seen["warm"] == "True"  # torch came from the zygote
    assert seen["dynamo"] == "True"  # what an optimizer's first step imports
    assert seen["read"] == "True"  # the package's code, read once to key results
    assert seen["dtype"] == "torch.float32"
    assert seen["seed"] != "123"  # drawn afresh, as in a fresh Python
    assert seen["module"] == "False"
    assert seen["env"] == "None"
    assert seen["linewidth"] == "1.5"
    assert seen["name"] == "False"
    assert "inline" in seen["backend"]  # as ipykernel sets it in a fresh kernel
    # The Figure class came from the zygote, yet the inline
    # backend hooks into this kernel's shell at the first figure, as in a
    # fresh kernel.
    assert seen["figure"] == "True" and seen["hook"] == "True"


def test_without_the_zygote_every_page_starts_a_fresh_python(scratch):
    seen = two_pages(scratch, env={"MHA_BOOK_WARM_KERNELS": "0"})
    assert seen["warm"] == "False"
    assert seen["dynamo"] == "False" and seen["read"] == "False"
    assert seen["dtype"] == "torch.float32" and seen["module"] == "False"
    assert "inline" in seen["backend"]
    assert seen["figure"] == "False" and seen["hook"] == "True"
