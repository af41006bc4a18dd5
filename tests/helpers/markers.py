"""Which tests run a whole run: the rule behind the ``integration`` marker (tests/conftest.py applies it).

A test runs a whole run when its function, or a fixture it uses (directly or through other fixtures), or a
test helper either of them calls (a function defined under tests/, followed to any depth), calls

- the command line: ``warmstart.cli.main.main``, or ``warmstart`` in a subprocess (anything that uses the
  ``subprocess`` module: `python -m warmstart ...`, torchrun, `warmstart serve`);
- a whole command: ``warmstart.commands.pretrain.pretrain``, ``warmstart.commands.finetune.finetune``,
  ``warmstart.commands.study.run_study``, ``warmstart.commands.demo.run_demo``.

The code is read, not run: the names each function's bytecode loads (globals, and the modules and names
of imports inside it) are looked up. The pieces commands are made of (``commands.probe.fit_probe``, the
finetune config resolver, a task's training loop on a tiny model) are not runs.
"""

from __future__ import annotations

import types

DRIVERS = {
    ("warmstart.cli.main", "main"),
    ("warmstart.commands.pretrain", "pretrain"),
    ("warmstart.commands.finetune", "finetune"),
    ("warmstart.commands.study", "run_study"),
    ("warmstart.commands.demo", "run_demo"),
}
DRIVER_MODULES = {"subprocess"}


def _code_objects(code: types.CodeType):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


def runs_whole_run(fn, seen: set | None = None) -> bool:
    """Whether ``fn`` (a test, a fixture or a helper) calls a driver, itself or through test helpers."""
    seen = set() if seen is None else seen
    fn = getattr(fn, "__wrapped__", fn)
    code = getattr(fn, "__code__", None)
    if code is None or code in seen:
        return False
    seen.add(code)
    globs = getattr(fn, "__globals__", {})
    for c in _code_objects(code):
        names = set(c.co_names)
        if names & DRIVER_MODULES or any(m in names and f in names for m, f in DRIVERS):
            return True  # `import subprocess` / `from warmstart.commands.pretrain import pretrain` inside
        for name in names:
            value = globs.get(name)
            if isinstance(value, types.ModuleType):
                if value.__name__ in DRIVER_MODULES:
                    return True
                continue
            module = getattr(value, "__module__", None) or ""
            if (module, getattr(value, "__name__", None)) in DRIVERS:
                return True
            if module.split(".")[0] == "tests" and isinstance(value, types.FunctionType):
                if runs_whole_run(value, seen):
                    return True
    return False


def is_integration(item) -> bool:
    """Whether the test item, or a fixture it uses, runs a whole run (see the module docstring)."""
    funcs = [getattr(item, "function", None)]
    info = getattr(item, "_fixtureinfo", None)
    for name in getattr(item, "fixturenames", ()):
        defs = info.name2fixturedefs.get(name) if info is not None else None
        if defs and (getattr(defs[-1].func, "__module__", None) or "").split(".")[0] == "tests":
            funcs.append(defs[-1].func)  # pytest's own fixtures (tmp_path, capsys, ...) run nothing
    seen: set = set()
    return any(f is not None and runs_whole_run(f, seen) for f in funcs)
