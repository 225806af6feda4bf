"""The `shiftstream` command line."""
