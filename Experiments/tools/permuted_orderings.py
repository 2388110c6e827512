#!/usr/bin/env python3
"""The orderings the methods' own papers (and van de Ven & Tolias 2019's abstract) state, checked on
a results file of Experiments/mnist_permuted_task_class.json by the strict rule of
continualkit.verdicts (Welch test at 0.05 over seeds, tuned rows): one markdown table per setting.

    python3 Experiments/tools/permuted_orderings.py results/mnist_permuted_task_class.h5

No number is transcribed from any paper: each claim is the direction a paper reports, and the
"paper's stream" column says where it reported it, so a claim carried to another scenario (a
single-head method paper read in task-IL, an online paper's claim at 4 epochs) is visible as such.
Van de Ven & Tolias's own permuted MNIST table is not available offline (docs/mnist-tables.md); its
abstract's two claims — regularisation fails in class-IL, replay is needed there — are checked as
"replay above each regulariser" in class-IL.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from continualkit.io import load_summary   # noqa: E402
from continualkit.verdicts import order, seed_values   # noqa: E402
from federated_orderings import mean_std, p_text        # noqa: E402  (this folder: one cell format)

VDV = "van de Ven & Tolias 2019 (abstract): class-IL needs replay; regularisation fails"
# (higher, lower, settings, who reports it, the paper's stream)
CLAIMS = [
    ("naive_rehearsal", "ewc", ("class",), VDV, "split and permuted MNIST"),
    ("naive_rehearsal", "online_ewc", ("class",), VDV, "split and permuted MNIST"),
    ("naive_rehearsal", "si", ("class",), VDV, "split and permuted MNIST"),
    ("generative_replay", "ewc", ("class",), VDV, "split and permuted MNIST"),
    ("generative_replay", "si", ("class",), VDV, "split and permuted MNIST"),
    ("ewc", "naive_sgd", ("task",), "Kirkpatrick et al. 2017: EWC keeps old permutations, SGD does not", "permuted MNIST, one head"),
    ("si", "naive_sgd", ("task",), "Zenke et al. 2017: SI keeps old permutations", "permuted MNIST, one head"),
    ("gem", "ewc", ("task",), "Lopez-Paz & Ranzato 2017: GEM above EWC", "MNIST permutations, online"),
    ("rwalk", "ewc", ("task", "class"), "Chaudhry et al. 2018: RWalk above EWC", "permuted and split MNIST"),
    ("rwalk", "si", ("task", "class"), "Chaudhry et al. 2018: RWalk above SI (PI)", "permuted and split MNIST"),
    ("der", "naive_rehearsal", ("task", "class"), "Buzzega et al. 2020: DER above ER", "P-MNIST, S-MNIST"),
    ("derpp", "naive_rehearsal", ("task", "class"), "Buzzega et al. 2020: DER++ above ER", "P-MNIST, S-MNIST"),
    ("xder", "derpp", ("class",), "Boschini et al. 2022: X-DER above DER++", "split CIFAR-100, miniImageNet"),
    ("er_aml", "naive_rehearsal", ("class",), "Caccia et al. 2022: ER-AML above ER", "split CIFAR-10, miniImageNet, online"),
    ("mir", "naive_rehearsal", ("task", "class"), "Aljundi et al. 2019 (MIR): MIR above ER", "split and permuted MNIST, online"),
    ("cls_er", "naive_rehearsal", ("task", "class"), "Arani et al. 2022: CLS-ER above ER", "S-MNIST, P-MNIST, S-CIFAR-10 (Mammoth)"),
    ("cls_er", "der", ("task", "class"), "Arani et al. 2022: CLS-ER above DER", "S-MNIST, P-MNIST, S-CIFAR-10"),
    ("scr", "naive_rehearsal", ("class",), "Mai et al. 2021: SCR above ER", "split CIFAR, online"),
    ("scr", "icarl", ("class",), "Mai et al. 2021: SCR above iCaRL", "split CIFAR, online"),
    ("bic", "icarl", ("class",), "Wu et al. 2019: BiC above iCaRL", "ImageNet-1000, CIFAR-100"),
    ("bir", "generative_replay", ("class",), "van de Ven, Tuytelaars & Tolias 2022: BI-R above generative replay (DGR)",
     "split MNIST"),
    ("xdg", "naive_adam", ("task",), "Masse et al. 2018: gating alone reduces forgetting", "permuted MNIST, 100 tasks"),
    ("hat", "ewc", ("task",), "Serra et al. 2018: HAT above EWC", "8-dataset task sequence"),
    ("pnn", "naive_adam", ("task",), "Rusu et al. 2016: columns frozen, nothing forgotten", "Atari, labyrinth"),
    ("separate_networks", "naive_adam", ("task",), "van de Ven et al. 2022: the task-IL upper baseline", "split MNIST"),
]


def checked(df, setting):
    """(verdict, markdown row) of every claim that names `setting`; "not run" when either variant
    has no completed seed in the file."""
    out = []
    for hi, lo, settings, who, stream in CLAIMS:
        if setting not in settings:
            continue
        higher, lower = seed_values(df, f"{hi}_{setting}"), seed_values(df, f"{lo}_{setting}")
        if not higher or not lower:
            out.append(("not run", f"| {hi} > {lo} | {who} | {stream} | not run | | | |"))
            continue
        o = order(higher, lower)
        out.append((o["verdict"], f"| {hi} > {lo} | {who} | {stream} | **{o['verdict']}** | {mean_std(o['a'])} | "
                                  f"{mean_std(o['b'])} | {p_text(o['p'])} |"))
    return out


def main(path):
    df = load_summary(path)
    for setting, name in (("task", "task-IL"), ("class", "class-IL")):
        rows = checked(df, setting)
        verdicts = [v for v, _ in rows]
        counts = {v: verdicts.count(v) for v in ("holds", "holds (not significant)", "fails (not significant)", "fails")}
        print(f"#### {name}: " + ", ".join(f"{n} {v}" for v, n in counts.items()) + "\n")
        print("| paper's order | who reports it | paper's stream | verdict | higher, ACC % | lower, ACC % | Welch p |")
        print("|---|---|---|---|---:|---:|---:|")
        print("\n".join(row for _, row in rows) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
