#!/bin/sh
# Render users.acl: drop comment and blank lines (Redis accepts only `user` lines in an aclfile)
# and replace every ${NAME} with the environment variable NAME (empty if unset).
#   ADMIN_PASSWORD=... INTAKE_PASSWORD=... SHIFTSTREAM_PREFIX= ./render-acl.sh users.acl > /etc/redis/users.acl
# awk, not sed or envsubst: a value may hold any character, and awk needs nothing installed.
# Passwords also go into redis:// URLs, so keep them to [A-Za-z0-9].
set -eu
awk '/^[[:space:]]*(#|$)/ { next }
{ while (match($0, /\$\{[A-Z_]+\}/)) {
  v = substr($0, RSTART + 2, RLENGTH - 3)
  $0 = substr($0, 1, RSTART - 1) ENVIRON[v] substr($0, RSTART + RLENGTH) }
  print }' "${1:-$(dirname "$0")/users.acl}"
