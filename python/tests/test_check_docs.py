"""Experiments/tools/check_docs.py: a marked block in the docs must show what its command prints;
a number changed by hand fails the check, `--update` writes the command's output back, and a
measured block goes STALE when the code it depends on changes."""
import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TOOL = os.path.join(ROOT, "Experiments", "tools", "check_docs.py")


def _tool():
    spec = importlib.util.spec_from_file_location("check_docs", TOOL)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["check_docs"] = mod          # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


FAKE = """#!/usr/bin/env bash
# a stand-in for the CLI: `continual run` prints a progress line, a table with wall times, a footer
echo "[1/2] completed naive ACC 54.12% 0.$RANDOM s"
echo "[2/2] completed joint ACC 70.96% 0.$RANDOM s"
echo "name  strategy   ACC%     BWT  train s"
echo "naive naive     54.12  -31.60    0.0$((RANDOM % 9))1"
echo "joint joint     70.96   -3.35    0.1$((RANDOM % 9))2"
echo "results: results/x.h5"
"""

README = """# demo

Some prose with a number that is not checked: 7 million.

<!-- check: continual run x.json
     volatile: ^\\[\\d+/\\d+\\].*$|(?<= )\\d+\\.\\d{3}$ -->
```text
[2/2] 0 failed · 0s elapsed · ETA 0s · last joint (ACC 70.96%)
name  strategy   ACC%     BWT  train s
naive naive     54.12  -31.60    0.050
joint joint     70.96   -3.35    0.172
results: results/x.h5
```

<!-- check: continual run x.json | sed -n 3,5p -->
```text
name  strategy   ACC%     BWT  train s
…
```

<!-- measured: continual bench
     depends: src -->
| kernel | M samples/s |
|---|---|
| step | 5.9 |
"""


@pytest.fixture
def repo(tmp_path, monkeypatch):
    (tmp_path / "docs").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "kernel.swift").write_text("let speed = 1\n")
    (tmp_path / "README.md").write_text(README)
    fake = tmp_path / "fake-continual"
    fake.write_text(FAKE)
    fake.chmod(0o755)
    monkeypatch.setenv("CONTINUAL_BIN", str(fake))
    return tmp_path


def run(repo, *args):
    p = subprocess.run([sys.executable, TOOL, "--root", str(repo), *args], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def test_a_block_that_matches_its_command_passes_once_measured_blocks_are_stamped(repo):
    rc, out = run(repo)
    assert rc == 1 and "STALE" in out and "README.md:21" in out          # never stamped: no hash yet
    rc, out = run(repo, "--restamp", "README.md")
    assert rc == 0, out
    text = (repo / "README.md").read_text()
    assert "sha: " in text and "machine: " in text and "commit: " in text and "date: " in text
    rc, out = run(repo)
    assert rc == 0, out
    assert "3 marked blocks checked" in out                                # two check blocks, one measured


def test_a_changed_number_fails_and_update_writes_the_output_back(repo):
    run(repo, "--restamp", "README.md")
    good = (repo / "README.md").read_text()
    (repo / "README.md").write_text(good.replace("naive naive     54.12", "naive naive     55.12"))
    rc, out = run(repo)
    assert rc == 1
    assert "'55.12' → '54.12'" in out and "README.md:5" in out
    rc, out = run(repo, "--update")
    assert rc == 0, out
    assert (repo / "README.md").read_text().count("54.12") == 1           # the block shows the command's number again
    rc, out = run(repo)
    assert rc == 0, out


def test_a_row_the_docs_lack_or_a_row_the_command_lacks_fails(repo):
    run(repo, "--restamp", "README.md")
    good = (repo / "README.md").read_text()
    (repo / "README.md").write_text(good.replace("joint joint     70.96   -3.35    0.172\n", ""))
    rc, out = run(repo)
    assert rc == 1 and "prints a line the docs do not show: joint joint" in out
    (repo / "README.md").write_text(good.replace("results: results/x.h5\n```\n\n<!-- check: continual run x.json |",
                                                 "results: results/x.h5\nreplay replay 1 2 3\n```\n\n<!-- check: continual run x.json |"))
    rc, out = run(repo)
    assert rc == 1 and "not printed by the command: replay replay" in out


def test_a_measured_block_goes_stale_when_its_dependencies_change(repo):
    run(repo, "--restamp", "README.md")
    (repo / "src" / "kernel.swift").write_text("let speed = 2   // faster kernels\n")
    rc, out = run(repo)
    assert rc == 1 and "STALE" in out and "src changed since" in out
    rc, out = run(repo, "--restamp", "README.md:21")
    assert rc == 0
    assert run(repo)[0] == 0


def test_stale_checks_hashes_only_without_running_a_command(repo, monkeypatch):
    """`--stale` catches a dependency changed after a restamp in seconds: no command runs (a
    binary that fails would fail the check blocks) and the check blocks are not counted."""
    run(repo, "--restamp", "README.md")
    broken = repo / "broken-continual"
    broken.write_text("#!/usr/bin/env bash\nexit 3\n")
    broken.chmod(0o755)
    monkeypatch.setenv("CONTINUAL_BIN", str(broken))
    rc, out = run(repo, "--stale")
    assert rc == 0 and "1 marked blocks checked" in out, out
    (repo / "src" / "kernel.swift").write_text("let speed = 3\n")
    rc, out = run(repo, "--stale")
    assert rc == 1 and "STALE" in out and "README.md:21" in out
    rc, out = run(repo, "--stale", "--update")
    assert rc == 2 and "not with --update or --restamp" in out


def test_an_untracked_dependency_is_refused_in_a_work_tree(repo):
    """In a git work tree the hash covers tracked files only, so a `depends:` file not yet added
    would be left out of it silently: the block would not go stale when that file changes."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "src", "README.md"], cwd=repo, check=True)
    (repo / "exp.json").write_text("{}\n")
    (repo / "README.md").write_text(README.replace("depends: src", "depends: src exp.json"))
    rc, out = run(repo, "--restamp", "README.md")
    assert rc != 0 and "not tracked by git" in out, out
    subprocess.run([*git, "add", "exp.json"], cwd=repo, check=True)
    rc, out = run(repo, "--restamp", "README.md")
    assert rc == 0, out


def test_elision_and_volatile_values_are_not_differences():
    t = _tool()
    vol = __import__("re").compile(r"(?<= )\d+\.\d{3}$")
    problems, _ = t.compare(["a 1 0.123", "…", "c 3 9.999"], "a 1 0.555\nb 2 0.1\nc 3 0.000\n", vol)
    assert problems == []
    problems, _ = t.compare(["a 1 0.123"], "a 2 0.555\n", vol)
    assert len(problems) == 1 and "'1' → '2'" in problems[0]
    # markdown: cell padding and the separator's alignment colons are style, not content
    problems, _ = t.compare(["| x | y |", "|---|---|", "| a | 1.0 |"], "| x  |  y |\n|---|---:|\n| a | 1.0 |\n", None)
    assert problems == []


def test_the_real_readme_fails_on_a_changed_quickstart_number(tmp_path, monkeypatch):
    """The check on the repository's own README: its quickstart table is what `continual run`
    prints, and a hand-edited ACC makes the check fail."""
    root = tmp_path / "repo"
    root.mkdir()
    for name in os.listdir(ROOT):
        if name not in ("README.md", "results", ".build", ".git"):
            os.symlink(os.path.join(ROOT, name), root / name)
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    (root / "README.md").write_text(readme)
    from conftest import find_continual
    binary = find_continual()
    if binary is None:
        pytest.skip("no `continual` binary (CI sets CONTINUAL_BIN)")
    monkeypatch.setenv("CONTINUAL_BIN", binary)
    rc, out = run(root, "README.md", "--only", "quickstart")
    assert rc == 0, out
    assert "naive naive     54.12" in readme
    (root / "README.md").write_text(readme.replace("naive naive     54.12", "naive naive     54.21", 1))
    rc, out = run(root, "README.md", "--only", "quickstart")
    assert rc == 1 and "'54.21' → '54.12'" in out, out
