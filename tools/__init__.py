"""The book's build and its checks, run from the repository root as
``python -m tools.<name>`` (``make html`` runs ``python -m tools.build_book``)."""
