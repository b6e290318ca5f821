#!/usr/bin/env bash
# The client under test for the MCP conformance suite (@modelcontextprotocol/conformance).
#
# The suite starts a mock server per scenario, then runs
#   tests/conformance/client.sh <server-url>
# with MCP_CONFORMANCE_SCENARIO, MCP_CONFORMANCE_PROTOCOL_VERSION (the wire the scenario runs at; from
# 0.2.0) and, for some scenarios, MCP_CONFORMANCE_CONTEXT (a JSON object: client credentials for auth
# scenarios, `toolCalls` for http-custom-headers) in the environment, and judges what the mock server saw. This script turns that into rivumi-mcp
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
KEY_FILE="$tmp/client-key.pem" URL="$url" SCENARIO="$scenario" CONTEXT="${MCP_CONFORMANCE_CONTEXT:-}" \
  REFRESH="${RIVUMI_CONF_REFRESH:-}" node -e '
  const ctx = process.env.CONTEXT ? JSON.parse(process.env.CONTEXT) : {};
  const server = { url: process.env.URL };
  if (process.env.SCENARIO.startsWith("auth/")) {
    const o = { step_up: true, offline_access: true };
    if (process.env.SCENARIO === "auth/basic-cimd") {
      o.client_id = "https://conformance-test.local/client-metadata.json";
    } else if (ctx.client_id) {
      o.client_id = ctx.client_id;
      if (ctx.client_secret) o.client_secret_env_var = "CONF_CLIENT_SECRET";
      // private_key_jwt: the key, written 0600 below.
      if (ctx.private_key_pem) o.client_key_file = process.env.KEY_FILE;
      if (process.env.SCENARIO.startsWith("auth/client-credentials")) o.grant = "client_credentials";
      // Workload identity: the job JWT; enterprise: the IdP ID token.
      if (ctx.valid_jwt) { o.grant = "jwt_bearer"; o.assertion_env_var = "CONF_ASSERTION"; }
      if (ctx.idp_token_endpoint) {
        o.grant = "enterprise";
        o.assertion_env_var = "CONF_ASSERTION";
        o.idp_token_endpoint = ctx.idp_token_endpoint;
        if (ctx.idp_client_id) o.idp_client_id = ctx.idp_client_id;
      }
    } else {
      o.registration = "dynamic";
    }
    // The machine grant scenarios find the authorization server from
    // the MCP server: the operator opts in to that choice.
    if (o.grant === "client_credentials" || o.grant === "jwt_bearer") o.trust_discovery = true;
    // DPoP, opted into for the scenarios that test it.
    if (process.env.SCENARIO.startsWith("auth/dpop")) o.dpop = true;
    // RIVUMI_CONF_REFRESH=auto: the same runs with refresh opted in.
    if (process.env.REFRESH === "auto") o.refresh = "auto";
    server.oauth = o;
  }
  process.stdout.write(JSON.stringify({ mcpServers: { conf: server } }, null, 2) + "\n");
' >"$cfg" || { echo "client.sh: cannot write the config (is node on PATH?)" >&2; exit 2; }
# ctx_field NAME...: the first of the context's fields NAME... that is set (empty if none).
ctx_field() {
  CONTEXT="${MCP_CONFORMANCE_CONTEXT:-}" node -e '
    const c = process.env.CONTEXT ? JSON.parse(process.env.CONTEXT) : {};
    process.stdout.write(process.argv.slice(1).map(k => c[k]).find(Boolean) || "")' "$@"
}
export CONF_CLIENT_SECRET="$(ctx_field client_secret)"
export CONF_ASSERTION="$(ctx_field valid_jwt idp_id_token)"
# The client's private key (private_key_jwt), owner-only as rivumi-mcp requires.
(umask 077; ctx_field private_key_pem >"$tmp/client-key.pem")
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

# js CODE: runs CODE under node with `input` = stdin parsed as JSON (null if empty or not JSON) and
# `ctx` = MCP_CONFORMANCE_CONTEXT parsed (an empty object if unset); CODE prints what it wants.
js() {
  CONTEXT="${MCP_CONFORMANCE_CONTEXT:-}" node -e '
    let s = ""; process.stdin.on("data", d => s += d).on("end", () => {
      let input = null; try { input = JSON.parse(s); } catch {}
      const ctx = process.env.CONTEXT ? JSON.parse(process.env.CONTEXT) : {};
      '"$1"'
    });'
}

# list_json: `list conf --json` into $tmp/list.json (run in this shell, so a failure is noted).
list_json() {
  "$bin" -c "$cfg" -v list conf --json --timeout 20 --startup-timeout 20 >"$tmp/list.json"
  local rc=$?
  echo "client.sh: \$ rivumi-mcp list conf --json -> exit $rc" >&2
  [ "$rc" -eq 0 ] || [ "$status" -ne 0 ] || status=$rc
}

# call_each_listed: calls every tool that `list conf --json` shows, with a value of the declared type
# for each required argument (a string "x", 1, true, {}, [] or null). A client that keeps a tool the
# scenario wants excluded therefore calls it, and the scenario sees that.
call_each_listed() {
  local name args
  list_json
  while IFS=$'\t' read -r name args; do
    [ -n "$name" ] && run call conf "$name" --args "$args" --yes
  done < <(js '
    const tools = (input && input.servers && input.servers[0].tools) || [];
    const sample = { string: "x", integer: 1, number: 1, boolean: true, object: {}, array: [], null: null };
    for (const t of tools) {
      const sch = t.inputSchema || {}, props = sch.properties || {}, args = {};
      for (const k of sch.required || []) args[k] = sample[(props[k] || {}).type] ?? "x";
      console.log(t.name + "\t" + JSON.stringify(args));
    }' <"$tmp/list.json")
}

# Best effort for scenarios without a recipe: list, then call the first tool, with an empty object.
list_and_call_first() {
  local first
  list_json
  cat "$tmp/list.json"
  first="$(js 'const t = (input && input.servers && input.servers[0].tools) || []; if (t.length) console.log(t[0].name);' <"$tmp/list.json")"
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
    # The tool sends elicitation/create with five fields that each have a default and none required;
    # --elicit defaults (SEP-1034) accepts with every default filled in, the mock checks each one.
    run list conf
    run call conf test_client_elicitation_defaults --yes --elicit defaults
    ;;
  request-metadata)
    # (2026-07-28) Every POST is checked for _meta (protocolVersion, clientCapabilities object,
    # clientInfo) and an MCP-Protocol-Version header equal to it. The FIRST POST, whatever it is, gets
    # 400 -32022 {supported:["2026-07-28"]}; the client must retry with 2026-07-28 in both.
    run list conf
    ;;
  sep-2322-client-request-state)
    # (2026-07-28) Tools answer `input_required` (an elicitation/create inputRequest). echo_state gives
    # a requestState to echo byte for byte, no_state gives none (the retry must carry none), unrelated
    # must carry neither, no_result_type answers without resultType (complete: no retry).
    run list conf
    for t in test_mrtr_echo_state test_mrtr_no_state test_mrtr_unrelated test_mrtr_no_result_type; do
      run call conf "$t" --yes
    done
    ;;
  http-standard-headers)
    # (2026-07-28) Mcp-Method on every POST, Mcp-Name for tools/call and prompts/get (params.name) and
    # resources/read (params.uri); each method is judged on its first request.
    run list conf --all
    run call conf test_headers --yes
    run call conf my-hyphenated-tool --yes
    run read conf 'file:///path/to/file%20name.txt'
    run read conf 'https://example.com/resource?id=123'
    run prompt conf test_prompt
    ;;
  http-custom-headers)
    # (2026-07-28) The calls come in MCP_CONFORMANCE_CONTEXT.toolCalls: test_custom_headers (every kind
    # of x-mcp-header value) and test_custom_headers_null (verbose: null must send no header).
    run list conf
    while IFS=$'\t' read -r name args; do
      run call conf "$name" --args "$args" --yes
    done < <(js 'for (const c of ctx.toolCalls || []) console.log(c.name + "\t" + JSON.stringify(c.arguments || {}));' </dev/null)
    ;;
  http-invalid-tool-headers)
    # (2026-07-28) valid_tool must be called; the 11 invalid_* tools (bad x-mcp-header) must be
    # excluded from the list, so never called.
    call_each_listed
    ;;
  json-schema-ref-no-deref)
    # (2026-07-28) tools/list shows a schema with a network $ref; the canary URL must never be fetched.
    run list conf
    ;;
  json-schema-2020-12-preservation)
    # The inputSchema of json_schema_2020_12_tool, as listed, goes back verbatim as the `schema`
    # argument of json_schema_echo; the mock compares it with what it sent.
    list_json
    schema_args="$(js '
      const t = ((input && input.servers && input.servers[0].tools) || []).find(t => t.name === "json_schema_2020_12_tool");
      if (t) console.log(JSON.stringify({ schema: t.inputSchema }));' <"$tmp/list.json")"
    if [ -n "$schema_args" ]; then
      run call conf json_schema_echo --args "$schema_args" --yes
    else
      echo "client.sh: json_schema_2020_12_tool not listed" >&2
      [ "$status" -ne 0 ] || status=1
    fi
    ;;
  sep-2640-client-no-prefetch)
    # Skills: listing must fetch no skill file (the mock counts resources/read of its two files).
    run skills conf
    ;;
  sep-2640-client-verify-digest|sep-2640-client-verify-size|sep-2640-client-verify-frontmatter)
    # Skills: the mock serves a SKILL.md whose digest, size or frontmatter differs from its entry.
    # `skill get` must read SKILL.md, refuse it (exit 9) and never go on to references/FORMS.md.
    run skills conf
    "$bin" -c "$cfg" -v skill get conf pdf-processing --timeout 20 --startup-timeout 20
    rc=$?
    echo "client.sh: \$ rivumi-mcp skill get conf pdf-processing -> exit $rc (9 expected)" >&2
    [ "$rc" -eq 9 ] || [ "$status" -ne 0 ] || status=1
    ;;
  *)
    # auth/*: the first request gets 401; step-up (opted into in the config
    # above) runs the authorization inline, then list and call go on.
    list_and_call_first
    ;;
esac
exit "$status"
