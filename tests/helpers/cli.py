"""The command line in-process: its exit code and output, and the one-line error every bad input gives."""

from warmstart.cli.main import main


def run(capsys, *argv):
    """(exit code, stdout, stderr) of ``warmstart ARGV`` run in this process."""
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_one_line_error(code, err, *needles):
    """Exit code 2, exactly one ``error: `` line, last on stderr (progress bars may precede it), no traceback,
    and each of ``needles`` in that line."""
    assert code == 2
    lines = [line for line in err.replace("\r", "\n").splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0], err  # progress bars may precede it
    assert "Traceback" not in err
    for n in needles:
        assert n in errors[0]
