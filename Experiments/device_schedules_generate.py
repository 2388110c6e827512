#!/usr/bin/env python3
"""Writes Experiments/device_schedules.json: schedules x strategies x seeds on habit drift.

Run: python3 Experiments/device_schedules_generate.py && continual run Experiments/device_schedules.json
"""
import json, pathlib

schedules = {
    "always": {"type": "always", "samples_per_day": 20},
    "daily": {"type": "daily", "samples_per_day": 20},
    "weekly": {"type": "weekly", "samples_per_day": 20},
    "after200": {"type": "after_n_new_samples", "n": 200, "samples_per_day": 20},
    "daily_wifi": {"type": "daily", "samples_per_day": 20,
                   "when": {"charging": True, "idle": True, "wifi": True, "min_battery": 0.2}},
}
strategies = {
    "naive": ["naive"],
    "ewc": [{"type": "ewc", "lambda": 100, "mode": "online", "gamma": 0.9}],
    "replay": [{"type": "replay", "policy": "reservoir", "capacity": 200}],
}
seeds = [1, 2, 3]
variants = []
for sname, sched in schedules.items():
    for tname, strat in strategies.items():
        variants.append({"name": f"{sname}-{tname}", "schedule": sched, "strategy": strat})

experiment = {
    "name": "device_schedules",
    "description": ("On-device schedules x strategies on habit drift (5 phases x 560 training samples, 20 per "
                    "simulated day = 140 days). The device gate (charging + idle, daily_wifi also Wi-Fi and battery "
                    ">= 20 %) comes from the seeded overnight-charging user; energy under phone_npu_2023. "
                    "Early stopping (patience 2, min_delta 0.001) on at most 10 epochs per session. "
                    "Plot: continualkit plot results/device_schedules.h5 -o figures/device_schedules"),
    "scenario": {"type": "habit_drift", "train_per_experience": 560, "test_per_experience": 300},
    "model": {"hidden": [16, 8], "activation": "relu"},
    "optimizer": {"type": "adam", "lr": 0.005},
    "training": {"epochs": 10, "batch_size": 32, "early_stopping": {"patience": 2, "min_delta": 0.001}},
    "device": {"profile": "phone_npu_2023", "state": {"pattern": "overnight"}},
    "quantization": {"granularity": "per_channel"},
    "variants": variants,
    # Seeds are a sweep axis, so `continual inspect` and `continualkit` group runs by configuration.
    "sweep": {"parameters": {"seed": seeds}},
}
path = pathlib.Path(__file__).with_name("device_schedules.json")
path.write_text(json.dumps(experiment, indent=2) + "\n")
print(f"wrote {path} ({len(variants)} configurations x {len(seeds)} seeds)")
