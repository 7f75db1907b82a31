"""One module per CLI command; calc.cli.COMMANDS maps each name to its `run`."""
