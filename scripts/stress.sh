#!/usr/bin/env bash
# The suite under CPU contention: RUNS runs of scripts/test.sh (default 3), each on a fresh clone of this
# checkout's HEAD, while LOAD busy-loop processes (default 2) compete for the CPU. A robot's computer is
# rarely idle, so the suite must pass like this, not only on a quiet machine.
#
#   ./scripts/stress.sh                    # 3 fresh-clone runs beside 2 busy loops
#   RUNS=1 IN_PLACE=1 ./scripts/stress.sh  # one run on this checkout (no clone), e.g. before a commit
#   LOAD=0 ./scripts/stress.sh             # the same runs on a quiet machine, for comparison
# Extra arguments go to scripts/test.sh. Exits non-zero when any run fails; prints one line per run.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUNS="${RUNS:-3}"
LOAD="${LOAD:-2}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/ik_solver_stress.XXXXXX")"

busy=()
stop_load() { [ ${#busy[@]} -eq 0 ] || kill "${busy[@]}" 2>/dev/null || true; }
trap stop_load EXIT
for _ in $(seq 1 "$LOAD"); do
  python3 -c 'while True: pass' &
  busy+=($!)
done
echo "[stress] $RUNS run(s) of scripts/test.sh beside $LOAD busy loop(s); logs in $WORK"

failed=0
for run in $(seq 1 "$RUNS"); do
  if [ -n "${IN_PLACE:-}" ]; then
    tree="$ROOT"
  else
    tree="$WORK/clone$run"
    git clone --quiet "$ROOT" "$tree"
  fi
  log="$WORK/run$run.log"
  start=$(date +%s)
  if (cd "$tree" && ./scripts/test.sh "$@") >"$log" 2>&1; then verdict=passed; else verdict=FAILED; failed=1; fi
  summary="$(grep -E '^[0-9]+ passed|passed|failed' "$log" | grep -E 'Summary|passed,|failed,' | tail -1 || true)"
  echo "[stress] run $run: $verdict in $(( $(date +%s) - start )) s, load $(cut -d' ' -f1-3 /proc/loadavg): $summary"
done
exit "$failed"
