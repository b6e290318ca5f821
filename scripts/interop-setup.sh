#!/usr/bin/env bash
# Installs the MCP servers used by rivumi-mcp's interop tests into .interop/ (gitignored):
#   .interop/node   the TypeScript reference server @modelcontextprotocol/server-everything (npm), and
#                   the TypeScript SDK v2 @modelcontextprotocol/server, which runs fixtures/interop/ts2_server.cjs
#   .interop/venv   the official Python SDK `mcp` (PyPI), which runs fixtures/interop/py_server.py, and
#                   `fastmcp` (PyPI), which runs fixtures/interop/fastmcp_server.py
# Idempotent: a step whose pinned install is already in place is skipped.
# Needs: node >= 20 with npm, python3 >= 3.10 with the venv module; reaches only the package registries.
# How to start the servers: fixtures/interop/README.md.
set -euo pipefail

# ---- Pinned versions. Bumping one? Also regenerate its lock file (see fixtures/interop/README.md):
#   Node: fixtures/interop/node/package.json + package-lock.json (the full dependency tree)
#   Python: fixtures/interop/py-constraints.txt (every transitive dependency)
SERVER_EVERYTHING_VERSION="2026.8.31" # @modelcontextprotocol/server-everything, newest on npm as of 2026-11
TS_SERVER_VERSION="2.3.1"             # @modelcontextprotocol/server (TS SDK v2, speaks 2026-07-28), newest on npm as of 2026-12
MCP_PY_VERSION="2.3.0"                # `mcp` on PyPI, newest; 2.x provides mcp.server.mcpserver.MCPServer
FASTMCP_VERSION="4.1.6"               # `fastmcp` on PyPI, newest as of 2026-12; works with mcp 2.3.0

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$(pwd)"
FIX="$ROOT/fixtures/interop"
DEST="$ROOT/.interop"
NODE_DIR="$DEST/node"
VENV="$DEST/venv"

step() { printf 'interop-setup: %s\n' "$*"; }
die() { printf 'interop-setup: ERROR: %s\n' "$*" >&2; exit 1; }
hash_of() { cat "$@" | sha256sum | cut -d' ' -f1; }

command -v node >/dev/null || die "node not found (need node >= 20)"
command -v npm >/dev/null || die "npm not found"
command -v python3 >/dev/null || die "python3 not found (need >= 3.10)"
mkdir -p "$DEST"

# ---- 1. Node: @modelcontextprotocol/server-everything and @modelcontextprotocol/server -------
# Prints the version package.json pins for a package, or the one installed in .interop/node.
pinned_node() { node -p "require('$FIX/node/package.json').dependencies['$1']"; }
installed_node() {
  local pkg="$NODE_DIR/node_modules/$1/package.json"
  [ -f "$pkg" ] && node -p "require('$pkg').version"
}
[ "$(pinned_node @modelcontextprotocol/server-everything)" = "$SERVER_EVERYTHING_VERSION" ] ||
  die "fixtures/interop/node/package.json pins server-everything $(pinned_node @modelcontextprotocol/server-everything), script pins $SERVER_EVERYTHING_VERSION"
[ "$(pinned_node @modelcontextprotocol/server)" = "$TS_SERVER_VERSION" ] ||
  die "fixtures/interop/node/package.json pins @modelcontextprotocol/server $(pinned_node @modelcontextprotocol/server), script pins $TS_SERVER_VERSION"

node_stamp="$(hash_of "$FIX/node/package.json" "$FIX/node/package-lock.json")"
node_pins="server-everything $SERVER_EVERYTHING_VERSION, server $TS_SERVER_VERSION"
if [ "$(installed_node @modelcontextprotocol/server-everything)" = "$SERVER_EVERYTHING_VERSION" ] &&
  [ "$(installed_node @modelcontextprotocol/server)" = "$TS_SERVER_VERSION" ] &&
  [ "$(cat "$NODE_DIR/.stamp" 2>/dev/null)" = "$node_stamp" ]; then
  step "node: $node_pins already installed, skipping"
else
  step "node: installing $node_pins into .interop/node (npm ci, locked tree)"
  mkdir -p "$NODE_DIR"
  rm -f "$NODE_DIR/.stamp"
  cp "$FIX/node/package.json" "$FIX/node/package-lock.json" "$NODE_DIR/"
  # No package in the tree has install scripts, so none are run.
  npm ci --prefix "$NODE_DIR" --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null
  got="$(installed_node @modelcontextprotocol/server-everything)"
  [ "$got" = "$SERVER_EVERYTHING_VERSION" ] || die "npm installed server-everything $got"
  got="$(installed_node @modelcontextprotocol/server)"
  [ "$got" = "$TS_SERVER_VERSION" ] || die "npm installed @modelcontextprotocol/server $got"
  echo "$node_stamp" >"$NODE_DIR/.stamp"
  step "node: installed $node_pins"
fi

# ---- 2. Python: mcp and fastmcp in .interop/venv --------------------------------------
python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' || die "python3 must be >= 3.10"
py_pins="mcp $MCP_PY_VERSION, fastmcp $FASTMCP_VERSION"
py_stamp="$(printf '%s %s %s\n' "$MCP_PY_VERSION" "$FASTMCP_VERSION" "$(python3 -c 'import sys; print(sys.version)')" | cat - "$FIX/py-constraints.txt" | sha256sum | cut -d' ' -f1)"
installed_py() {
  [ -x "$VENV/bin/python" ] &&
    "$VENV/bin/python" -c "import importlib.metadata as m; print(m.version('$1'))" 2>/dev/null || true
}
if [ "$(installed_py mcp)" = "$MCP_PY_VERSION" ] && [ "$(installed_py fastmcp)" = "$FASTMCP_VERSION" ] &&
  [ "$(cat "$VENV/.stamp" 2>/dev/null)" = "$py_stamp" ]; then
  step "python: $py_pins already installed in .interop/venv, skipping"
else
  step "python: installing $py_pins into .interop/venv (constraints: fixtures/interop/py-constraints.txt)"
  rm -rf "$VENV"
  python3 -m venv "$VENV" || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
    -c "$FIX/py-constraints.txt" "mcp==$MCP_PY_VERSION" "fastmcp==$FASTMCP_VERSION"
  echo "$py_stamp" >"$VENV/.stamp"
  step "python: installed $py_pins"
fi

# ---- 3. Smoke check: the servers are importable/startable ---------------------------------
[ -f "$NODE_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js" ] ||
  die "server-everything dist/index.js missing"
RIVUMI_INTEROP_NODE_DIR="$NODE_DIR" node "$FIX/ts2_server.cjs" check ||
  die "fixtures/interop/ts2_server.cjs cannot load @modelcontextprotocol/server from .interop/node"
"$VENV/bin/python" -c 'from mcp.server.mcpserver import MCPServer' || die "mcp.server.mcpserver not importable"
"$VENV/bin/python" "$FIX/py_server.py" --help >/dev/null || die "fixtures/interop/py_server.py --help failed"
"$VENV/bin/python" -c 'import runpy, sys; runpy.run_path(sys.argv[1], run_name="check")' "$FIX/py_elicit.py" \
  || die "fixtures/interop/py_elicit.py does not load"
"$VENV/bin/python" "$FIX/fastmcp_server.py" --check || die "fixtures/interop/fastmcp_server.py --check failed"
step "ok: node $(node --version) $node_pins; python $("$VENV/bin/python" -c 'import platform; print(platform.python_version())') $py_pins"

# ---- tasks: fastmcp-tasks (SEP-2663 tasks, 2026-07-28) in .interop/tasks-venv -------------------
# fastmcp-tasks 4.1.4 pins fastmcp-slim 4.1.4, which cannot share .interop/venv with fastmcp 4.1.6,
# hence a venv of its own; every package is pinned in fixtures/interop/tasks-venv/constraints.txt.
TASKS_VENV="$DEST/tasks-venv"
TASKS_PY_VERSION="4.1.4"
tasks_stamp="$(printf '%s %s\n' "$TASKS_PY_VERSION" "$(python3 -c 'import sys; print(sys.version)')" |
  cat - "$FIX/tasks-venv/constraints.txt" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$TASKS_VENV/.stamp" 2>/dev/null)" = "$tasks_stamp" ]; then
  step "python: fastmcp-tasks $TASKS_PY_VERSION already installed in .interop/tasks-venv, skipping"
else
  step "python: installing fastmcp-tasks $TASKS_PY_VERSION into .interop/tasks-venv"
  rm -rf "$TASKS_VENV"
  python3 -m venv "$TASKS_VENV" || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
  "$TASKS_VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
    -c "$FIX/tasks-venv/constraints.txt" "fastmcp-tasks==$TASKS_PY_VERSION"
  echo "$tasks_stamp" >"$TASKS_VENV/.stamp"
fi
"$TASKS_VENV/bin/python" -c 'import fastmcp_tasks' || die "fastmcp_tasks not importable in .interop/tasks-venv"
