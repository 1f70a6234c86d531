#!/usr/bin/env bash
# Installs (once) what the browser tests need: Debian's chromium, npm playwright-core and speedscope (both pinned)
# in the cache.
# Prints the folder to put on NODE_PATH. Idempotent: a second run only prints it.
set -euo pipefail
PW_VERSION=1.65.1
SPEEDSCOPE_VERSION=1.25.0
DIR=${GGPROF_CACHE:-$HOME/.cache/ggprof}/browser-$PW_VERSION
if [ ! -x /usr/bin/chromium ]; then
    [ "$(id -u)" = 0 ] || { echo "browser: need root to apt-get install chromium" >&2; exit 1; }
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2
fi
if [ ! -f "$DIR/.stamp" ]; then
    mkdir -p "$DIR"
    printf '{"name":"ggprof-browser-tests","private":true}\n' > "$DIR/package.json"
    # playwright-core never downloads a browser: /usr/bin/chromium is the one it drives.
    (cd "$DIR" && npm install --no-audit --no-fund --save-exact "playwright-core@$PW_VERSION" >&2)
    touch "$DIR/.stamp"
fi
# speedscope's npm package ships its built web app (dist/release): speedscope_check.js opens it from there.
if [ ! -f "$DIR/.stamp-speedscope-$SPEEDSCOPE_VERSION" ]; then
    (cd "$DIR" && npm install --no-audit --no-fund --save-exact "speedscope@$SPEEDSCOPE_VERSION" >&2)
    touch "$DIR/.stamp-speedscope-$SPEEDSCOPE_VERSION"
fi
echo "$DIR/node_modules"
