"""User-facing errors.

Every problem a user can cause (a wrong path, a checkpoint of another architecture, bounds with
low > high, a budget of 0, ...) is raised as :class:`AdvauditError` with a one-line message that
names the problem and the fix. The command-line shims print that line instead of a stack trace.
"""


class AdvauditError(ValueError):
    """A problem with the user's input or configuration, with its fix in the message."""


def require(condition: bool, message: str) -> None:
    """Raise :class:`AdvauditError` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise AdvauditError(message)
