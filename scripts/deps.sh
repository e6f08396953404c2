#!/usr/bin/env bash
# Installs the Debian packages hookd needs, quietly and only when missing.
#   scripts/deps.sh build   compiler-side libraries (make, make asan)
#   scripts/deps.sh test    servers and tools the tests, demo and bench use
#   scripts/deps.sh deb     what `make deb` needs besides the build
set -euo pipefail

build_pkgs=(gcc make pkg-config libevent-dev libhiredis-dev libpq-dev libjansson-dev
            libssl-dev libinih-dev libcmocka-dev uthash-dev python3 openssl)
test_pkgs=(postgresql-15 postgresql-client-15 redis-server python3-pytest python3-psycopg2
           python3-redis python3-cryptography python3-prometheus-client python3-selenium chromium chromium-driver
           openssl valgrind procps gnuplot-nox faketime clang-format
           strace systemd libseccomp2 iproute2)

want=()
case "${1:-build}" in
  build) want=("${build_pkgs[@]}") ;;
  test) want=("${build_pkgs[@]}" "${test_pkgs[@]}") ;;
  deb) want=("${build_pkgs[@]}" dpkg-dev binutils adduser) ;;
  *) echo "usage: $0 build|test|deb" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
