"""Seed statistics against scipy and against `continual inspect`; paired comparisons against scipy."""
import math
import re
import subprocess

import numpy as np
import pytest
from scipy import stats

from continualkit import aggregate, configuration_name, load_summary, paired, seed_stats, t975

# StudentT.table975 of Sources/ContinualMetrics/SeedStatistics.swift (first entries)
SWIFT_T975 = {1: 12.706204736174694, 2: 4.302652729749462, 3: 3.1824463052837078, 4: 2.7764451051977934,
              9: 2.262157162798205, 30: 2.0422724563012378}


def test_t_quantile_matches_the_swift_table():
    for df, v in SWIFT_T975.items():
        assert t975(df) == pytest.approx(v, rel=1e-12)
    assert math.isnan(t975(0))


def test_seed_stats_vs_scipy():
    x = np.array([0.61, 0.57, 0.66, 0.59, 0.63])
    s = seed_stats(x)
    lo, hi = stats.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
    assert s["n"] == 5
    assert s["mean"] == pytest.approx(x.mean())
    assert s["std"] == pytest.approx(x.std(ddof=1))        # Bessel, not the population std
    assert s["std"] != pytest.approx(x.std(ddof=0))
    assert (s["ci_low"], s["ci_high"]) == pytest.approx((lo, hi))
    assert s["ci_half"] > 1.96 * s["std"] / math.sqrt(5)   # t, not z


def test_seed_stats_edge_cases():
    assert seed_stats([])["n"] == 0 and math.isnan(seed_stats([])["mean"])
    one = seed_stats([0.5])
    assert one["n"] == 1 and one["mean"] == 0.5 and math.isnan(one["std"]) and math.isnan(one["ci_half"])
    nan_skipped = seed_stats([0.5, float("nan"), 0.7])
    assert nan_skipped["n"] == 2 and nan_skipped["mean"] == pytest.approx(0.6)


def test_configuration_name_like_swift():
    assert configuration_name("naive_seed=3") == "naive"
    assert configuration_name("lr=0.1_seed=0") == "lr=0.1"
    assert configuration_name("seed=4") == "seed"
    assert configuration_name("ewc_l100") == "ewc_l100"
    assert configuration_name("a_seed=1_b=2") == "a_b=2"


def test_aggregate_groups_by_configuration_in_sweep_order(synthetic):
    df = load_summary(synthetic)
    agg = aggregate(df, ["acc", "bwt"])
    assert list(agg.index) == ["naive_optimizer.lr=0.01", "naive_optimizer.lr=0.1", "ewc_optimizer.lr=0.01",
                               "ewc_optimizer.lr=0.1", "replay_optimizer.lr=0.01", "replay_optimizer.lr=0.1"]
    g = df[df.configuration == "ewc_optimizer.lr=0.1"]["acc"]
    assert agg.loc["ewc_optimizer.lr=0.1", ("acc", "n")] == 3
    assert agg.loc["ewc_optimizer.lr=0.1", ("acc", "mean")] == pytest.approx(g.mean())
    assert agg.loc["ewc_optimizer.lr=0.1", ("acc", "std")] == pytest.approx(g.std(ddof=1))


def test_paired_matches_scipy_and_matches_on_seed():
    import pandas as pd
    rng = np.random.default_rng(3)
    seeds = list(range(1, 9))
    base = rng.normal(0.6, 0.03, 8)
    meth = base + rng.normal(0.02, 0.01, 8)
    rows = [dict(configuration="naive", seed=s, acc=v, status="completed") for s, v in zip(seeds, base)]
    # method rows in another order, plus a seed the baseline lacks and a failed run
    rows += [dict(configuration="ewc", seed=s, acc=v, status="completed") for s, v in reversed(list(zip(seeds, meth)))]
    rows += [dict(configuration="ewc", seed=99, acc=0.99, status="completed"),
             dict(configuration="ewc", seed=1, acc=np.nan, status="failed")]
    df = pd.DataFrame(rows)
    r = paired(df, "naive", "acc").iloc[0]
    d = meth - base
    assert r.n == 8
    assert r.diff_mean == pytest.approx(d.mean())
    assert r.diff_std == pytest.approx(d.std(ddof=1))
    assert r.p_ttest == pytest.approx(stats.ttest_rel(meth, base).pvalue)
    assert r.p_wilcoxon == pytest.approx(stats.wilcoxon(meth, base).pvalue)
    lo, hi = stats.t.interval(0.95, 7, loc=d.mean(), scale=stats.sem(d))
    assert (r.ci_low, r.ci_high) == pytest.approx((lo, hi))
    assert r.wins == int((d > 0).sum())


def test_paired_wilcoxon_needs_six_pairs():
    import pandas as pd
    df = pd.DataFrame([dict(configuration=c, seed=s, acc=v + (0.01 * s if c == "m" else 0), status="completed")
                       for c in ("b", "m") for s, v in zip(range(5), [0.5, 0.6, 0.55, 0.52, 0.58])])
    r = paired(df, "b", "acc").iloc[0]
    assert r.n == 5 and math.isnan(r.p_wilcoxon) and not math.isnan(r.p_ttest)


def test_unknown_baseline_is_an_error(synthetic):
    with pytest.raises(KeyError):
        paired(load_summary(synthetic), "nope")


# `inspect` prints a steps-per-experience column between ACC and its CI since the step budget
# (issue 24); it is optional here so files and binaries from before it still parse.
ROW = re.compile(r"^(?P<name>\S.*?)?\s+(?P<n>\d+)\s+(?P<acc>-?[\d.]+) ± (?P<accsd>[\d.]+)\s+(?:\d+\s+)?"
                 r"\[(?P<lo>-?[\d.]+), (?P<hi>-?[\d.]+)\]\s+(?P<bwt>-?[\d.]+) ± (?P<bwtsd>[\d.]+)")


def test_aggregate_equals_continual_inspect(real_results):
    """The package's mean ± std and 95% CI equal what `continual inspect` prints (same rows, same order)."""
    path = real_results["tiny_sweep"]
    out = subprocess.run([real_results["_bin"], "inspect", path], capture_output=True, text=True).stdout
    lines = out.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("configuration"))
    parsed, pending = [], None
    for line in lines[start + 1:]:
        if not line.strip():
            break
        m = ROW.match(line)
        if m is None:
            pending = line.strip()
            continue
        name = (m.group("name") or pending or "").strip()
        pending = None
        parsed.append((name, m))
    agg = aggregate(load_summary(path), ["acc", "bwt"])
    assert [p[0] for p in parsed] == list(agg.index)
    for name, m in parsed:
        a = agg.loc[name]
        assert int(m.group("n")) == a[("acc", "n")]
        assert float(m.group("acc")) == pytest.approx(a[("acc", "mean")] * 100, abs=0.0051)
        assert float(m.group("accsd")) == pytest.approx(a[("acc", "std")] * 100, abs=0.0051)
        assert float(m.group("lo")) == pytest.approx(a[("acc", "ci_low")] * 100, abs=0.051)
        assert float(m.group("hi")) == pytest.approx(a[("acc", "ci_high")] * 100, abs=0.051)
        assert float(m.group("bwt")) == pytest.approx(a[("bwt", "mean")] * 100, abs=0.0051)


def test_variants_without_a_swept_value_stay_separate(tmp_path):
    """Ported from the old test_analysis.py: a swept path one variant lacks (NaN) must not merge
    configurations, and only seeds are pooled."""
    import numpy as np
    from conftest import write_results
    R = np.full((2, 2), 0.5)
    runs = []
    for lr in (0.01, 0.1):
        for seed in range(3):
            for lam in (1, 10):
                runs.append(dict(name=f"ewc_lam={lam}_lr={lr:g}_seed={seed}", variant="ewc", seed=seed, R=R,
                                 lam=lam, lr=lr))
            runs.append(dict(name=f"naive_lr={lr:g}_seed={seed}", variant="naive", seed=seed, R=R, lr=lr))
    df = load_summary(str(write_results(tmp_path / "nan.h5", runs, swept=("lam", "lr", "seed"))))
    agg = aggregate(df, ["acc"])
    assert len(agg) == 6 and set(agg[("acc", "n")]) == {3}
    assert "naive_lr=0.01" in agg.index and "ewc_lam=10_lr=0.1" in agg.index


def test_holm_matches_a_hand_computation_and_statsmodels():
    from continualkit.stats import holm
    p = [0.01, 0.04, 0.03, 0.005, float("nan")]
    # by hand, m = 4 tests (NaN is not a test): sorted 0.005, 0.01, 0.03, 0.04
    # → 4·0.005 = 0.02, 3·0.01 = 0.03, 2·0.03 = 0.06, max(0.06, 1·0.04) = 0.06
    got = holm(p)
    assert np.allclose(got[:4], [0.03, 0.06, 0.06, 0.02])
    assert np.isnan(got[4])
    from statsmodels.stats.multitest import multipletests     # the [test] extra; an independent oracle
    rng = np.random.default_rng(3)
    for m in (1, 2, 7, 16):
        q = rng.uniform(0, 0.2, m) ** 2
        assert np.allclose(holm(q), multipletests(q, method="holm")[1], rtol=0, atol=1e-15)
    assert holm([0.9, 0.8])[0] == 1.0            # capped at 1
    assert np.isnan(holm([])).all()


def test_paired_table_shows_holm_beside_the_uncorrected_p(synthetic):
    from continualkit.stats import holm
    from continualkit.tables import paired_table
    df = load_summary(synthetic)
    base = df["configuration"].iloc[0]
    num = paired_table(df, base, ("acc", "bwt"), numeric=True)
    assert len(num) == 2 * (df["configuration"].nunique() - 1)
    assert np.allclose(num["p_ttest_holm"], holm(num["p_ttest"]), equal_nan=True)
    assert (num["p_ttest_holm"].dropna() >= num["p_ttest"].dropna() - 1e-15).all()
    shown = paired_table(df, base, ("acc", "bwt"))
    cols = list(shown.columns)
    assert cols.index("p Holm (t)") == cols.index("p (paired t)") + 1
    assert cols.index("p Holm (W)") == cols.index("p (Wilcoxon)") + 1
