#!/usr/bin/env bash
# Builds hookd's libFuzzer targets (tests/fuzz/fuzz_*.c) with clang, ASan and
# UBSan, replays their saved regressions, then fuzzes each one for a fixed
# time over a fresh copy of its committed seed corpus, so the corpus in git
# stays small. Prints one summary line per target and exits non-zero if any
# target failed to build, failed a regression or crashed.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     (default 60, all)
#
# SECONDS_PER_TARGET 0 builds, replays the regressions and runs each seed
# once, without fuzzing (a quick smoke test).
#
# Each fuzz_*.c names the sources it links in a `/* fuzz.sh links: ... */`
# comment: source paths, or ALL (every engine/ and schedulers/ source but
# engine/cli/main.c) minus any `-path`. Engine sources are compiled once per
# change with -fsanitize=fuzzer-no-link (coverage without libFuzzer's main);
# only the final link of a target uses -fsanitize=fuzzer.
#
# Output under $BUILD/fuzz (BUILD defaults to build): bin/, obj/, corpus/
# (the working copy), logs/, and crashes/ (libFuzzer's crash-*, leak-* and
# timeout-* files). Runs are niced (NICE=10) because the machine is shared.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 2

SECONDS_PER_TARGET=${1:-60}
shift $(($# > 0 ? 1 : 0))
BUILD=${BUILD:-build}
NICE=${NICE:-10}
OUT=$BUILD/fuzz
PKGS="libevent libevent_openssl libevent_pthreads hiredis jansson libpq openssl inih"
JOBS=$(nproc 2>/dev/null || echo 2)

case $SECONDS_PER_TARGET in
  '' | *[!0-9]*) echo "usage: $0 [SECONDS_PER_TARGET] [TARGET...]" >&2; exit 2 ;;
esac

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

apt_install() {
  echo "fuzz: installing $*" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq >/dev/null && $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# ---- toolchain -------------------------------------------------------------

find_clang() {
  for c in "${CLANG:-}" clang-14 clang; do
    [ -n "$c" ] && command -v "$c" >/dev/null 2>&1 && { echo "$c"; return 0; }
  done
  return 1
}

CC=$(find_clang) || { apt_install clang-14 || exit 1; CC=$(find_clang) || exit 1; }

# libFuzzer's runtime ships in Debian's libclang-rt-14-dev; without it
# -fsanitize=fuzzer does not link.
fuzzer_links() {
  local dir
  dir=$(mktemp -d) || return 1
  printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n);\n%s\n' \
    'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }' \
    >"$dir/probe.c"
  "$CC" -fsanitize=fuzzer,address,undefined -o "$dir/probe" "$dir/probe.c" >/dev/null 2>&1
  local rc=$?
  rm -rf "$dir"
  return $rc
}

if ! fuzzer_links; then
  if apt-cache policy libclang-rt-14-dev 2>/dev/null | grep -q 'Candidate: [0-9]'; then
    apt_install libclang-rt-14-dev
  fi
  fuzzer_links || { echo "fuzz: $CC cannot link -fsanitize=fuzzer (install libclang-rt-14-dev)" >&2; exit 1; }
fi

# shellcheck disable=SC2086
pkg-config --exists $PKGS 2>/dev/null || scripts/deps.sh build || exit 1
# make regenerates them when a .sql or .lua file changed (a stale queries.h
# names statements that are gone, or lacks new ones).
make -s BUILD="$BUILD" "$BUILD/embedded.h" || exit 1

# shellcheck disable=SC2086
PKG_CFLAGS=$(pkg-config --cflags $PKGS)
# shellcheck disable=SC2086
PKG_LIBS="$(pkg-config --libs $PKGS) -lpthread -lm"
SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
CFLAGS="-std=c11 -D_GNU_SOURCE -g -O1 $SAN -iquote engine/base -iquote engine/io -iquote engine/core -iquote schedulers -iquote engine/shared -iquote engine/inbound -iquote engine/outbound -iquote engine/api -iquote engine/portal -iquote engine/ops -iquote engine/cli -iquote $BUILD $PKG_CFLAGS"
WARN="-Wall -Wextra -Wmissing-prototypes -Wstrict-prototypes -Wshadow -Wformat=2"

mkdir -p "$OUT/bin" "$OUT/obj" "$OUT/corpus" "$OUT/logs" "$OUT/crashes"

# ---- engine objects --------------------------------------------------------

obj_of() { echo "$OUT/obj/${1%.c}.o"; }

# True if $1's object is missing or older than the source or a header it
# included last time (from the -MMD dependency file).
stale() {
  local o d f
  o=$(obj_of "$1")
  d=${o%.o}.d
  [ -f "$o" ] && [ -f "$d" ] || return 0
  # shellcheck disable=SC2013 # paths in the tree have no blanks
  for f in $(sed -e 's/^[^:]*://' -e 's/\\$//' "$d"); do
    [ "$f" -nt "$o" ] && return 0
  done
  return 1
}

# On failure no object is left behind, so a missing object means "failed".
compile_obj() {
  local src=$1 o
  o=$(obj_of "$src")
  mkdir -p "$(dirname "$o")"
  rm -f "$o"
  # shellcheck disable=SC2086
  nice -n "$NICE" "$CC" $CFLAGS $WARN -fsanitize=fuzzer-no-link -MMD -c -o "$o" "$src" 2>"${o%.o}.err" ||
    rm -f "$o"
}

ALL_SRCS=""
for f in engine/*/*.c schedulers/*.c; do
  [ "$f" = engine/cli/main.c ] || ALL_SRCS="$ALL_SRCS $f"
done

# The sources a target links, from its `fuzz.sh links:` comment.
target_srcs() {
  local spec word srcs="" s skip
  spec=$(awk '/fuzz\.sh links:/{on=1} on{print; if (index($0, "*/")) exit}' "$1" |
    sed -e 's/.*fuzz\.sh links://' -e 's|\*/||' -e 's/^ \*//')
  [ -n "${spec// /}" ] || spec=ALL
  for word in $spec; do
    case $word in
      ALL) srcs="$srcs $ALL_SRCS $BUILD/embedded.c" ;;
      -*) ;;
      *) srcs="$srcs $word" ;;
    esac
  done
  for s in $srcs; do
    skip=0
    for word in $spec; do [ "$word" = "-$s" ] && skip=1; done
    [ $skip -eq 0 ] && echo "$s"
  done | sort -u
}

if [ $# -gt 0 ]; then
  TARGETS=("$@")
else
  TARGETS=()
  for f in tests/fuzz/fuzz_*.c; do
    f=${f##*/}
    TARGETS+=("${f%.c}")
  done
fi

declare -A LINK
needed=""
for t in "${TARGETS[@]}"; do
  [ -f "tests/fuzz/$t.c" ] || { echo "fuzz: no such target tests/fuzz/$t.c" >&2; exit 2; }
  LINK[$t]=$(target_srcs "tests/fuzz/$t.c" | tr '\n' ' ')
  needed="$needed ${LINK[$t]}"
done

bad_srcs=""
todo=$(for s in $needed; do echo "$s"; done | sort -u | while read -r s; do stale "$s" && echo "$s"; done)
if [ -n "$todo" ]; then
  echo "fuzz: compiling $(echo "$todo" | wc -w) source(s) with $CC (fuzzer-no-link, ASan, UBSan)"
  for s in $todo; do
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
    compile_obj "$s" &
  done
  wait
  for s in $todo; do
    o=$(obj_of "$s")
    if [ ! -f "$o" ]; then
      echo "fuzz: cannot compile $s:" >&2
      cat "${o%.o}.err" >&2
      bad_srcs="$bad_srcs $s "
    fi
  done
fi

# ---- targets ---------------------------------------------------------------

# Links one target; returns 1 without trying when one of its sources failed.
link_target() {
  local t=$1 objs="" s
  for s in ${LINK[$t]}; do
    case $bad_srcs in *" $s "*)
      echo "not built: $s does not compile" >"$OUT/logs/$t.build.log"
      return 1 ;;
    esac
    objs="$objs $(obj_of "$s")"
  done
  # shellcheck disable=SC2086
  nice -n "$NICE" "$CC" $CFLAGS $WARN -fsanitize=fuzzer -o "$OUT/bin/$t" "tests/fuzz/$t.c" $objs \
    $PKG_LIBS >"$OUT/logs/$t.build.log" 2>&1
}

count_files() {
  local n=0 f
  for f in "$1"/*; do [ -e "$f" ] && n=$((n + 1)); done
  echo "$n"
}

stat_of() { sed -n "s/^stat::$1: *\([0-9]*\).*/\1/p" "$2" | tail -1; }

export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
failed=0
summary=()
for t in "${TARGETS[@]}"; do
  log=$OUT/logs/$t.log
  if ! link_target "$t"; then
    summary+=("$(printf '%-20s execs=%-10s secs=%-4s exec/s=%-7s result=BUILD FAILED (see %s)' "$t" - - - \
      "$OUT/logs/$t.build.log")")
    failed=1
    continue
  fi

  # Saved crashers must pass (each runs once, no fuzzing).
  regressions=()
  for f in tests/fuzz/regressions/"$t"-*; do [ -e "$f" ] && regressions+=("$f"); done
  if [ ${#regressions[@]} -gt 0 ]; then
    if ! "$OUT/bin/$t" -timeout=5 "${regressions[@]}" >"$OUT/logs/$t.regressions.log" 2>&1; then
      bad=$(sed -n 's/^Running: //p' "$OUT/logs/$t.regressions.log" | tail -1)
      summary+=("$(printf '%-20s execs=%-10s secs=%-4s exec/s=%-7s result=REGRESSION %s (log %s)' "$t" - - - \
        "${bad:-?}" "$OUT/logs/$t.regressions.log")")
      failed=1
      continue
    fi
  fi

  corpus=$OUT/corpus/$t
  rm -rf "$corpus"
  mkdir -p "$corpus"
  cp tests/fuzz/corpus/"$t"/* "$corpus"/ 2>/dev/null
  seeds=$(count_files "$corpus")
  # 0 seconds: only run the seeds once (libFuzzer reads 0 as "no limit").
  limit=-max_total_time=$SECONDS_PER_TARGET
  [ "$SECONDS_PER_TARGET" -eq 0 ] && limit=-runs=0
  start=$(date +%s)
  nice -n "$NICE" "$OUT/bin/$t" "$limit" -timeout=5 -print_final_stats=1 \
    -artifact_prefix="$OUT/crashes/$t-" "$corpus" >"$log" 2>&1
  rc=$?
  secs=$(($(date +%s) - start))
  execs=$(stat_of number_of_executed_units "$log")
  rate=$(stat_of average_exec_per_sec "$log")
  if [ $rc -eq 0 ]; then
    result="ok (corpus $seeds -> $(count_files "$corpus"))"
  else
    artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
    result="CRASH ${artifact:-exit $rc} (log $log)"
    failed=1
  fi
  summary+=("$(printf '%-20s execs=%-10s secs=%-4s exec/s=%-7s result=%s' "$t" "${execs:--}" "$secs" "${rate:--}" \
    "$result")")
done

for line in "${summary[@]}"; do echo "fuzz: $line"; done
exit $failed
