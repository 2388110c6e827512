"""docs/notebooks/tutorial.ipynb cannot go stale: it is executed here (nbclient, a fresh kernel,
a temporary working directory), must run without an error, the outputs of its cells tagged
`checked` must equal the outputs stored in the file, its figures must be drawn, and the results
files it writes must equal those of the README tutorial's own commands (`continual run
my_first.json`, `continual sweep my_sweep.json --jobs 2` on the README's saved blocks).

After changing the notebook, store fresh outputs with
    CONTINUAL_BIN=… python3 python/tests/test_notebook.py --update
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import REPO, assert_same_summary, find_continual

NOTEBOOK = os.path.join(REPO, "docs", "notebooks", "tutorial.ipynb")
README_CONFIGS = {"my_first.json": "run", "my_sweep.json": "sweep"}


def execute(path, cwd):
    """The notebook executed in `cwd` (a new kernel); raises on the first failing cell."""
    import nbclient
    import nbformat
    nb = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": str(cwd)}}).execute()
    return nb


def text_outputs(cell) -> list:
    """What a cell shows as text (stdout and results), without stderr (the progress bar's rates)."""
    out = []
    for o in cell.get("outputs", []):
        if o.get("output_type") == "stream" and o.get("name") == "stdout":
            out.append(o["text"])
        elif "data" in o and "text/plain" in o["data"] and "image/png" not in o["data"]:
            out.append(o["data"]["text/plain"])
    return out


def readme_blocks() -> dict:
    """{file name: text} of the README's `<!-- save: … -->` blocks (the tutorial's configs)."""
    sys.path.insert(0, os.path.join(REPO, "Experiments", "tools"))
    import check_docs
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        blocks = check_docs.parse("README.md", f.read().split("\n"))
    return {b.command: "\n".join(b.lines) + "\n" for b in blocks if b.kind == "save"}


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    for module in ("nbclient", "nbformat", "ipykernel"):
        pytest.importorskip(module, reason="pip install './python[test]' to execute the notebook")
    binary = find_continual()
    if binary is None:
        pytest.skip("no `continual` binary: the notebook test needs one")
    cwd = tmp_path_factory.mktemp("notebook")
    old = os.environ.get("CONTINUAL_BIN")
    os.environ["CONTINUAL_BIN"] = binary                   # the kernel inherits it
    try:
        nb = execute(NOTEBOOK, cwd)
    finally:
        if old is None:
            os.environ.pop("CONTINUAL_BIN", None)
        else:
            os.environ["CONTINUAL_BIN"] = old
    return nb, cwd, binary


def test_checked_outputs_are_the_stored_ones(executed):
    import nbformat
    fresh, _, _ = executed
    stored = nbformat.read(NOTEBOOK, as_version=4)
    checked = [k for k, c in enumerate(stored.cells) if "checked" in c.get("metadata", {}).get("tags", [])]
    assert len(checked) >= 6
    for k in checked:
        assert text_outputs(fresh.cells[k]) == text_outputs(stored.cells[k]), \
            f"cell {k} prints something else now:\n{stored.cells[k].source}"
        assert text_outputs(fresh.cells[k]), f"cell {k} printed nothing"


def test_figures_are_drawn_inline(executed):
    fresh, _, _ = executed
    images = [o for c in fresh.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert len(images) >= 2


def test_results_equal_the_readme_commands(executed, tmp_path):
    import continualkit as ck
    _, cwd, binary = executed
    blocks = readme_blocks()
    for name, command in README_CONFIGS.items():
        (tmp_path / name).write_text(blocks[name])
        out = tmp_path / name.replace(".json", ".h5")
        p = subprocess.run([binary, command, name, "-o", str(out), "--plain", "--jobs", "2"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr
        mine = ck.load_summary(os.path.join(cwd, "results", name.replace(".json", ".h5")))
        assert_same_summary(mine, ck.load_summary(str(out)))


if __name__ == "__main__":                                  # store fresh outputs in the notebook
    if sys.argv[1:] != ["--update"]:
        raise SystemExit(__doc__)
    import tempfile

    import nbformat
    with tempfile.TemporaryDirectory() as d:
        nb = execute(NOTEBOOK, d)
    nbformat.write(nb, NOTEBOOK)
    print(f"wrote {NOTEBOOK}")
