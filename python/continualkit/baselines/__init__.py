"""Non-neural baselines on the toolkit's streams, written in its results layout.

    continualkit baselines river SCENARIO.h5 -o OUT.h5 [--models hat,arf,logreg] [--seeds 1,2,3]
                                             [--per-user [--user-column user]]

    from continualkit.baselines import run_river
    rows = run_river("datasets/habit.h5", "results/river_habit.h5", models=["hat"], seeds=[1, 2, 3])

One run per (model, seed): variant `river_<model>`, run name `river_<model>_seed=<s>` when several
seeds are given (a seed sweep, as `continual sweep` names runs). With `per_user`, every user of a
file with a per-sample user column (the files of `continualkit datasets`, your own per-user
files) gets their own model, and the run is a population: `population/` per user, the run's
matrix the mean over users, forgetting the mean of per-user values (docs/scenarios.md
"Populations"). docs/real-users.md "Streaming baselines (river)" has the numbers.
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

from .. import metrics as M
from . import scenario_file as S

__all__ = ["run_river", "MODEL_NAMES"]

MODEL_NAMES = ("hat", "arf", "logreg")


def _chance(classes: int, T: int) -> np.ndarray:
    return np.full(T, 1.0 / classes)


def _stream_run(res, sc: S.ScenarioFile, experiences) -> dict:
    return dict(R=res.R, baseline_random=_chance(sc.classes, len(experiences)), baseline_init=res.baseline_init,
                test_sizes=res.test_sizes, train_sizes=res.train_sizes, confusion=res.confusion)


def _stream_run_of(RM, m, seed, sc, window, record_every):
    """One model over the whole stream: (run, river description, prequential accuracy, train and
    evaluation seconds, memory bytes)."""
    res, desc = RM.run_model(m, seed, sc.experiences, sc.classes, sc.feature_names,
                             window=window, record_every=record_every)
    run = _stream_run(res, sc, sc.experiences)
    run["prequential"] = dict(window=window, record_every=record_every, position=res.position,
                              window_accuracy=res.window_accuracy, cumulative_accuracy=res.cumulative_accuracy,
                              experience=res.experience, experience_starts=res.experience_starts)
    return run, desc, res.prequential_accuracy, res.train_seconds, res.eval_seconds, res.memory_bytes


def _population_run(RM, m, seed, sc, user_list, streams, user_column, quantiles, window, record_every):
    """One model per user: the run of the mean matrices with every user's values in `population`,
    and (river description, mean prequential accuracy, summed train and evaluation seconds, mean
    memory bytes), as `_stream_run_of`."""
    chance = _chance(sc.classes, len(sc.experiences))
    mats, per, status, msgs, secs, preqs = [], {}, [], [], [], []
    fpes, mems, train_s, eval_s = [], [], 0.0, 0.0
    desc = confusion = base_init = None
    for u, exps in zip(user_list, streams):
        res, desc = RM.run_model(m, seed, exps, sc.classes, sc.feature_names, window=window, record_every=record_every)
        mats.append(res.R)
        um = M.all_metrics(res.R, chance, res.baseline_init)
        um["forgetting_chaudhry"], um["fwt_gem"] = um["forgetting"], um["fwt"]
        for k, v in um.items():
            per.setdefault(k, []).append(v)
        status.append("completed")
        msgs.append("")
        secs.append(res.train_seconds)
        preqs.append(res.prequential_accuracy)
        fpes.append(M.forgetting_per_experience(res.R))
        mems.append(res.memory_bytes)
        train_s += res.train_seconds
        eval_s += res.eval_seconds
        confusion = res.confusion.copy() if confusion is None else confusion + res.confusion
        base_init = res.baseline_init.copy() if base_init is None else base_init + res.baseline_init
    mats = np.array(mats)
    run = dict(R=mats.mean(axis=0), baseline_random=chance, baseline_init=base_init / len(user_list),
               # per user (the mean, rounded), as the Swift side's population runs;
               # samples_processed: all users together
               test_sizes=np.rint(np.mean([[len(e.test) for e in ex] for ex in streams], axis=0)),
               train_sizes=np.rint(np.mean([[len(e.train) for e in ex] for ex in streams], axis=0)),
               samples_processed=np.sum([[len(e.train) for e in ex] for ex in streams], axis=0),
               confusion=confusion)
    run["forgetting"] = {"forgetting": float(np.mean(per["forgetting"])),
                         "forgetting_max_all_rows": float(np.mean(per["forgetting_max_all_rows"]))}
    run["forgetting_per_experience"] = np.mean(fpes, axis=0)
    run["population"] = dict(user=user_list, user_column=user_column, seed=seed, model_seed=[seed] * len(user_list),
                             status=status, message=msgs, train_seconds=secs, matrices=mats,
                             prequential_accuracy=preqs, metrics=per, quantiles=list(quantiles))
    run["prequential"] = None
    return run, desc, float(np.mean(preqs)), train_s, eval_s, int(np.mean(mems))


def _user_streams(sc, scenario, user_column, users):
    """(user column, session column, time column, users, each user's experiences) of a scenario
    file with a per-sample user column; `users` (ids, or None for all) must all be present."""
    user_column = user_column or str(sc.attrs.get("user_column") or "user")
    session_column = sc.attrs.get("session_column") or None
    time_column = sc.attrs.get("time_column") or None
    present = S.users_of(sc, user_column)
    user_list = present
    if users:
        user_list = [type(present[0])(u) if present else u for u in users]
        missing = [u for u in user_list if u not in present]
        if missing:
            raise ValueError(f"--users: {missing} not in {scenario} ({len(present)} users)")
    streams = [S.per_user(sc, u, user_column, session_column, time_column) for u in user_list]
    return user_column, session_column, time_column, user_list, streams


def run_river(scenario: str, output: str, models=MODEL_NAMES, seeds=(1,), *, per_user: bool = False,
              user_column: str | None = None, users=None, quantiles=(0.05, 0.25, 0.5, 0.75, 0.95),
              window: int = 100, record_every: int = 10, name: str | None = None, command: str = "",
              first_index: int = 0, log=None) -> list[dict]:
    """Runs every (model, seed) on the scenario file and writes OUT.h5; returns the summary rows.
    `first_index`: the first run's sweep_index (e.g. the number of runs of a neural file the
    output will be merged with, so `continual merge` keeps every sweep_index distinct)."""
    from . import river_models as RM
    from .results_file import write_file, run_id
    log = log or (lambda s: None)
    for m in models:
        if m not in RM.MODELS:
            raise ValueError(f"unknown model {m!r}: {', '.join(RM.MODELS)}")
    version = RM.river_version()
    sc = S.read(scenario)
    user_list = streams = session_column = time_column = None
    if per_user:
        user_column, session_column, time_column, user_list, streams = _user_streams(sc, scenario, user_column, users)
    scen = S.scenario_summary(sc)
    protocol = {"experience": "learn_one over each experience's training samples in stored order (one pass), then "
                              "predict_one on every experience's test set",
                "prequential": f"test-then-train over the concatenated training stream; window {window}, "
                               f"recorded every {record_every} samples"}
    experiment = {"baseline": "river", "river_version": version, "models": list(models), "seeds": list(seeds),
                  "scenario": scen, "scenario_path": scenario, "protocol": protocol, "command": command,
                  "per_user": bool(per_user)}
    if per_user:
        experiment.update(user_column=user_column, session_column=session_column, time_column=time_column,
                          users=[str(u) for u in user_list], quantiles=list(quantiles))
    swept = len(seeds) > 1
    stream_meta = {"stream_generator": sc.name, "stream_label": str(sc.attrs.get("metadata_json", "")),
                   "stream_source_file": os.path.basename(scenario)}
    runs, index = [], 0
    for m in models:
        for seed in seeds:
            t0 = time.perf_counter()
            variant = f"river_{m}"
            run_name = f"{variant}_seed={seed}" if swept else variant
            if not per_user:
                run, desc, preq, train_s, eval_s, mem = _stream_run_of(RM, m, seed, sc, window, record_every)
                log_extra = ""
            else:
                run, desc, preq, train_s, eval_s, mem = _population_run(RM, m, seed, sc, user_list, streams, user_column,
                                                                        quantiles, window, record_every)
                log_extra = f", {len(user_list)} users"
            config = {"baseline": "river", "model": m, "river_model": desc, "river_version": version, "seed": seed,
                      "name": variant, "scenario": scen, "protocol": protocol,
                      "per_user": ({"user_column": user_column, "users": [str(u) for u in user_list]}
                                   if per_user else None)}
            rid = run_id(config)
            run.update(run_id=rid, name=run_name, variant=variant, strategy=f"river:{m}", scenario=sc.name, seed=seed,
                       sweep_index=first_index + index, config=config, sweep_values={"seed": seed} if swept else {},
                       experience_names=sc.experience_names,
                       experience_metadata=[e.metadata_json for e in sc.experiences],
                       feature_names=sc.feature_names, wall_seconds=time.perf_counter() - t0,
                       costs={"train_seconds": float(train_s), "eval_seconds": float(eval_s),
                              "python_memory_bytes": int(mem),
                              "training_samples_per_second":
                                  float(np.sum(run.get("samples_processed", run["train_sizes"])) / train_s)
                              if train_s > 0 else 0.0},
                       summary={"prequential_acc": preq},
                       attrs={"baseline": "river", "river_version": version, "river_model": desc["class"],
                              "protocols": "experience (accuracy_matrix) and prequential (prequential/ or "
                                           "population/prequential_accuracy), one pass", **stream_meta})
            if per_user:
                run["attrs"]["stream_population_users"] = str(len(user_list))
                run["attrs"]["stream_population_note"] = ("accuracy_matrix, baselines and metrics are over the mean "
                                                          "matrices of all completed users; per-user values in population/")
            runs.append(run)
            index += 1
            Mx = M.all_metrics(run["R"])
            bwt = "—" if np.isnan(Mx["bwt"]) else f"{100 * Mx['bwt']:+.2f}"
            log(f"[{index}/{len(models) * len(seeds)}] {run_name} {rid}: ACC {100 * Mx['acc']:.2f}% "
                f"BWT {bwt} prequential {100 * preq:.2f}% "
                f"({time.perf_counter() - t0:.1f} s{log_extra})")
    desc_text = (f"river baselines ({', '.join(models)}; seeds {', '.join(map(str, seeds))}) on {os.path.basename(scenario)}"
                 + (f", one model per user ({len(user_list)} users)" if per_user else "")
                 + f"; river {version}")
    return write_file(output, runs, experiment_name=name or f"river_{sc.name}", description=desc_text,
                      experiment=experiment, experiment_path=scenario, swept_seeds=swept)


def main_river(a) -> int:
    """`continualkit baselines river …` (cli.py)."""
    models = [m.strip() for m in a.models.split(",") if m.strip()]
    try:
        seeds = [int(s) for s in a.seeds.split(",") if s.strip()]
    except ValueError:
        print(f"continualkit baselines: --seeds: comma-separated integers, got {a.seeds!r}", file=sys.stderr)
        return 2
    users = [u.strip() for u in a.users.split(",") if u.strip()] if a.users else None
    if os.path.exists(a.output) and not a.overwrite:
        print(f"continualkit baselines: {a.output} exists (--overwrite replaces it)", file=sys.stderr)
        return 2
    t = time.time()
    try:
        rows = run_river(a.scenario, a.output, models=models, seeds=seeds, per_user=a.per_user or bool(users),
                         user_column=a.user_column, users=users, window=a.window, record_every=a.record_every,
                         name=a.name, command="continualkit " + " ".join(sys.argv[1:]), first_index=a.first_index,
                         log=print)
    except (ValueError, ImportError) as e:
        print(f"continualkit baselines: {e}", file=sys.stderr)
        return 2
    print(f"results: {a.output} ({len(rows)} runs, {time.time() - t:.1f} s)")
    return 0
