#!/usr/bin/env bash
# Host secret-independence check (ctgrind): builds ct-check/ in release mode
# with debug info (the workspace's release code generation) and runs it under
# valgrind memcheck. Every RNG output and the secret parts of every secret key
# are marked undefined, so memcheck reports any branch or memory index that
# depends on secret data. Fails if memcheck reports any error that
# ct-check/ct.supp does not explain.
#
# Phases: keygen, encaps, decaps, import (every KEM variant; X25519 with
# keygen) and mqtt (the KEM-MQTT/1 core: key schedule, Finished checks,
# record AEAD with valid and invalid tags, all-zero X25519 checks, in hybrid
# handshakes of both symmetric families).
#
#   ci/ct-valgrind.sh            # 8 key pairs per KEM variant (8 handshake rounds per suite), all phases
#   ci/ct-valgrind.sh 2 decaps   # 2 key pairs, decapsulation only
#   ci/ct-valgrind.sh 1 mqtt     # the KEM-MQTT/1 core only
#                                # (phases: a comma list of the above, or all)
set -euo pipefail
cd "$(dirname "$0")/../ct-check"

ITERATIONS="${1:-8}"
PHASES="${2:-all}"

if ! command -v valgrind >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq valgrind
fi

cargo build --release
# Negative control first: a deliberate secret branch must be reported.
if ! valgrind --tool=memcheck --error-exitcode=0 -q ./target/release/ct-check selftest 2>/dev/null | grep -q 'detected: true'; then
    echo "FAIL: the negative control's secret branch was not reported (client requests not reaching memcheck?)"
    echo "0 passed, 1 failed"
    exit 1
fi
log="$(mktemp)"
status=0
valgrind --tool=memcheck --error-exitcode=99 --error-limit=no --num-callers=40 \
    --read-inline-info=yes --suppressions=ct.supp --gen-suppressions=no \
    ./target/release/ct-check "$ITERATIONS" "$PHASES" >"$log" 2>&1 || status=$?
# The first reports (with their stacks), then the harness's own output and memcheck's summary.
grep -E '^==[0-9]+== (Conditional|Use of|   at|   by)' "$log" | head -n 200 || true
grep -vE '^==[0-9]+==' "$log" || true
grep -E '^==[0-9]+== ERROR SUMMARY' "$log" || true
rm -f "$log"
if [ "$status" -ne 0 ]; then
    echo "FAIL: memcheck reported secret-dependent branches or memory indices (exit $status)"
    echo "0 passed, 1 failed"
    exit 1
fi
echo "ct-valgrind: no secret-dependent branch or index"
echo "1 passed, 0 failed"
