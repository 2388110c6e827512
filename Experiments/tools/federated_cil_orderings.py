#!/usr/bin/env python3
"""The orderings the federated class-incremental papers report, checked on a results file of
Experiments/federated_mnist_cil.json by the strict rule of continualkit.verdicts (Welch test at
0.05 over seeds): one markdown table, each claim checked at the values chosen before running and,
where the file has a NAME_tuned variant, at the values the tuning protocol selected.

    python3 Experiments/tools/federated_cil_orderings.py results/federated_mnist_cil.h5

Each row: the claim (higher > lower on personal ACC, or lower < higher on forgetting), our
means ± std over seeds, the verdict and Welch p. Personal ACC: the model each phone predicts
with, after the last round, over every experience's test share of that phone (docs/federated.md).
Sources (read for this check; their numbers are on CIFAR and Tiny-ImageNet and are not compared):
FedCBDR = Qi et al., "Class-wise Balancing Data Replay for Federated Class-Incremental Learning",
Tables 2-3 (FedEWC above Finetune in 16 of 16 settings, FedLwF above Finetune 16/16, the replay
baseline Re-Fed above FedEWC 16/16 and above FedLwF 14/16); DCFCL = Yang et al., "Decentralized
Dynamic Cooperation of Personalized Models for Federated Continual Learning", Table 1 (FLwF-2T
above FedAvg on 3 of 4 datasets). The joint bound is by construction, not a paper's claim.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from continualkit.io import federation_runs   # noqa: E402
from continualkit.verdicts import order        # noqa: E402
sys.path.insert(0, os.path.dirname(__file__))
from federated_orderings import mean_std, p_text   # noqa: E402

# (higher, lower, measure, source); "fedavg" is the papers' Finetune (naive local training).
CLAIMS = [
    ("fedavg_joint", "fedavg", "personal_acc", "bound: every class from round 1"),
    ("fedavg_ewc", "fedavg", "personal_acc", "FedCBDR 16/16"),
    ("fedavg_lwf", "fedavg", "personal_acc", "FedCBDR 16/16"),
    ("fedavg_replay", "fedavg_ewc", "personal_acc", "FedCBDR 16/16"),
    ("fedavg_replay", "fedavg_lwf", "personal_acc", "FedCBDR 14/16"),
    ("fedavg_flwf2t", "fedavg", "personal_acc", "DCFCL 3/4"),
    ("fedavg_replay", "fedavg", "forgetting", "FedCBDR (rehearsal)"),
]


def tuned_pairs(runs, hi, lo):
    """The pair as chosen before running, then with each side's NAME_tuned where the file has one."""
    names = set(runs["variant"])
    pairs = [(hi, lo)]
    t_hi, t_lo = (f"{hi}_tuned" if f"{hi}_tuned" in names else hi), (f"{lo}_tuned" if f"{lo}_tuned" in names else lo)
    if (t_hi, t_lo) != (hi, lo):
        pairs.append((t_hi, t_lo))
    return pairs


def main(path):
    runs = federation_runs(path)
    print("| claim | source | measure | first | second | verdict | p |")
    print("|---|---|---|---|---|---|---|")
    for claim_hi, claim_lo, measure, source in CLAIMS:
        for hi, lo in tuned_pairs(runs, claim_hi, claim_lo):
            a = (runs[runs["variant"] == hi][measure] * 100).tolist()
            b = (runs[runs["variant"] == lo][measure] * 100).tolist()
            # forgetting: the claim holds when the first forgets less, so test lower > higher
            o = order(b, a) if measure == "forgetting" else order(a, b)
            first, second = (o["b"], o["a"]) if measure == "forgetting" else (o["a"], o["b"])
            claim = f"{hi} < {lo}" if measure == "forgetting" else f"{hi} > {lo}"
            unit = "pts" if measure == "forgetting" else "%"
            print(f"| {claim} | {source} | {measure.replace('_', ' ')} {unit} | {mean_std(first)} | {mean_std(second)} | {o['verdict']} | {p_text(o['p'])} |")
    print()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
