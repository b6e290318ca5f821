# rivumi-mcp: every target is a thin wrapper; .ci/run calls `make test`.
#
#   make demo    build, then list and call the bundled demo server
#   make test    formatting, lints, docs, interop servers, every test
#   make bench   our overhead against the fixture server, and memory

CARGO ?= cargo
RELEASE := target/release

.PHONY: build test lint fmt clippy doc unit interop-setup conformance demo bench install clean

build:
	$(CARGO) build --release --bins

lint: fmt clippy doc

fmt:
	$(CARGO) fmt --all -- --check

clippy:
	$(CARGO) clippy --all-targets -- -D warnings

doc:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --no-deps --document-private-items --bins

interop-setup:
	bash scripts/interop-setup.sh

unit:
	$(CARGO) test

test: lint interop-setup unit conformance

# The official MCP conformance suite (pinned, node 22 from npm), each
# scenario alone in a loopback-only network namespace.
conformance: build
	bash scripts/conformance.sh required


demo: build
	@echo '$$ rivumi-mcp check-config -c fixtures/demo.mcp.json'
	@PATH="$(CURDIR)/$(RELEASE):$$PATH" RIVUMI_MCP_ALLOWLIST=demo \
		$(RELEASE)/rivumi-mcp check-config -c fixtures/demo.mcp.json
	@echo
	@echo '$$ RIVUMI_MCP_ALLOWLIST=demo rivumi-mcp -c fixtures/demo.mcp.json list'
	@PATH="$(CURDIR)/$(RELEASE):$$PATH" RIVUMI_MCP_ALLOWLIST=demo \
		$(RELEASE)/rivumi-mcp -c fixtures/demo.mcp.json list
	@echo
	@echo '$$ RIVUMI_MCP_ALLOWLIST=demo rivumi-mcp -c fixtures/demo.mcp.json call mcp__demo__add a=2 b=40 --yes'
	@PATH="$(CURDIR)/$(RELEASE):$$PATH" RIVUMI_MCP_ALLOWLIST=demo \
		$(RELEASE)/rivumi-mcp -c fixtures/demo.mcp.json call mcp__demo__add a=2 b=40 --yes

bench: build
	bash scripts/bench.sh

install:
	$(CARGO) install --locked --path . --bin rivumi-mcp

clean:
	$(CARGO) clean
