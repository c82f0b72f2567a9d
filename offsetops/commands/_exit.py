"""The exit codes of every ``offsetops`` command (imported by the top-level parser, so nothing else here)."""

EXIT_OK = 0
EXIT_ERRORS = 1  # the run finished but found errors and --strict was given (or the command failed)
EXIT_USAGE = 2  # bad arguments or unusable input (argparse uses 2 as well)
EXIT_INTERNAL = 3  # an unexpected internal failure (a bug); the message names it, --verbose shows where
