"""Reading ContinualKit results files (layout: docs/results-format.md).

    import continualkit as ck
    df = ck.load_summary("results/regularisation.h5")    # one row per run, str columns, "configuration"
    R = ck.metric_matrix("results/regularisation.h5")     # xarray: run × trained_through × evaluated

One module per kind of data: `summary` (the summary table, provenance, a run's JSON), `run` (one
run as plain values), `matrices` (matrices and curves as xarray), `users` (a population's
per-user data), `federated` (a run's federation group) and `federated_runs` (federated runs as
one table, personalisation gains). Everything is importable from `continualkit.io` itself.
"""
from .federated import FEDERATION_CLIENT, FEDERATION_EVALUATION, FEDERATION_ROUND, federation, is_federated  # noqa: F401
from .federated_runs import federation_runs, local_only_configuration, personalisation_gains  # noqa: F401
from .matrices import _exp_names, _unique_labels, curves, metric_matrix, prequential  # noqa: F401
from .run import load_run  # noqa: F401
from .summary import (MATRIX_ALIASES, MATRIX_NAMES, TIMING_COLUMNS, _json_attr, _str,  # noqa: F401
                      configuration_name, experiment_json, load_summary, provenance, run_config, swept_values)
from .users import population  # noqa: F401
