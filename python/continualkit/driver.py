"""Define, check and run experiments from Python: `continualkit.run(config)` and
`continualkit.sweep(config, jobs=2)` call the `continual` binary and return the results file
loaded as `load_summary` loads it (docs/python-driver.md).

    import continualkit as ck
    df = ck.run({"name": "first", "scenario": {"type": "habit_drift"}, "variants": [...]})
    df.attrs["path"]                      # the results file, for ck.metric_matrix(...) and the rest

The binary does the work; Python only writes the experiment file, starts the command, follows
its `--plain` progress lines (a tqdm bar) and reads the HDF5 file it wrote, so the numbers are
exactly the command's. A config refused by `continual validate` raises `ConfigError` with the
key path; Ctrl-C stops the command the way it stops on a terminal (finished runs stay in the
file) and raises `RunInterrupted`, a KeyboardInterrupt.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import warnings
from contextlib import contextmanager
from typing import Callable, Optional, Sequence, Union

import pandas as pd

from .cli_lines import Refusal, RunEvent, parse_header, parse_progress, parse_refusal, parse_results, parse_tuning
from .io import load_summary

Config = Union[dict, str, "os.PathLike[str]"]

#: Seconds to wait for the command to fold its finished runs into the file after Ctrl-C.
INTERRUPT_GRACE_SECONDS = 120


class ContinualError(Exception):
    """Any failure of the `continual` command seen from Python."""


class ContinualNotFound(ContinualError, FileNotFoundError):
    """No `continual` binary: neither the `binary=` argument, $CONTINUAL_BIN nor the PATH has one."""


class ConfigError(ContinualError, ValueError):
    """`continual validate` refused the experiment. Attributes: `key_path` (`.model.hiden`; ""
    for the top level; None when the problem has no key, e.g. a JSON syntax error), `keys` (the
    same as a tuple: `("model", "hiden")`), `message` (the CLI's text after the key path),
    `context` (`variant "a"` when the key belongs to one variant, else ""), `line`/`column` (of a
    JSON syntax error), `file` (the experiment file, or "<dict>"), `stderr` (all the CLI printed)."""

    def __init__(self, refusal: Refusal, file: str, stderr: str):
        self.key_path, self.keys, self.message = refusal.key_path, refusal.keys, refusal.message
        self.context, self.line, self.column = refusal.context, refusal.line, refusal.column
        self.file, self.stderr = file, stderr
        where = self.key_path if self.key_path else "(top level)" if self.key_path == "" else None
        if where is None and self.line is not None:
            where = f"line {self.line}, column {self.column}"
        super().__init__(f"{file}: {where}: {self.message}" if where else f"{file}: {self.message}")


class RunFailed(ContinualError):
    """The command exited with an error after starting. `returncode` 1: a run failed or
    diverged (`results` then holds the file's summary, failed rows included); 2: bad input that
    validation cannot see (e.g. an existing output without `overwrite` or `resume`). `stderr`,
    `stdout`: what the command printed."""

    def __init__(self, message: str, returncode: int, stdout: str, stderr: str,
                 results: Optional[pd.DataFrame] = None):
        super().__init__(message)
        self.returncode, self.stdout, self.stderr, self.results = returncode, stdout, stderr, results


class RunInterrupted(ContinualError, KeyboardInterrupt):
    """Ctrl-C (KeyboardInterrupt) while the command ran: it was stopped with SIGINT, as on a
    terminal, so every finished run is in `path`; run again with `resume=True` to do the rest."""

    def __init__(self, path: Optional[str], returncode: Optional[int], stderr: str):
        self.path, self.returncode, self.stderr = path, returncode, stderr
        super().__init__(f"interrupted: the finished runs are in {path}; finish them with resume=True")


def find_binary(binary: Optional[str] = None) -> str:
    """The `continual` executable: `binary` if given, else $CONTINUAL_BIN, else the first on PATH."""
    for source, candidate in (("binary=", binary), ("$CONTINUAL_BIN", os.environ.get("CONTINUAL_BIN"))):
        if candidate:
            path = shutil.which(os.fspath(candidate)) or os.fspath(candidate)
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return os.path.abspath(path)
            raise ContinualNotFound(f"{source} {candidate!r} is not an executable file; pass binary= the path of "
                                    "`continual` (swift build -c release --product continual: .build/release/continual)")
    found = shutil.which("continual")
    if found:
        return found
    raise ContinualNotFound(
        "no `continual` binary: pass binary='/path/to/continual', set $CONTINUAL_BIN, or put it on the PATH "
        "(swift build -c release --product continual && export PATH=\"$PWD/.build/release:$PATH\")")


@contextmanager
def experiment_file(config: Config, base_dir=None):
    """Yields (path given to the CLI, name shown in errors). A path is used as it is. A dict is
    written as JSON to a hidden temporary file *in* `base_dir` (default: the working directory)
    and removed afterwards, so its relative paths (a dataset's "path", "output", init_from)
    resolve against `base_dir` exactly as if the dict were saved there as a file — the CLI
    resolves them against the file's directory (docs/json-reference-paths.md) and hashes them as
    written into the run ids."""
    if not isinstance(config, (dict, str, os.PathLike)):
        raise TypeError(f"config must be a dict or the path of a JSON file, not {type(config).__name__}")
    if not isinstance(config, dict):
        if base_dir is not None:
            raise TypeError("base_dir applies to a dict config; a file's paths are relative to the file")
        path = os.fspath(config)
        yield path, path
        return
    directory = os.path.abspath(os.fspath(base_dir) if base_dir is not None else os.getcwd())
    name = str(config.get("name", "experiment")).replace(os.sep, "_")
    fd, path = tempfile.mkstemp(prefix=f".continualkit-{name}-", suffix=".json", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(config, fh, indent=1)
        yield path, "<dict>"
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass


def validate(config: Config, *, binary: Optional[str] = None, base_dir=None) -> str:
    """`continual validate` on `config` (a dict or a path); returns what it prints (the runs and
    their ids) or raises ConfigError with the key path of the first problem."""
    exe = find_binary(binary)
    with experiment_file(config, base_dir) as (path, shown):
        return _validate(exe, path, shown)


def _validate(exe: str, path: str, shown: str) -> str:
    p = subprocess.run([exe, "validate", path], capture_output=True, text=True)
    if p.returncode != 0:
        refusal = parse_refusal(p.stderr, path)
        raise ConfigError(refusal, shown, p.stderr.replace(path, shown))
    return p.stdout.replace(path, shown)


def run(config: Config, output=None, *, binary: Optional[str] = None, overwrite: bool = False,
        resume: bool = False, jobs: Optional[int] = None, variant: Optional[str] = None,
        progress=True, base_dir=None, check: bool = True, on_run: Optional[Callable[[RunEvent], None]] = None,
        tensorboard=None, wandb=None, extra_args: Sequence[str] = ()) -> pd.DataFrame:
    """Runs an experiment (`continual run`) and returns its results file as `load_summary` reads
    it: one row per run; `df.attrs["path"]` is the file.

    config: a dict (see `experiment_file` for where its relative paths resolve; `base_dir`) or
    the path of a JSON file. output: the results file (relative to the working directory;
    default: the config's "output", else results/NAME.h5). overwrite / resume: replace or
    complete an existing results file (without either, an existing file raises RunFailed).
    jobs: runs at once (default 1). variant: only this variant. progress: True for a tqdm bar,
    False for none, or a tqdm-like class to use. check: raise RunFailed when a run failed or
    diverged (else return the summary with those rows). on_run: called with each RunEvent.
    tensorboard / wandb: a directory to log each finished run to while the command runs
    (`continualkit.live`). extra_args: more `continual run` options (e.g. ["--max-memory", "4G"])."""
    args = (["--variant", variant] if variant else []) + (["--jobs", str(jobs)] if jobs else [])
    return _drive("run", config, output, binary=binary, overwrite=overwrite, resume=resume, progress=progress,
                  base_dir=base_dir, check=check, on_run=on_run, tensorboard=tensorboard, wandb=wandb,
                  extra_args=args + list(extra_args))


def sweep(config: Config, output=None, *, jobs: Optional[int] = None, binary: Optional[str] = None,
          overwrite: bool = False, resume: bool = False, shard: Optional[str] = None, progress=True,
          base_dir=None, check: bool = True, on_run: Optional[Callable[[RunEvent], None]] = None,
          tensorboard=None, wandb=None, extra_args: Sequence[str] = ()) -> pd.DataFrame:
    """Runs every run of a sweep (`continual sweep`), `jobs` at once (default: all cores), and
    returns the results as `run` does. shard: "K/N" to run one shard. Numbers are identical for
    any `jobs` (each run draws its randomness from its own seed). Other arguments: see `run`."""
    args = (["--jobs", str(jobs)] if jobs else []) + (["--shard", shard] if shard else [])
    return _drive("sweep", config, output, binary=binary, overwrite=overwrite, resume=resume, progress=progress,
                  base_dir=base_dir, check=check, on_run=on_run, tensorboard=tensorboard, wandb=wandb,
                  extra_args=args + list(extra_args))


def _drive(command, config, output, *, binary, overwrite, resume, progress, base_dir, check, on_run,
           tensorboard, wandb, extra_args) -> pd.DataFrame:
    """validate, then the command with --plain; progress and live logging from its lines; the
    results file loaded. Shared by `run` and `sweep`."""
    if overwrite and resume:
        raise ValueError("overwrite and resume exclude each other")
    exe = find_binary(binary)
    cwd = os.getcwd()
    with experiment_file(config, base_dir) as (path, shown):
        _validate(exe, path, shown)
        argv = [exe, command, path, "--plain"] + (["-o", os.fspath(output)] if output is not None else [])
        argv += (["--overwrite"] if overwrite else []) + (["--resume"] if resume else []) + list(extra_args)
        live = None
        if tensorboard or wandb:
            from .live import LiveLogger
            live = LiveLogger(tensorboard=tensorboard, wandb=wandb)
        follower = _Follower(progress, on_run, live, cwd)
        code, out, err = _execute(argv, cwd, follower)
    results_path = follower.results_path()
    if code == 2 or results_path is None or not os.path.exists(results_path):
        raise RunFailed(f"continual {command} {shown} exited {code}: {err.strip().replace(path, shown)}",
                        code, out, err)
    df = load_summary(results_path)
    if live is not None:
        live.finish(results_path)
    if code != 0 and check:
        raise RunFailed(f"continual {command} {shown}: {err.strip().replace(path, shown)} (results: {results_path})",
                        code, out, err, results=df)
    return df


class _Follower:
    """Reads the command's stdout lines: keeps the results path, moves the progress bar, calls
    `on_run` and the live logger for each finished run."""

    def __init__(self, progress, on_run, live, cwd):
        self.progress, self.on_run, self.live, self.cwd = progress, on_run, live, cwd
        self.header, self.final, self.bar, self.failed = None, None, None, 0

    def results_path(self) -> Optional[str]:
        printed = self.final or (self.header.path if self.header else None)
        return os.path.join(self.cwd, printed) if printed else None

    def line(self, text: str) -> None:
        event = parse_progress(text)
        if event is not None:
            self._event(event)
            return
        header = parse_header(text)
        if header is not None:
            self.header = header
            self._open_bar(header.total - header.already, os.path.basename(header.path))
            return
        tuning = parse_tuning(text)
        if tuning is not None and self.bar is not None:
            self.bar.set_postfix_str(f"tuning {tuning[0]}/{tuning[1]}")
            return
        final = parse_results(text)
        if final is not None:
            self.final = final

    def _open_bar(self, total: int, desc: str) -> None:
        if self.progress is False or self.progress is None:
            return
        if self.progress is True:
            with warnings.catch_warnings():          # no ipywidgets in Jupyter: the text bar, quietly
                warnings.simplefilter("ignore")
                from tqdm.auto import tqdm as factory
        else:
            factory = self.progress
        self.bar = factory(total=total, desc=desc, unit="run")

    def _event(self, event: RunEvent) -> None:
        self.failed += event.status != "completed"
        if self.bar is not None:
            if self.bar.total != event.total:
                self.bar.total = event.total
            acc = f"ACC {event.acc * 100:.2f}%" if event.acc is not None else event.status
            self.bar.set_postfix_str(f"{self.failed} failed · last {event.name} ({acc})", refresh=False)
            self.bar.update(event.done - self.bar.n)
        if self.live is not None and self.header is not None:
            self.live.log(os.path.join(self.cwd, self.header.path), event)
        if self.on_run is not None:
            self.on_run(event)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _execute(argv, cwd, follower: _Follower):
    """Runs argv, feeding each stdout line to `follower`; (exit code, stdout, stderr). On
    KeyboardInterrupt (Ctrl-C, or raised by a callback) the child gets SIGINT, is waited for
    (it folds its finished runs into the file and exits 130) and RunInterrupted is raised."""
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            encoding="utf-8", errors="replace", bufsize=1)
    err_lines: list = []
    reader = threading.Thread(target=lambda: err_lines.extend(proc.stderr), daemon=True)
    reader.start()
    out_lines: list = []
    try:
        for text in proc.stdout:
            out_lines.append(text)
            follower.line(text)
        code = proc.wait()
    except KeyboardInterrupt:
        code = _stop(proc)
        reader.join(timeout=5)
        raise RunInterrupted(follower.results_path(), code, "".join(err_lines)) from None
    finally:
        follower.close()
        if proc.poll() is None:                       # an exception other than Ctrl-C: do not leave it running
            _stop(proc)
    reader.join()
    return code, "".join(out_lines), "".join(err_lines)


def _stop(proc: subprocess.Popen) -> Optional[int]:
    """SIGINT (the CLI's clean stop), then a grace period, then SIGKILL; the exit code."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    # Drain stdout beside the wait, so the child never blocks on a full pipe while it folds.
    threading.Thread(target=lambda: [None for _ in proc.stdout or ()], daemon=True).start()
    try:
        return proc.wait(timeout=INTERRUPT_GRACE_SECONDS)
    except (subprocess.TimeoutExpired, KeyboardInterrupt):
        proc.kill()
        return proc.wait()
