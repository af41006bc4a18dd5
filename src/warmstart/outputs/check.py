"""Declared outputs against declared inputs, before any work: nothing an input holds is written over.

``guard(outputs, inputs)`` takes ``{what: path}`` for both (side files are outputs of their own: the
``.md`` beside a report, the ``.json`` beside ``embed --word``'s vectors). An output is refused, with
nothing changed, when it (after resolving symlinks)
- is an input, or contains one (a directory holding it);
- lies inside an input directory and already exists there (the run's own files, a dataset's files), unless
  it is one the command itself writes there by default (``rewrites``, e.g. RUN/report.html) or one an
  earlier command wrote there as its output (noted in the directory's marker);
- is a directory that ``--overwrite`` would replace and warmstart did not make (``marker.refuse_foreign``);
- is being written by another warmstart process (``claim``).
An interrupted ``--overwrite`` of an output is put right first (``journal.recover``)."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from pathlib import Path

from warmstart.errors import WarmstartError
from warmstart.outputs.journal import recover
from warmstart.outputs.marker import record_output, recorded_outputs, refuse_foreign
from warmstart.paths import cache_dir

_CLAIMS: dict[Path, object] = {}  # output -> its locked claim file, held until release_all or exit


def _real(path: str | Path) -> Path:
    return Path(path).expanduser().resolve()


def guard(
    outputs: dict[str, str | Path | None],
    inputs: dict[str, str | Path | None],
    *,
    rewrites: tuple = (),
    overwrite: bool = False,
    claim_outputs: bool = True,
) -> list[tuple[Path, Path]]:
    """Refuse (a WarmstartError, nothing changed) any output that would lose or replace an input; then
    claim every output for this process. ``{what: None}`` entries are skipped. Returns the (input
    directory, output) pairs to ``record`` once the command has succeeded."""
    outs = {what: (given, _real(given)) for what, given in outputs.items() if given not in (None, "", "-")}
    ins = {
        what: (given, _real(given))
        for what, given in inputs.items()
        if given not in (None, "", "-") and Path(given).expanduser().exists()
    }
    allowed = {_real(p) for p in rewrites}
    for what, (given, o) in outs.items():
        recover(o)
        for name, (source, i) in ins.items():
            _refuse_overlap(what, given, o, name, source, i, allowed)
        if overwrite:
            refuse_foreign(o, what.split(" ")[0])
    if claim_outputs:
        for what, (given, o) in outs.items():
            claim(o, f"{what} {given}")
    return [
        (i, o) for _, (_, o) in outs.items() for _, (_, i) in ins.items() if i in o.parents and i.is_dir()
    ]


def record(written: list[tuple[Path, Path]]) -> None:
    """After the command succeeded: the outputs it wrote inside input directories (``guard``'s answer) are
    noted in those directories' markers, so that the same command may write them again."""
    for directory, output in written:
        if output.exists():
            record_output(directory, output)


def _refuse_overlap(what, given, o: Path, name, source, i: Path, allowed: set[Path]) -> None:
    how = None
    if o == i:
        how = "is"
    elif o in i.parents:
        how = "contains"
    elif i in o.parents and os.path.lexists(o) and o not in allowed and o not in recorded_outputs(i):
        raise WarmstartError(
            f"{what} {given} would write over {o.relative_to(i)} inside the {name} {source}, which this "
            "command reads",
            f"choose {what.split(' ')[0]} outside it, or a name there that does not exist yet (nothing was "
            "changed)",
        )
    if how:
        raise WarmstartError(
            f"{what} {given} {how} the {name} {source}, which this command reads",
            f"choose {what.split(' ')[0]} outside every input (nothing was changed)",
        )


def claim(output: str | Path, what: str = "the output") -> None:
    """Hold ``output`` for this process until it ends (or ``release_all``): a second warmstart process
    writing the same path is refused in one line. Only the first process of a torchrun job claims."""
    o = _real(output)
    if o in _CLAIMS or int(os.environ.get("RANK", "0") or 0) != 0:
        return
    lock = cache_dir() / "locks" / (hashlib.sha1(str(o).encode()).hexdigest()[:16] + ".lock")
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        fh = open(lock, "a")  # noqa: SIM115 - held until release_all or exit
    except OSError:  # no cache to lock in: nothing to refuse
        return
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.close()
        raise WarmstartError(
            f"{what} is in use: another warmstart process is writing it",
            "wait for it to finish (or stop it), then try again; or choose another --out (nothing was "
            "changed)",
        ) from None
    _CLAIMS[o] = fh


def release_all() -> None:
    """Let go of every claim this process holds (the CLI: when its command ends)."""
    for fh in _CLAIMS.values():
        with contextlib.suppress(OSError):
            fh.close()
    _CLAIMS.clear()
