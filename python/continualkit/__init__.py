"""ContinualKit analysis: results files (HDF5) as pandas/xarray, statistics over seeds, paired
comparisons, publication figures, an HTML report and exports. See docs/analysis.md."""
__version__ = "0.1.0"

from .io import (configuration_name, curves, experiment_json, load_run, load_summary, metric_matrix,  # noqa: F401
                 population, prequential, provenance, run_config, swept_values)
from .metrics import (acc, all_metrics, bwt, forgetting, forgetting_per_experience, fwt,  # noqa: F401
                      learning_accuracy)
from .stats import METRICS, aggregate, aggregate_long, configurations, paired, seed_stats, t975  # noqa: F401
