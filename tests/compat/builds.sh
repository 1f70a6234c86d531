#!/usr/bin/env bash
# Installs (once) every real ggml build of the compatibility matrix into the cache and prints one line per
# build: NAME KIND DIR. Idempotent: each build leaves a stamp; a second run only prints the lines.
#   nlc   node-llama-cpp's prebuilt CPU libraries of one npm release (npm, --omit=optional: no GPU packages)
#   deb   Debian sid's llama.cpp-tools and libggml0 in a debootstrap chroot (apt, the machine's Debian mirror)
# usage: tests/compat/builds.sh [NAME...]   (default: all)
set -euo pipefail
CACHE=${GGPROF_CACHE:-$HOME/.cache/ggprof}/compat
# node-llama-cpp release -> the llama.cpp release it pins (node_modules/node-llama-cpp/llama/binariesGithubRelease.json).
NLC_VERSIONS=(3.1.1 3.5.0 3.10.0 3.14.0 3.18.0 3.20.0 3.21.1 3.22.1)
# Debian sid as the mirror serves it: the versions are checked after the install (sid moves; a new version is
# reported, not silently tested). BLAS is Debian's separate backend package, loaded by ggml's backend registry.
SID_PKGS=llama.cpp-tools,libggml0,libggml0-backend-blas,libsqlite3-0,libcjson1,zlib1g
SID_LLAMA=1:0.7.0
MIRROR=${GGPROF_DEBIAN_MIRROR:-http://deb.debian.org/debian}

log() { printf 'compat: %s\n' "$*" >&2; }

install_nlc() { # VERSION DIR
    local v=$1 d=$2
    [ -f "$d/.stamp" ] && return 0
    log "installing node-llama-cpp@$v (prebuilt linux-x64 CPU libraries) into $d"
    mkdir -p "$d"
    printf '{"name":"ggprof-compat","private":true,"type":"module"}\n' > "$d/package.json"
    (cd "$d" && NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm install --no-audit --no-fund --omit=optional \
        "node-llama-cpp@$v" "@node-llama-cpp/linux-x64@$v" >&2)
    touch "$d/.stamp"
}

install_sid() { # DIR
    local d=$1
    [ -f "$d/.stamp" ] && return 0
    command -v debootstrap > /dev/null || { log "debootstrap missing (tests/deps.sh installs it)"; return 1; }
    log "debootstrap Debian sid with $SID_PKGS into $d (a few minutes)"
    rm -rf "$d"
    debootstrap --variant=minbase --include="$SID_PKGS" sid "$d" "$MIRROR" >&2
    touch "$d/.stamp"
}

SELECTED=("$@")
want() { # NAME: selected on the command line, or no selection at all
    [ ${#SELECTED[@]} -eq 0 ] && return 0
    local w
    for w in "${SELECTED[@]}"; do [ "$w" = "$1" ] && return 0; done
    return 1
}
for v in "${NLC_VERSIONS[@]}"; do
    name=nlc-$v
    want "$name" || continue
    install_nlc "$v" "$CACHE/$name"
    echo "$name nlc $CACHE/$name"
done
if want debian-sid; then
    install_sid "$CACHE/debian-sid"
    v=$(chroot "$CACHE/debian-sid" dpkg-query -W -f='${Version}' llama.cpp-tools 2>/dev/null || echo none)
    case "$v" in "$SID_LLAMA"*) ;; *) log "note: Debian sid's llama.cpp-tools is $v here, the matrix was made with $SID_LLAMA" ;; esac
    echo "debian-sid deb $CACHE/debian-sid"
fi
