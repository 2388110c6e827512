"""ContinualKit analysis: results files (HDF5) as pandas/xarray, statistics over seeds, paired
comparisons, publication figures, an HTML report and exports (docs/analysis.md); and running
experiments from Python through the `continual` binary: `run`, `sweep`, `validate`
(docs/python-driver.md)."""
__version__ = "0.1.0"


def __getattr__(name):
    """`ck.figures`, `ck.tables`, `ck.report`, `ck.export`, `ck.check` after `import continualkit
    as ck`, imported on first use (matplotlib takes seconds to load; the CLI's table commands
    should not pay for it)."""
    if name in ("figures", "tables", "report", "export", "check"):
        import importlib
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'continualkit' has no attribute {name!r}")

from .io import (configuration_name, curves, experiment_json, federation, federation_runs, is_federated,  # noqa: F401
                 load_run, load_summary, local_only_configuration, metric_matrix, personalisation_gains,
                 population, prequential, provenance, run_config, swept_values)
from .metrics import (acc, all_metrics, bwt, forgetting, forgetting_per_experience, fwt,  # noqa: F401
                      learning_accuracy)
from .stats import METRICS, aggregate, aggregate_long, configurations, paired, seed_stats, t975  # noqa: F401
from .driver import (ConfigError, ContinualError, ContinualNotFound, RunFailed, RunInterrupted,  # noqa: F401
                     find_binary, run, sweep, validate)
