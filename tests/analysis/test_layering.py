"""The analysis package stays pure: importing it must not pull in Django."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_the_analysis_package_imports_without_django():
    code = (
        "import sys\n"
        "import analysis.compare, analysis.convert, analysis.repeats\n"
        "import analysis.scaling, analysis.selection, analysis.verdicts\n"
        "print(sorted(m for m in sys.modules if m == 'django' or m.startswith('django.')))\n"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root
    )
    assert out.stdout.strip() == "[]"
