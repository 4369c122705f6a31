#!/usr/bin/env bash
# install.sh — `cmake --install` of a build into a temporary prefix, then a
# host program (examples/embed/embed.c) built against the installed tree
# only, through pkg-config: once with the shared library (its soname, run
# from the prefix without LD_LIBRARY_PATH: jiti.pc's flags set the run
# path) and once statically; and the installed jiti runs.
# Usage: bash tests/install.sh BUILD_DIR [EXTRA_CFLAGS...]
# (EXTRA_CFLAGS: what the build was compiled with that a host must repeat,
# e.g. -fsanitize=address,undefined for a sanitizer build.)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
build=$(realpath "$1"); shift
extra=("$@")
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
P=$tmp/prefix

t install 0 "" -- cmake --install "$build" --prefix "$P"
for f in bin/jiti include/jiti.h include/jiti_world.h; do
  ok "installed-$f" "$([[ -f $P/$f ]]; echo $?)"
done
lib=$(dirname "$(find "$P" -name jiti.pc | head -1)")/..
lib=$(realpath "$lib")
ok installed-static "$([[ -f $lib/libjiti.a ]]; echo $?)"
ok installed-shared-links "$([[ -L $lib/libjiti.so && -L $lib/libjiti.so.0 ]]; echo $?)"
t soname 0 "SONAME +libjiti\.so\.0$" -- bash -c "objdump -p '$lib'/libjiti.so.0.* | grep SONAME"
t exports-only-api 0 "^0$" -- bash -c "nm -D --defined-only '$lib'/libjiti.so | awk '{print \$3}' | grep -vc '^jiti_' || true"

export PKG_CONFIG_PATH=$lib/pkgconfig
t pc-version 0 "^0\.1\.0$" -- pkg-config --modversion jiti
ok pc-includedir "$([[ -f $(pkg-config --variable=includedir jiti)/jiti.h ]]; echo $?)"
t pc-cflags 0 "^-I" -- pkg-config --cflags jiti
t pc-static-libs 0 "-lgmp.*-lcrypto.*-lffi|-lffi.*-lgmp" -- pkg-config --static --libs jiti

# the host program, from the installed tree alone: a copy outside the sources
cp "$src/examples/embed/embed.c" "$tmp/embed.c"
t build-shared 0 "" -- bash -c "cc ${extra[*]} -o '$tmp/embed-shared' '$tmp/embed.c' \$(pkg-config --cflags --libs jiti)"
t needs-soname 0 "NEEDED +libjiti\.so\.0" -- objdump -p "$tmp/embed-shared"
# the prefix is not one the loader searches: the host finds libjiti through
# the run path pkg-config's flags gave it, with no LD_LIBRARY_PATH
t runpath 0 "(RUNPATH|RPATH) +[^ ]*/lib" -- bash -c "objdump -p '$tmp/embed-shared' | grep -E 'RUNPATH|RPATH'"
t run-shared 0 "embed: ok" -- env -u LD_LIBRARY_PATH "$tmp/embed-shared"
t build-static 0 "" -- bash -c "cc ${extra[*]} -o '$tmp/embed-static' '$tmp/embed.c' \$(pkg-config --cflags jiti) '$lib/libjiti.a' \$(pkg-config --static --libs-only-l jiti | sed 's/-ljiti//')"
t run-static 0 "embed: ok" -- "$tmp/embed-static"
t static-has-no-libjiti 1 "" -- bash -c "objdump -p '$tmp/embed-static' | grep 'NEEDED.*libjiti'"
t installed-jiti-runs 0 "^3$" -- "$P/bin/jiti" run -e '(+ 1 2)'
finish
