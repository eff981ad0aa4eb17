"""The unit tier in a small environment: files whose imports need more than
torch, numpy, pytest and hypothesis are left out where that is missing
(tests/unit/needs.py), and the run says which and why."""

from needs import FILES_NEED, missing

LEFT_OUT = {
    name: lacking
    for name, modules in FILES_NEED.items()
    if (lacking := missing(modules))
}
collect_ignore = ["conftest.py", *LEFT_OUT]  # conftest.py: see tests/conftest.py


def pytest_terminal_summary(terminalreporter):
    for name, lacking in LEFT_OUT.items():
        terminalreporter.write_line(
            f"not collected: tests/unit/{name} (needs {', '.join(lacking)}; "
            "make setup-test installs it)"
        )
