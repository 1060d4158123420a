#!/usr/bin/env bash
# Runs every cargo-fuzz target of fuzz/ for a fixed time (default 10 s each,
# FUZZ_JOBS at a time, default one per core). Fails on a crash, panic, leak,
# timeout or allocation above the limit in any target; the crashing input is
# left in fuzz/artifacts/<target>/.
#
#   ci/fuzz-smoke.sh            # 10 s per target
#   FUZZ_SECONDS=600 ci/fuzz-smoke.sh kem_ml_kem_512   # one target, longer
#   FUZZ_BUILD_ONLY=1 ci/fuzz-smoke.sh                 # build, run nothing
#
# Needs the nightly toolchain (rustup toolchain install nightly) and
# cargo-fuzz (installed from crates.io below if missing).
#
# Built with optimisations (-O), AddressSanitizer (cargo-fuzz's default) and
# debug assertions (-a), which also turn on overflow checks (rustc's
# default follows debug assertions); fuzz/src/lib.rs fails the build if
# either is off, so the claim in SECURITY.md cannot silently become false.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

SECONDS_PER_TARGET="${FUZZ_SECONDS:-10}"
# The largest legitimate allocation is an MQTT packet of 256 KiB; anything
# near this limit is an unbounded allocation driven by the input.
MALLOC_LIMIT_MB="${FUZZ_MALLOC_LIMIT_MB:-64}"

if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    cargo install --locked cargo-fuzz
fi

FUZZ_FLAGS=(-O -a)
cargo +nightly fuzz build "${FUZZ_FLAGS[@]}"
echo "built with ${FUZZ_FLAGS[*]}: debug assertions and overflow checks on (checked at compile time by fuzz/src/lib.rs)"
# `cargo xtask ci` builds ahead, beside other steps, then runs.
[ "${FUZZ_BUILD_ONLY:-0}" = 1 ] && exit 0
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cargo +nightly fuzz list)
fi

# One target per core at a time (each fuzzer is one process, one thread).
JOBS="${FUZZ_JOBS:-$(nproc)}"
logs="$(mktemp -d)"
fuzz_one() {
    local t="$1"
    mkdir -p "corpus/$t"
    echo "== fuzz $t for ${SECONDS_PER_TARGET}s"
    if cargo +nightly fuzz run "${FUZZ_FLAGS[@]}" "$t" "corpus/$t" -- \
        -max_total_time="$SECONDS_PER_TARGET" -malloc_limit_mb="$MALLOC_LIMIT_MB" -rss_limit_mb=2048 \
        -timeout=10 -print_final_stats=1 >"$logs/$t.log" 2>&1; then
        touch "$logs/$t.ok"
    fi
}
running=0
for t in "${targets[@]}"; do
    if [ "$running" -ge "$JOBS" ]; then
        wait -n || true
        running=$((running - 1))
    fi
    fuzz_one "$t" &
    running=$((running + 1))
done
wait
summary=()
failed=0
for t in "${targets[@]}"; do
    if [ ! -e "$logs/$t.ok" ]; then
        tail -n 60 "$logs/$t.log"
        echo "FAIL: fuzz target $t (input in fuzz/artifacts/$t/)"
        failed=$((failed + 1))
        continue
    fi
    execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$logs/$t.log" | grep -o '[0-9]*$' || echo '?')
    summary+=("$t: $execs executions in ${SECONDS_PER_TARGET}s")
done
rm -rf "$logs"
printf '%s\n' "${summary[@]}"
echo "$(( ${#targets[@]} - failed )) passed, $failed failed"
[ "$failed" -eq 0 ]
