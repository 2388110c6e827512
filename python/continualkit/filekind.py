"""What kind of file a path holds, from its first bytes: so that `continualkit table x.json`
answers in one line what it got and which command takes it, instead of an h5py traceback
("file signature not found"). The Swift CLI makes the same check (`FileKind`)."""
from __future__ import annotations

import os

# The HDF5 superblock signature; libhdf5 also finds it after a user block of 512, 1024, 2048 bytes.
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
SIGNATURE_OFFSETS = (0, 512, 1024, 2048)


def kind(path: str) -> str:
    """'missing', 'directory', 'empty', 'hdf5', 'json', 'text' or 'binary'."""
    if not os.path.exists(path):
        return "missing"
    if os.path.isdir(path):
        return "directory"
    with open(path, "rb") as f:
        head = f.read(2048 + len(HDF5_SIGNATURE))
    if not head:
        return "empty"
    if any(head[o:o + len(HDF5_SIGNATURE)] == HDF5_SIGNATURE for o in SIGNATURE_OFFSETS):
        return "hdf5"
    if b"\0" in head or not _is_utf8(head):
        return "binary"
    first = head.lstrip(b" \t\r\n\xef\xbb\xbf")[:1]
    return "json" if first in (b"{", b"[") else "text"


def _is_utf8(head: bytes) -> bool:
    # The sample may end inside a character (up to 3 bytes cut).
    for cut in range(min(4, len(head))):
        try:
            head[:len(head) - cut].decode("utf-8")
            return True
        except UnicodeDecodeError:
            continue
    return False


def hdf5_role(path: str) -> str:
    """For an HDF5 file: 'results' (has /runs or /summary), 'scenario' (/experiences) or 'other'.
    A file h5py cannot list counts as 'results': the command's own reader reports the damage."""
    import h5py
    try:
        with h5py.File(path, "r") as f:
            keys = set(f.keys())
    except Exception:  # noqa: BLE001 - any libhdf5 failure is the reader's to report
        return "results"
    if keys & {"runs", "summary"}:
        return "results"
    return "scenario" if "experiences" in keys else "other"


def wrong_results_file(path: str, command: str) -> str | None:
    """None when `path` is a results file (or missing: the caller says so); otherwise a one-line
    message naming what it is and the command that takes it."""
    k = kind(path)
    takes = f"`continualkit {command}` takes a results file (HDF5) written by `continual run` or `continual sweep`"
    if k == "missing":
        return None
    if k == "hdf5":
        role = hdf5_role(path)
        if role == "results":
            return None
        what = "a scenario file (HDF5)" if role == "scenario" else "an HDF5 file but not a results file"
        hint = f" — to look at it: continual inspect {path}" if role == "scenario" else ""
        return f"{path} is {what}; {takes}{hint}"
    if k == "json":
        return f"{path} is a JSON file (an experiment file?); {takes} — to make one: continual run {path}"
    what = {"directory": "a directory", "empty": "an empty file", "text": "a text file",
            "binary": "a binary file that is not HDF5"}[k]
    return f"{path} is {what}; {takes}"
