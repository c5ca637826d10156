"""Headroom's benchmark runner: plain Python, never imports Django.

The dashboard calls it through one seam, `runner.sweep.run_plan`; a performance engineer can
use it alone on a GPU node through `python -m runner`.
"""

__version__ = "0.1.0"
