"""Run the fault review: ``python -m tools.fault_review [--all] [--flips N]``."""

import sys

from tools.fault_review.cli import main

if __name__ == "__main__":
    sys.exit(main())
