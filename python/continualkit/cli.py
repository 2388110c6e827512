"""`continualkit` command line: summary, table, plot, report, export, check, compare.

    continualkit summary results/regularisation.h5
    continualkit table results/regularisation.h5 --baseline naive --metrics acc,bwt --format latex
    continualkit plot results/regularisation.h5 -o figures/ --format pdf,png
    continualkit report results/regularisation.h5 -o report.html
    continualkit export results/regularisation.h5 --csv out/ | --parquet out/ | --tensorboard runs/ | --wandb wb/
    continualkit check results/regularisation.h5 [--expect-runs 45]
    continualkit compare reference.h5 merged.h5
    continualkit datasets hapt -o datasets/hapt.h5 [--protocol activities|sessions] [--users 1,2,3]
    continualkit datasets watch -o datasets/watch.h5 [--protocol sides|exercises]
    continualkit datasets actigraphy -o datasets/actigraphy.h5   (GPL-3.0 extra)
    continualkit datasets digest datasets/hapt.h5
    continualkit baselines river SCENARIO.h5 -o OUT.h5 [--models hat,arf,logreg] [--seeds 1,2,3] [--per-user]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

from . import __version__
from .cli_data import add_data_commands


def _metrics(s):
    return [m.strip() for m in s.split(",") if m.strip()] if s else None


def cmd_summary(a):
    from . import tables as T
    from .io import load_summary
    df = load_summary(a.file)
    print(T.render(T.grouped(df, _metrics(a.metrics) or T.DEFAULT_METRICS), a.format), end="")


def cmd_table(a):
    from . import tables as T
    for title, t in T.experiment_tables(a.file, metrics=_metrics(a.metrics), baseline=a.baseline):
        if a.format == "markdown":
            print(f"### {title}\n")
        elif a.format == "csv":
            print(f"# {title}")
        print(T.render(t, a.format, caption=title if a.format == "latex" else None))


def cmd_plot(a):
    from . import figures as F
    formats = [f.strip().lower() for f in a.format.split(",") if f.strip()]
    bad = [f for f in formats if f not in ("pdf", "svg", "png")]
    if bad:
        sys.exit(f"unknown format(s) {bad}: pdf, svg, png")
    t = time.time()
    out = F.draw_all(a.file, a.output, formats, verbose=not a.quiet)
    n = sum(len(v) for v in out.values())
    if not a.quiet:
        print(f"{len(out)} figures ({n} files) in {a.output} ({time.time() - t:.1f} s): {', '.join(out)}")
    if a.check:
        problems = [] if out else ["no figure drawn"]
        for paths in out.values():
            for p in paths:
                if p.endswith(".png"):
                    problems += F.check_png(p)
                elif os.path.getsize(p) < 1000:
                    problems.append(f"{p}: only {os.path.getsize(p)} bytes")
        for p in problems:
            print("FAIL:", p)
        print("figures OK (exist, sizes bounded, not blank)" if not problems else f"{len(problems)} problem(s)")
        return 1 if problems else 0


def cmd_report(a):
    from .report import build
    t = time.time()
    r = build(a.file, a.output, png=a.png)
    print(f"{a.output}: {len(r['figures'])} figures ({time.time() - t:.1f} s)")


def cmd_export(a):
    from . import export as E
    done = False
    if a.csv:
        print("\n".join(E.to_csv(a.file, a.csv)))
        done = True
    if a.parquet:
        print("\n".join(E.to_parquet(a.file, a.parquet)))
        done = True
    if a.tensorboard:
        dirs = E.to_tensorboard(a.file, a.tensorboard)
        print(f"{len(dirs)} TensorBoard runs in {a.tensorboard} (tensorboard --logdir {a.tensorboard})")
        done = True
    if a.wandb:
        dirs = E.to_wandb(a.file, a.wandb, project=a.wandb_project, figures=not a.no_figures)
        print(f"{len(dirs)} offline W&B runs in {os.path.join(a.wandb, 'wandb')} "
              f"(upload: wandb sync {os.path.join(a.wandb, 'wandb', 'offline-run-*')})")
        done = True
    if not done:
        sys.exit("give --csv DIR, --parquet DIR, --tensorboard DIR and/or --wandb DIR")


def cmd_check(a):
    from .check import check_file
    problems, notes, checked = check_file(a.file, a.expect_runs)
    print(f"{a.file}: {checked} completed runs, every stored metric recomputed from its matrices")
    for n in notes:
        print("note:", n)
    for p in problems:
        print("FAIL:", p)
    print("OK" if not problems else f"{len(problems)} problem(s)")
    return 0 if not problems else 1


def cmd_compare(a):
    from .check import compare_summaries
    problems = compare_summaries(a.a, a.b)
    for p in problems:
        print("DIFF:", p)
    print(f"{a.a} vs {a.b}: " + ("identical apart from wall times" if not problems else f"{len(problems)} difference(s)"))
    return 0 if not problems else 1


def cmd_cards(a):
    from .cards import cards
    try:
        written = cards(a.file, a.output, a.mnist1d, a.other, a.permuted)
    except ValueError as err:   # e.g. one variant in two --permuted files
        print(f"continualkit cards: {err}", file=sys.stderr)
        return 2
    for path in written:
        print(path)


def cmd_orderings(a):
    from . import verdicts as V
    from .io import load_summary
    known = [p["key"] for p in V.papers(benchmark=a.benchmark)]
    unknown = [k for k in a.paper or [] if k not in known]
    if unknown:
        print(f"continualkit orderings: --paper {unknown[0]} is not a paper of data/orderings.json "
              f"(known: {', '.join(known)}) with --benchmark {a.benchmark}", file=sys.stderr)
        return 2
    print("\n".join(V.orderings_markdown(load_summary(a.file), keys=a.paper, template=a.template,
                                         heading="#" * a.level, settings=a.setting, list_ties=not a.no_ties,
                                         benchmark=a.benchmark)))
    return 0


def cmd_equal_compute(a):
    from .tables import equal_compute_table, render
    print(render(equal_compute_table(a.file, a.equal), a.format,
                 caption="accuracy at equal steps and at equal training FLOPs (mean ± std over seeds)"))


def cmd_pareto(a):
    from . import compression as C
    files = [a.file] + a.more
    points = C.load_points(files)
    if points.empty:
        print(f"continualkit: {', '.join(files)}: no completed runs", file=sys.stderr)
        return 2
    print(C.markdown_table(points))
    sweep = C.sweep_table(points)
    if sweep:
        print()
        print(sweep)
    if a.output:
        for path in C.draw(files, a.output, formats=tuple(a.format.split(","))):
            print(path)
    return 0


def _add_reading_commands(sub):
    """summary, table, plot, report, export, check, compare: read one results file (two for compare)."""
    s = sub.add_parser("summary", help="grouped metrics per configuration (mean ± std, 95%% CI, n)")
    s.add_argument("file")
    s.add_argument("--metrics")
    s.add_argument("--format", default="markdown", choices=["markdown", "csv", "latex"])
    s.set_defaults(fn=cmd_summary)

    s = sub.add_parser("table", help="the experiment's tables (+ paired comparison against a baseline)")
    s.add_argument("file")
    s.add_argument("--baseline", help="configuration to compare against, matched on seed (default: the "
                                      "experiment's, e.g. naive; for federated files the local-only one)")
    s.add_argument("--metrics", help="comma-separated summary columns, e.g. acc,bwt,forgetting")
    s.add_argument("--format", default="markdown", choices=["markdown", "csv", "latex"])
    s.set_defaults(fn=cmd_table)

    s = sub.add_parser("plot", help="every figure that applies, as PDF/SVG/PNG (300 dpi)")
    s.add_argument("file")
    s.add_argument("-o", "--output", required=True, help="directory")
    s.add_argument("--format", default="pdf,svg,png", help="comma-separated: pdf,svg,png")
    s.add_argument("-q", "--quiet", action="store_true")
    s.add_argument("--check", action="store_true", help="exit 1 unless every file exists, PNGs are 300 dpi, "
                                                         "within size bounds and not blank (CI)")
    s.set_defaults(fn=cmd_plot)

    s = sub.add_parser("report", help="self-contained HTML report")
    s.add_argument("file")
    s.add_argument("-o", "--output", required=True, help="report.html")
    s.add_argument("--png", action="store_true", help="embed PNG instead of inline SVG (smaller for huge sweeps)")
    s.set_defaults(fn=cmd_report)

    s = sub.add_parser("export", help="CSV / Parquet / TensorBoard / Weights & Biases (offline runs)")
    s.add_argument("file")
    s.add_argument("--csv", metavar="DIR")
    s.add_argument("--parquet", metavar="DIR")
    s.add_argument("--tensorboard", metavar="DIR")
    s.add_argument("--wandb", metavar="DIR", help="one offline W&B run per run (config, metrics per experience, "
                                                  "figures); upload later with `wandb sync`")
    s.add_argument("--wandb-project", metavar="NAME", help="W&B project (default: the experiment's name)")
    s.add_argument("--no-figures", action="store_true", help="with --wandb: do not draw and attach figures")
    s.set_defaults(fn=cmd_export)

    s = sub.add_parser("check", help="recompute every stored metric from the matrices and compare")
    s.add_argument("file")
    s.add_argument("--expect-runs", type=int)
    s.set_defaults(fn=cmd_check)

    s = sub.add_parser("compare", help="same runs and values in two files' /summary, wall times aside")
    s.add_argument("a")
    s.add_argument("b")
    s.set_defaults(fn=cmd_compare)


def _add_paper_commands(sub):
    """cards, orderings, equal-compute, pareto: the comparison tables the docs quote."""
    s = sub.add_parser("cards", help="reproduction cards (docs/reproductions/) from hsu_table (+ MNIST-1D) results")
    s.add_argument("file", help="results of Experiments/hsu_table.json")
    s.add_argument("--mnist1d", help="results of Experiments/mnist1d.json")
    s.add_argument("--permuted", nargs="+", default=[], metavar="FILE",
                   help="results of the permuted MNIST-784 files, read as one (e.g. results/mnist_permuted.h5 "
                        "results/mnist_permuted_task_class.h5)")
    s.add_argument("--other", nargs="+", default=[], metavar="FILE",
                   help="results of the experiments cards name in \"other\" (e.g. results/architectural.h5 results/peft.h5)")
    s.add_argument("-o", "--output", required=True, help="directory (docs/reproductions)")
    s.set_defaults(fn=cmd_cards)

    s = sub.add_parser("orderings", help="every ordering a paper reports (data/orderings.json), checked on our seeds")
    s.add_argument("file", help="results whose variants are named {method}_{setting} (e.g. results/mnist_split.h5)")
    s.add_argument("--paper", nargs="+", metavar="KEY", help="papers to check (hsu2018, vandeven2022, ...; default all)")
    s.add_argument("--setting", nargs="+", choices=["task", "domain", "class"], help="settings to check (default all)")
    s.add_argument("--template", default="{variant}_{setting}",
                   help="our variant's name from the paper row's `variant` and the setting (default %(default)s)")
    s.add_argument("--benchmark", default="split", choices=["split", "permuted"],
                   help="the file's benchmark: only papers of it are checked (default %(default)s)")
    s.add_argument("--no-ties", action="store_true", help="count the paper's ties, do not list them")
    s.add_argument("--level", type=int, default=3, choices=range(1, 6), help="markdown heading level (default 3)")
    s.set_defaults(fn=cmd_orderings)

    s = sub.add_parser("equal-compute", help="accuracy at equal compute beside equal steps (Prabhu et al. 2023)")
    s.add_argument("file", help="results with the step budget")
    s.add_argument("equal", help="results of the same variants with training.flops_per_experience")
    s.add_argument("--format", default="markdown", choices=["markdown", "csv", "latex"])
    s.set_defaults(fn=cmd_equal_compute)

    s = sub.add_parser("pareto", help="compression Pareto study (Experiments/compression.json): table and figure")
    s.add_argument("file", help="results file, e.g. results/compression.h5 (its runs grouped by their scenario)")
    s.add_argument("more", nargs="*", help="more results files read as one study (e.g. one scenario each)")
    s.add_argument("-o", "--output", help="directory for compression_pareto.png/.pdf (table only without it)")
    s.add_argument("--format", default="png,pdf", help="comma-separated: pdf,svg,png")
    s.set_defaults(fn=cmd_pareto)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="continualkit", description="Analysis of ContinualKit results files (HDF5).",
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--version", action="version", version=f"continualkit {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    _add_reading_commands(sub)
    add_data_commands(sub)
    _add_paper_commands(sub)
    return p


def main(argv=None):
    p = _parser()
    a = p.parse_args(argv)
    if a.command == "baselines":
        # baselines reads a scenario or experiment file, not a results file.
        if not os.path.exists(a.scenario):
            p.error(f"no such file: {a.scenario}")
    inputs = _results_inputs(a)
    for path in inputs:
        if not os.path.exists(path):
            p.error(f"no such file: {path}")
    from .filekind import wrong_results_file
    for path in inputs:
        problem = wrong_results_file(path, a.command)
        if problem:
            # One line, no traceback: what the file is and which command takes it.
            print(f"continualkit {a.command}: {problem}", file=sys.stderr)
            return 2
    try:
        rc = a.fn(a)
    except KeyError as e:
        print(f"continualkit: {e.args[0] if e.args else e}", file=sys.stderr)
        return 2
    return rc or 0


def _results_inputs(a) -> list[str]:
    """The results files a command reads (datasets reads package data and scenario files)."""
    if a.command in ("datasets", "baselines"):
        return []
    paths = [getattr(a, name, None) for name in ("file", "a", "b", "equal", "mnist1d")]
    paths += list(getattr(a, "more", None) or []) + list(getattr(a, "other", None) or [])
    paths += list(getattr(a, "permuted", None) or [])
    return [x for x in paths if x]


def _main_piped():
    """Entry point: a closed pipe (`continualkit table F | head`) ends quietly, as for Unix tools."""
    try:
        return main()
    except BrokenPipeError:
        # Further writes to the closed stdout would raise again at interpreter exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(_main_piped())
