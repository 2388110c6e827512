"""Tables of grouped metrics (mean ± std over seeds, 95 % CI, n), paired comparisons against a
baseline, and the per-experiment tables the README shows (regularisation, replay, PEFT, the Hsu
et al. 2018 table beside the paper's numbers), as markdown, CSV or LaTeX.

Every table is a pandas DataFrame of display strings (`render` turns it into text); `numeric=True`
gives the numbers instead (CSV).

Modules: `grouped` (grouped metrics, paired comparisons), `experiments` (replay, PEFT, device),
`federation`, `hsu` (beside a paper; equal compute), `presets` (which tables a file gets),
`rendering` (markdown, CSV, LaTeX). Everything is importable from `continualkit.tables` itself.
"""
from .experiments import _first_run_per_conf, device_table, peft_table, regularisation_extra, replay_table  # noqa: F401
from .federation import FEDERATION_COLUMNS, federation_table  # noqa: F401
from .grouped import DEFAULT_METRICS, FORMAT, _ci, _p, _pm, grouped, paired_table  # noqa: F401
from .hsu import _budgets, equal_compute_table, hsu_table, paper_table  # noqa: F401
from .presets import PRESETS, experiment_tables  # noqa: F401
from .rendering import legacy_configurations, render, strip_seed_suffix  # noqa: F401
