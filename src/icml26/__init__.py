"""icml26: the methods of 19 ICML 2026 papers as reusable components, each with a CPU-scale reproduction of the
paper's headline claim. `icml26 list` shows the papers; `icml26 reproduce` re-measures them; `icml26 report`
writes the side-by-side report. Each paper's method is imported from its own package, e.g.
`from icml26.gradpower import AdamWPower`.
"""

__version__ = "0.2.0"

from icml26.registry import PAPERS, Paper, get_paper  # noqa: E402
from icml26.results import Claim, Result, load_result, save_result  # noqa: E402

__all__ = ["PAPERS", "Paper", "get_paper", "Claim", "Result", "load_result", "save_result", "__version__"]
