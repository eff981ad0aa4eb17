"""tools/compressed.py: the server sends a file's gzip copy, never a stale one."""

import gzip
import os
import urllib.request
from pathlib import Path

from tools.build_pdf import serve
from tools.compressed import precompress


def fetch(url: str) -> tuple[str | None, bytes]:
    request = urllib.request.Request(url, headers={"Accept-Encoding": "gzip, br"})
    with urllib.request.urlopen(request) as response:
        encoding = response.headers.get("Content-Encoding")
        body = response.read()
    return encoding, gzip.decompress(body) if encoding == "gzip" else body


def test_the_copy_is_sent_until_its_file_changes(tmp_path):
    page = tmp_path / "page.html"
    page.write_text("<p>attention</p>" * 200)
    assert precompress(tmp_path) == (2, 0)
    with serve(tmp_path) as url:
        assert fetch(f"{url}/page.html") == ("gzip", page.read_bytes())
        page.write_text("<p>edited</p>" * 200)  # newer than its copies
        later = page.stat().st_mtime + 5
        os.utime(page, (later, later))
        assert fetch(f"{url}/page.html") == (None, page.read_bytes())
    assert precompress(tmp_path) == (2, 0)  # the next build writes them again


def test_copies_of_removed_files_are_removed(tmp_path):
    (tmp_path / "a.js").write_text("let x = 1;\n" * 200)
    precompress(tmp_path)
    (tmp_path / "a.js").unlink()
    assert precompress(tmp_path) == (0, 2)
    assert list(tmp_path.iterdir()) == []


def test_a_file_replaced_by_an_older_one_is_compressed_again(tmp_path):
    """Sphinx copies static files with their source's time, maybe an older one."""
    page = tmp_path / "theme.css"
    page.write_text("a { color: red }\n" * 200)
    precompress(tmp_path)
    page.write_text("b { color: blue }\n" * 200)
    os.utime(page, (1, 1))  # older than the copies
    assert precompress(tmp_path) == (2, 0)
    assert gzip.decompress(Path(f"{page}.gz").read_bytes()) == page.read_bytes()
