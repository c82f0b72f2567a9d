"""One module per ``offsetops`` subcommand; see :mod:`offsetops.cli`."""
