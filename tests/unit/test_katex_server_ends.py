"""KaTeX's render servers end with the build that started them, even when
the build is killed (SIGKILL): docs/_ext/book_math.py starts them with
die_with_parent, shown here on a child that would otherwise sleep a minute."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

EXT = Path(__file__).resolve().parents[2] / "docs" / "_ext"
STARTER = """
import subprocess, time
from book_math import die_with_parent
child = subprocess.Popen(["sleep", "60"], preexec_fn=die_with_parent)
print(child.pid, flush=True)
time.sleep(60)
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie has ended
        return stat.read().split()[2] != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG")
def test_a_server_ends_when_its_build_is_killed():
    env = {**os.environ, "PYTHONPATH": str(EXT)}  # where book_math lives
    starter = subprocess.Popen(
        [sys.executable, "-c", STARTER], stdout=subprocess.PIPE, text=True, env=env
    )
    assert starter.stdout is not None
    child = int(starter.stdout.readline())
    assert alive(child)
    starter.send_signal(signal.SIGKILL)
    starter.wait()
    deadline = time.monotonic() + 10
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child)
