"""The C test driver under ASan/UBSan and under valgrind (csolver/tests/run_sanitizers.sh)."""

from __future__ import annotations

import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "csolver" / "tests" / "run_sanitizers.sh"


def test_sanitizers_and_valgrind_clean() -> None:
    proc = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "sanitizers and valgrind: clean" in proc.stdout
