"""The one error type for problems a user can cause and fix.

The CLI prints it as a single line (``error: <what is wrong>; <what to do>``) and exits with code 2.
"""


class WarmstartError(Exception):
    """A problem with the user's input, files or configuration. The message says what and how to fix it."""

    def __init__(self, problem: str, fix: str | None = None):
        self.problem = problem
        self.fix = fix
        super().__init__(f"{problem}; {fix}" if fix else problem)


class Stopped(Exception):
    """Work stopped by a signal (SIGTERM, SIGINT, SIGHUP) after leaving its files in order (a run: after its
    checkpoint); the CLI prints the message and exits with ``exit_code``, 128 + the signal number."""

    def __init__(self, signum: int, message: str):
        super().__init__(message)
        self.signum, self.exit_code = signum, 128 + signum
