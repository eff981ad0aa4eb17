"""The steps of ``python -m tools.build_book``, one module per concern.

``common`` (paths and the failure every step raises), ``gates`` (the checks
before Sphinx starts), ``cache`` (the build folder: lock, claim, clean, prune),
``editions`` (the two Sphinx processes and their kernels), ``report`` (the
per-page table and build-report.html), ``page_weight`` (the page bench's
measurements on that report), ``sitemap`` and ``pdf``.
"""
