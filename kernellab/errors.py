"""The one error type the build reports to the user."""


class BuildError(Exception):
    """A problem in one input file: the message names the file and the problem."""

    def __init__(self, path, problem: str):
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")

    def __reduce__(self):
        """Pickle by path and problem, so that a worker process can raise it here."""
        return BuildError, (self.path, self.problem)
