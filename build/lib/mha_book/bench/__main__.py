"""``python -m mha_book.bench``."""

import sys

from mha_book.bench.cli import main

sys.exit(main())
