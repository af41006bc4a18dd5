"""Every module imports on its own, first: an import circle that only breaks when one module of it is
imported before the others (as a user's script or a spawned worker may) fails here."""

import importlib
import pkgutil
import sys

import warmstart

MODULES = sorted(
    m.name for m in pkgutil.walk_packages(warmstart.__path__, "warmstart.") if not m.name.endswith("__main__")
)


def test_every_module_imports_first_in_a_clean_state():
    failed = []
    saved = {k: v for k, v in sys.modules.items() if k == "warmstart" or k.startswith("warmstart.")}
    try:
        for name in MODULES:
            for k in [k for k in sys.modules if k.startswith("warmstart.")]:
                del sys.modules[k]
            try:
                importlib.import_module(name)
            except ImportError as exc:
                failed.append(f"{name}: {exc}")
    finally:
        for k in [k for k in sys.modules if k.startswith("warmstart.")]:
            del sys.modules[k]
        sys.modules.update(saved)
        for name, module in saved.items():  # a package's attributes name its submodules: the saved ones
            parent, _, child = name.rpartition(".")
            if parent in saved:
                setattr(saved[parent], child, module)
    assert len(MODULES) > 100 and not failed, "\n".join(failed)
