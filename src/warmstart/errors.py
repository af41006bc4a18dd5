"""The one error type for problems a user can cause and fix.

The CLI prints it as a single line (``error: <what is wrong>; <what to do>``) and exits with code 2.
"""


class WarmstartError(Exception):
    """A problem with the user's input, files or configuration. The message says what and how to fix it."""

    def __init__(self, problem: str, fix: str | None = None):
        self.problem = problem
        self.fix = fix
        super().__init__(f"{problem}; {fix}" if fix else problem)
