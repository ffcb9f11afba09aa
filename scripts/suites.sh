# Sourced by scripts/test.sh and the scripts it runs: where cargo builds, and suites whose
# result the closing line counts even when they cannot run.

# ensure_build_deps: the system libraries the build links against.
. "$(dirname "${BASH_SOURCE[0]}")/build-deps.sh"

# Cargo's target directory: CARGO_TARGET_DIR, a config's build.target-dir, or ./target.
cargo_target_dir() {
  cargo metadata --format-version 1 --no-deps \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])'
}

# The tessera binary of a profile (debug or release) in cargo's target directory.
tessera_bin() {
  printf '%s/%s/tessera\n' "$(cargo_target_dir)" "${1:-debug}"
}

# run_suite NAME LOG COMMAND...: runs COMMAND, its output shown and appended to LOG, and returns
# its status. A suite reports "NAME: N passed, M failed" (cargo's suites "test result:" lines).
# One that exits non-zero without reporting a failure, or reports nothing (it could not start, a
# tool was missing, it crashed before its summary), adds "NAME: 0 passed, 1 failed" to LOG, so
# the closing line cannot count it as passed.
run_suite() {
  local name=$1 log=$2 out status=0 reported failures
  shift 2
  out=$(mktemp)
  set +e
  "$@" 2>&1 | tee "$out"
  status=${PIPESTATUS[0]}
  set -e
  cat "$out" >>"$log"
  if [ "$name" = cargo ]; then
    reported=$(grep -c '^test result:' "$out" || true)
    failures=$(grep -Ec '^test result: .* [1-9][0-9]* failed' "$out" || true)
  else
    reported=$(grep -Ec "^$name: [0-9]+ passed, [0-9]+ failed\$" "$out" || true)
    failures=$(grep -Ec "^$name: [0-9]+ passed, [1-9][0-9]* failed\$" "$out" || true)
  fi
  rm -f "$out"
  if [ "$reported" -eq 0 ] || { [ "$status" -ne 0 ] && [ "$failures" -eq 0 ]; }; then
    echo "$name: did not run to the end (exit status $status): counted as a failure" >&2
    echo "$name: 0 passed, 1 failed" >>"$log"
    [ "$status" -ne 0 ] || status=1
  fi
  return "$status"
}

# summarize LOG: the closing line over every suite's result lines in LOG.
summarize() {
  awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
       /^[a-z-]+: [0-9]+ passed, [0-9]+ failed$/ { p += $2; f += $4 }
       END { printf "\ntests: %d passed, %d failed\n", p, f }' "$1"
}
