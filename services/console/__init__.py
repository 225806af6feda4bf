"""The operations console: a live web page over the queues, jobs, rosters, traces and dead
letters (`shiftstream console`, `python -m services.console`)."""
