"""A stdio MCP server for the daemon tests: its tool `kick` makes it ask
the client six requests (ping, roots/list, sampling, a form, a URL, an
unknown method), either while the call is in flight (`--during`, before
it answers) or after it has answered (`--after`: a request tied to no
call). It appends the answers, one JSON array a line (each `result` or
`error`, in order), to the file named by its second argument.

usage: idle_asker.py --during|--after RECORD
"""

import json
import sys
import time

MODE, RECORD = sys.argv[1], sys.argv[2]
ASKS = [
    ("ping", None),
    ("roots/list", None),
    ("sampling/createMessage",
     {"messages": [{"role": "user",
                    "content": {"type": "text", "text": "hi"}}],
      "maxTokens": 8}),
    ("elicitation/create",
     {"message": "Pick a colour.",
      "requestedSchema": {"type": "object",
                          "properties": {"c": {"type": "string"}}}}),
    ("elicitation/create",
     {"mode": "url", "message": "Open this.", "elicitationId": "e1",
      "url": "https://example.com/consent"}),
    ("fixture/unknown", {}),
]
queued = []


def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()


def read():
    if queued:
        return queued.pop(0)
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)
    return json.loads(line)


def ask_all():
    ids = []
    for i, (method, params) in enumerate(ASKS):
        m = {"jsonrpc": "2.0", "id": "q%d" % i, "method": method}
        if params is not None:
            m["params"] = params
        send(m)
        ids.append(m["id"])
    got = {}
    later = []
    while len(got) < len(ids):
        line = sys.stdin.readline()
        if not line:
            break
        m = json.loads(line)
        if "method" not in m and m.get("id") in ids:
            got[m["id"]] = {k: m[k] for k in ("result", "error") if k in m}
        else:
            later.append(m)
    queued.extend(later)
    with open(RECORD, "a") as f:
        f.write(json.dumps([got.get(i) for i in ids]) + "\n")


def answer(m):
    method, id_ = m.get("method"), m.get("id")
    if id_ is None:
        return
    if method == "initialize":
        asked = m.get("params", {}).get("protocolVersion", "")
        version = asked if asked.startswith("2025") else "2025-06-18"
        result = {"protocolVersion": version, "capabilities": {"tools": {}},
                  "serverInfo": {"name": "idle-asker", "version": "1"}}
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = {"tools": [{"name": "kick", "description": "Asks",
                             "inputSchema": {"type": "object"}}]}
    elif method == "tools/call":
        if MODE == "--during":
            ask_all()
        send({"jsonrpc": "2.0", "id": id_,
              "result": {"content": [{"type": "text", "text": "kicked"}]}})
        if MODE == "--after":
            time.sleep(0.3)
            ask_all()
        return
    else:
        send({"jsonrpc": "2.0", "id": id_,
              "error": {"code": -32601, "message": "no method"}})
        return
    send({"jsonrpc": "2.0", "id": id_, "result": result})


while True:
    answer(read())
