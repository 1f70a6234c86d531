#!/usr/bin/env bash
# Installs (once) every real ggml build of the compatibility matrix into the cache and prints one line per
# build: NAME KIND DIR. Idempotent: each build leaves a stamp; a second run only prints the lines.
#   nlc   node-llama-cpp's prebuilt CPU libraries of one npm release (npm, --omit=optional: no GPU packages)
#   deb   Debian sid's llama.cpp-tools, whisper.cpp-tools and libggml0 in a debootstrap chroot (apt, the machine's
#         Debian mirror)
# usage: tests/compat/builds.sh [NAME...]   (default: all)
set -euo pipefail
CACHE=${GGPROF_CACHE:-$HOME/.cache/ggprof}/compat
# node-llama-cpp release -> the llama.cpp release it pins (node_modules/node-llama-cpp/llama/binariesGithubRelease.json).
NLC_VERSIONS=(3.1.1 3.5.0 3.10.0 3.14.0 3.18.0 3.20.0 3.21.1 3.22.1)
# Debian sid as the mirror serves it: the versions are checked after the install (sid moves; a new version is
# reported, not silently tested). BLAS is Debian's separate backend package, loaded by ggml's backend registry.
# The list is also the chroot's stamp: a chroot made with a shorter list gets the rest with apt-get inside it.
SID_PKGS=llama.cpp-tools,libggml0,libggml0-backend-blas,libsqlite3-0,libcjson1,zlib1g,whisper.cpp-tools
SID_LLAMA=1:0.7.0
SID_WHISPER=1.9.5
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
    [ -f "$d/.stamp" ] && [ "$(cat "$d/.stamp")" = "$SID_PKGS" ] && return 0
    if [ ! -f "$d/.stamp" ]; then
        command -v debootstrap > /dev/null || { log "debootstrap missing (tests/deps.sh installs it)"; return 1; }
        log "debootstrap Debian sid with $SID_PKGS into $d (a few minutes)"
        rm -rf "$d"
        debootstrap --variant=minbase --include="$SID_PKGS" sid "$d" "$MIRROR" >&2
    else
        # made with an older list: the packages it lacks (only those: installing one it has would upgrade it),
        # from the package lists debootstrap fetched
        local p missing=()
        for p in $(tr ',' ' ' <<< "$SID_PKGS"); do
            chroot "$d" dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q 'install ok installed' || missing+=("$p")
        done
        log "installing ${missing[*]:-nothing} into the existing chroot $d (apt-get inside it)"
        [ ${#missing[@]} -eq 0 ] || DEBIAN_FRONTEND=noninteractive chroot "$d" apt-get install -y -qq \
            --no-install-recommends "${missing[@]}" >&2
    fi
    printf '%s' "$SID_PKGS" > "$d/.stamp"
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
    v=$(chroot "$CACHE/debian-sid" dpkg-query -W -f='${Version}' whisper.cpp-tools 2>/dev/null || echo none)
    case "$v" in "$SID_WHISPER"*) ;; *) log "note: Debian sid's whisper.cpp-tools is $v here, the matrix was made with $SID_WHISPER" ;; esac
    echo "debian-sid deb $CACHE/debian-sid"
fi
