"""One module per ``offsetops`` subcommand, each declared with its help line in ``offsetops.cli.COMMANDS``
and imported only when its command runs; see :mod:`offsetops.cli`."""
