#!/usr/bin/env bash
# The client under test for the MCP conformance suite (@modelcontextprotocol/conformance).
#
# The suite starts a mock server per scenario, then runs
#   tests/conformance/client.sh <server-url>
# with MCP_CONFORMANCE_SCENARIO (and, for some auth scenarios, MCP_CONFORMANCE_CONTEXT, a JSON object)
# in the environment, and judges what the mock server saw. This script turns that into rivumi-mcp
# commands: a throwaway config naming the server `conf`, RIVUMI_MCP_ALLOWLIST=conf, then the commands
# the scenario expects. Exits with the first failing command's code (the suite counts a non-zero exit
# as a failure), after running the rest.
#
# Binary: $RIVUMI_MCP_BIN, else target/release/rivumi-mcp of this repo. Needs `node` on PATH for
# JSON (scripts/conformance.sh puts the suite's node 22 first on PATH).
# Run by hand: MCP_CONFORMANCE_SCENARIO=initialize tests/conformance/client.sh http://localhost:PORT
set -uo pipefail

[ $# -ge 1 ] || { echo "usage: $0 [ARGS...] SERVER_URL" >&2; exit 2; }
url="${!#}"
scenario="${MCP_CONFORMANCE_SCENARIO:-}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin="${RIVUMI_MCP_BIN:-$root/target/release/rivumi-mcp}"
[ -x "$bin" ] || { echo "client.sh: $bin not found or not executable (cargo build --release)" >&2; exit 2; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cfg="$tmp/mcp.json"
# The oauth block: what an operator would opt into for an unknown server
# (discovery from the server, dynamic registration, step-up, a refresh
# token when offered), or the pre-registered client / client-credentials
# grant that MCP_CONFORMANCE_CONTEXT describes.
URL="$url" SCENARIO="$scenario" CONTEXT="${MCP_CONFORMANCE_CONTEXT:-}" node -e '
  const ctx = process.env.CONTEXT ? JSON.parse(process.env.CONTEXT) : {};
  const server = { url: process.env.URL };
  if (process.env.SCENARIO.startsWith("auth/")) {
    const o = { step_up: true, offline_access: true };
    if (process.env.SCENARIO === "auth/basic-cimd") {
      o.client_id = "https://conformance-test.local/client-metadata.json";
    } else if (ctx.client_id) {
      o.client_id = ctx.client_id;
      if (ctx.client_secret) o.client_secret_env_var = "CONF_CLIENT_SECRET";
      if (process.env.SCENARIO.startsWith("auth/client-credentials")) o.grant = "client_credentials";
    } else {
      o.registration = "dynamic";
    }
    server.oauth = o;
  }
  process.stdout.write(JSON.stringify({ mcpServers: { conf: server } }, null, 2) + "\n");
' >"$cfg" || { echo "client.sh: cannot write the config (is node on PATH?)" >&2; exit 2; }
export CONF_CLIENT_SECRET="$(CONTEXT="${MCP_CONFORMANCE_CONTEXT:-}" node -e '
  const c = process.env.CONTEXT ? JSON.parse(process.env.CONTEXT) : {};
  process.stdout.write(c.client_secret || "")')"
export RIVUMI_MCP_CREDENTIALS="$tmp/credentials.json"
export RIVUMI_MCP_BROWSER="$root/tests/conformance/browser.js"
export RIVUMI_MCP_ALLOWLIST=conf

status=0
# run CMD...: runs rivumi-mcp with the config, -v, and a short deadline; notes the first failure.
run() {
  echo "client.sh: \$ rivumi-mcp $*" >&2
  "$bin" -c "$cfg" -v "$@" --timeout 20 --startup-timeout 20
  local rc=$?
  echo "client.sh: exit $rc" >&2
  [ "$rc" -eq 0 ] || [ "$status" -ne 0 ] || status=$rc
  return "$rc"
}

# Best effort for scenarios without a recipe: list, then call the first tool, with an empty object.
list_and_call_first() {
  local out first
  out="$("$bin" -c "$cfg" -v list conf --json --timeout 20 --startup-timeout 20)"
  local rc=$?
  echo "client.sh: \$ rivumi-mcp list conf --json -> exit $rc" >&2
  printf '%s\n' "$out"
  if [ "$rc" -ne 0 ]; then
    [ "$status" -ne 0 ] || status=$rc
    return
  fi
  first="$(printf '%s' "$out" | node -e '
    let s = ""; process.stdin.on("data", d => s += d).on("end", () => {
      try { const t = JSON.parse(s).servers[0].tools || []; if (t.length) process.stdout.write(t[0].name); } catch {}
    });')"
  if [ -n "$first" ]; then
    run call conf "$first" --yes
  else
    echo "client.sh: the server lists no tool; nothing to call" >&2
  fi
}

case "$scenario" in
  initialize)
    # The mock answers initialize and an empty tools/list; the checks look only at the initialize request.
    run list conf
    ;;
  tools_call)
    # The mock (add-numbers-server) exposes add_numbers {a: number, b: number}; the check passes when it is called.
    run list conf
    run call mcp__conf__add_numbers a=5 b=3 --yes
    ;;
  sse-retry)
    # tools/call of test_reconnection answers an SSE stream holding only a priming event
    # (id + `retry: 500`), then closes it. The client must GET the endpoint with Last-Event-ID
    # 500 ms (-50/+200) later; the tool result arrives on that GET stream.
    run call conf test_reconnection --yes
    ;;
  elicitation-sep1034-client-defaults)
    # Needs elicitation support (the tool sends elicitation/create); rivumi-mcp declares none.
    run list conf
    run call conf test_client_elicitation_defaults --yes
    ;;
  *)
    # auth/*: the first request gets 401; step-up (opted into in the config
    # above) runs the authorization inline, then list and call go on.
    list_and_call_first
    ;;
esac
exit "$status"
