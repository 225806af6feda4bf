"""The `shiftstream` command line (`main`), with the dev runner that starts the services as
local processes (`devrunner`), the terminal trace waterfall (`waterfall`), the one rule that
finds Redis and the one line a Redis failure prints (`redis_target`), and the exit codes
(`exits`).

May import anything in `shared` and `csolver`; never `services` (the dev runner starts them as
processes by module name).
"""
