"""Tables as text (markdown, CSV, LaTeX) and the names of legacy files' configurations."""
from __future__ import annotations

import re

import pandas as pd

from ..io import _str


def render(table: pd.DataFrame, fmt: str = "markdown", caption: str | None = None) -> str:
    if table.shape[1] == 0:
        return ""   # a note without a table (its title says why)
    if fmt == "csv":
        return table.to_csv(index=False)
    cols = [str(c) for c in table.columns]
    cells = [[str(v) for v in row] for row in table.itertuples(index=False)]
    if fmt == "latex":
        def esc(s):
            s = s.replace("\\", r"\textbackslash{}")
            for a, b in (("&", r"\&"), ("%", r"\%"), ("_", r"\_"), ("#", r"\#"), ("$", r"\$"), ("{", r"\{"),
                         ("}", r"\}"), ("±", r"$\pm$"), ("—", "--"), ("Δ", r"$\Delta$"), ("≥", r"$\geq$"),
                         ("λ", r"$\lambda$"), ("γ", r"$\gamma$"), ("α", r"$\alpha$"), ("β", r"$\beta$"),
                         ("×", r"$\times$"), ("<", r"$<$"), ("–", "--")):
                s = s.replace(a, b)
            return s
        spec = "l" + "r" * (len(cols) - 1)
        lines = [r"\begin{table}[t]", r"\centering"]
        if caption:
            lines.append(r"\caption{" + esc(caption) + "}")
        lines += [r"\begin{tabular}{" + spec + "}", r"\toprule", " & ".join(esc(c) for c in cols) + r" \\",
                  r"\midrule"]
        lines += [" & ".join(esc(c) for c in row) + r" \\" for row in cells]
        lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
        return "\n".join(lines) + "\n"
    if fmt == "markdown":
        def md(s):
            return s.replace("|", r"\|")
        lines = ["| " + " | ".join(md(c) for c in cols) + " |",
                 "|" + "|".join("---" if i == 0 else "---:" for i in range(len(cols))) + "|"]
        lines += ["| " + " | ".join(md(c) for c in row) + " |" for row in cells]
        return ("" if not caption else f"**{caption}**\n\n") + "\n".join(lines) + "\n"
    raise ValueError(f"unknown format {fmt!r} (markdown, csv, latex)")


def strip_seed_suffix(name: str) -> str:
    """Legacy files whose variants were named METHOD_sSEED / METHOD-sSEED: the method part."""
    return re.sub(r"[-_]s\d+$", "", name)


def legacy_configurations(df: pd.DataFrame) -> pd.DataFrame:
    """For results written before seeds were a sweep axis (variants `naive_s1` … `naive_s5`):
    group by the name without its `_sN`/`-sN` suffix. Returns a copy with `configuration` set."""
    df = df.copy()
    if "seed" not in df.attrs.get("swept_columns", []):
        df["configuration"] = df["name"].map(strip_seed_suffix).map(_str)
    return df
