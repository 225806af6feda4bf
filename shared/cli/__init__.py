"""The `shiftstream` command line (`main`), with the dev runner that starts the services as
local processes (`devrunner`) and the terminal trace waterfall (`waterfall`).

May import anything in `shared` and `csolver`; never `services` (the dev runner starts them as
processes by module name).
"""
