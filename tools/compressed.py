"""The site's pre-compressed copies: written by the build, served by `make serve`.

A static host sends text compressed: GitHub Pages compresses on the fly with
gzip; hosts such as Netlify, Cloudflare Pages or an nginx with
``gzip_static``/``brotli_static`` send a ``.gz`` or ``.br`` file found beside
the one asked for. So after each build, every text file of the site over
1 KiB gets both copies (:func:`precompress`), and the local server
(:class:`CompressedHandler`, used by `make serve` and the browser tests)
sends the gzip copy, with ``Content-Encoding``, so a page is measured as a
reader of a GitHub Pages site receives it.

Usage: python -m tools.compressed serve DIRECTORY PORT
"""

from __future__ import annotations

import gzip
import http.server
import os
import sys
from pathlib import Path

import brotli

TEXT_SUFFIXES = {".html", ".css", ".js", ".json", ".svg", ".xml", ".txt", ".ipynb"}
MIN_BYTES = 1024  # smaller files gain less than a request's headers
# The local server's preference, first first: gzip, which every browser accepts
# and GitHub Pages sends, so the tests measure the bytes the budget is set in;
# a host that sends .br does better.
ENCODINGS = {"gzip": ".gz", "br": ".br"}


def _compress(data: bytes, suffix: str) -> bytes:
    if suffix == ".gz":
        return gzip.compress(data, compresslevel=9, mtime=0)  # same bytes every build
    # Quality 5: 10 % smaller than gzip -9 over the site, in 1.2 s; quality 11
    # gains another 10 % but takes about a minute, too long for every build.
    return brotli.compress(data, quality=5)


def precompress(site: Path) -> tuple[int, int]:
    """Write ``f.gz`` and ``f.br`` beside each text file ``f`` of ``site``.

    Each copy carries its file's modification time, and a copy whose time
    differs from its file's is stale: written again here, never served. (Sphinx
    copies static files with their source's time, which can be older than a
    copy made before, so "newer than its file" would keep a stale copy.)
    Copies of files that are gone are removed. Returns how many copies were
    written and how many removed.

    Example:
        >>> import tempfile
        >>> site = Path(tempfile.mkdtemp())
        >>> _ = (site / "page.html").write_text("<p>attention</p>" * 200)
        >>> precompress(site), precompress(site)
        ((2, 0), (0, 0))
        >>> gzip.decompress((site / "page.html.gz").read_bytes()) == (site / "page.html").read_bytes()
        True
    """
    written = removed = 0
    for path in sorted(site.rglob("*")):
        if path.suffix in ENCODINGS.values():
            if not path.with_suffix("").exists():
                path.unlink()
                removed += 1
            continue
        if path.suffix not in TEXT_SUFFIXES or not path.is_file():
            continue
        if path.stat().st_size < MIN_BYTES:
            continue
        for suffix in ENCODINGS.values():
            copy = path.with_name(path.name + suffix)
            if is_current(copy, path):
                continue
            tmp = copy.with_name(f".{copy.name}.tmp")
            tmp.write_bytes(_compress(path.read_bytes(), suffix))
            mtime = path.stat().st_mtime_ns
            os.utime(tmp, ns=(mtime, mtime))
            os.replace(tmp, copy)
            written += 1
    return written, removed


def is_current(copy: Path, path: Path) -> bool:
    """Whether ``copy`` was made from ``path`` as it is (same modification time)."""
    return copy.is_file() and copy.stat().st_mtime_ns == path.stat().st_mtime_ns


class CompressedHandler(http.server.SimpleHTTPRequestHandler):
    """Serves a file's ``.gz`` (or else ``.br``) copy where the browser accepts it."""

    def send_head(self):
        path = Path(self.translate_path(self.path))
        accepted = {
            part.split(";")[0].strip()
            for part in self.headers.get("Accept-Encoding", "").split(",")
        }
        if path.is_file():
            for encoding, suffix in ENCODINGS.items():
                copy = path.with_name(path.name + suffix)
                # A stale copy (the file edited since the build, as the tests'
                # broken copies are) is never sent.
                if encoding in accepted and is_current(copy, path):
                    return self._send_copy(path, copy, encoding)
        return super().send_head()

    def _send_copy(self, path: Path, copy: Path, encoding: str):
        handle = open(copy, "rb")  # noqa: SIM115  (copyfile reads it; the caller closes it)
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Encoding", encoding)
        self.send_header("Vary", "Accept-Encoding")
        self.send_header("Content-Length", str(copy.stat().st_size))
        self.send_header(
            "Last-Modified", self.date_time_string(int(path.stat().st_mtime))
        )
        self.end_headers()
        return handle


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[0] != "serve":
        assert __doc__ is not None  # the module's docstring (absent only under -OO)
        print(__doc__.rsplit("Usage: ", 1)[1].strip())
        return 2
    directory, port = argv[1], int(argv[2])

    def handler(*args, **kwargs):
        return CompressedHandler(*args, directory=directory, **kwargs)

    with http.server.ThreadingHTTPServer(("127.0.0.1", port), handler) as server:
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
