#!/usr/bin/env bash
# The rules' fast tests (tests/rules/README.md): run.py does them all in one interpreter. The system's python3 when
# there is one: a version manager's shim takes a second to start.
PY=$(command -v /usr/bin/python3 || command -v python3)
exec "$PY" "$(dirname "$0")/run.py" "$@"
