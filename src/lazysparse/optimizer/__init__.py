"""optimizer stage of lazysparse: heuristic passes from an api plan to normal form, Plan →
Plan (it imports neither the api nor the kernels).

Public: :func:`optimize`, :data:`PASSES`, :func:`run_passes`, :func:`schedule_reports`
(how each kernel's loop order was chosen, for ``xp.explain``).
"""

from lazysparse.optimizer.pipeline import PASSES, optimize, run_passes
from lazysparse.optimizer.reports import schedule_reports

__all__ = ["PASSES", "optimize", "run_passes", "schedule_reports"]
