# rivumi-mcp: every target is a thin wrapper; .ci/run calls `make test`.
#
#   make demo    build, then list and call the bundled demo server
#   make test    formatting, lints, docs, interop servers, every test
#   make bench   our overhead against the fixture server, and memory
#   make fuzz    every fuzz target for FUZZ_SECONDS (20) each, if cargo-fuzz
#   make install the binary, the man page and the completions under PREFIX
#   make man     regenerate rivumi-mcp.1 from the option and command tables

CARGO ?= cargo
RELEASE := target/release

.PHONY: build test lint fmt clippy doc unit ci-setup interop-setup conformance conformance-2026 demo bench man install uninstall clean fuzz

build:
	$(CARGO) build --release --bins

lint: fmt clippy doc

fmt:
	$(CARGO) fmt --all -- --check

clippy:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

doc:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps --document-private-items
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc -p rivumi-mcp-proto --no-deps

interop-setup:
	bash scripts/interop-setup.sh

# zsh, fish, groff and man for tests/completions.rs (Debian's pinned versions).
ci-setup:
	bash scripts/ci-setup.sh

unit:
	$(CARGO) test --workspace

test: lint ci-setup interop-setup unit conformance

# The official MCP conformance suites (pinned, node 22 from npm), each
# scenario alone in a loopback-only network namespace: 0.1.16's required
# set; 0.2.0-alpha.12's 2026-07-28 client requirements on the 2026-07-28
# wire; and its 2025-era scenarios on their own wire (the `passing` list:
# every one but those the client does not implement).
CONFORMANCE_2026 := --suite 0.2.0-alpha.12

conformance: build
	bash scripts/conformance.sh required
	bash scripts/conformance.sh $(CONFORMANCE_2026) --wire 2026-07-28 required
	bash scripts/conformance.sh $(CONFORMANCE_2026) passing

# Both 0.2.0-alpha.12 requirement tables in full, whatever fails: the
# 2026-07-28 requirements on the 2026-07-28 wire, then the 2025-11-25
# requirements on their own wire.
conformance-2026: build
	status=0; \
	bash scripts/conformance.sh $(CONFORMANCE_2026) --wire 2026-07-28 required || status=1; \
	bash scripts/conformance.sh $(CONFORMANCE_2026) required || status=1; \
	exit $$status


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

# Not part of `test`: needs cargo-fuzz (skipped with a message without it).
FUZZ_SECONDS ?= 20
fuzz:
	FUZZ_SECONDS=$(FUZZ_SECONDS) bash fuzz/run.sh

# The page is generated from the help texts the binary prints; a test
# fails when the checked-in one differs from what `rivumi-mcp __man` prints.
man:
	$(CARGO) run --quiet --bin rivumi-mcp -- __man > rivumi-mcp.1

# `make install PREFIX=/usr DESTDIR=pkg` for a package; BIN names a binary
# already built (then nothing is built). `make uninstall` removes exactly
# the files `make install` writes.
PREFIX ?= /usr/local
BIN ?= $(RELEASE)/rivumi-mcp
INSTALL ?= install
BINDIR := $(DESTDIR)$(PREFIX)/bin
MANDIR := $(DESTDIR)$(PREFIX)/share/man/man1
BASHDIR := $(DESTDIR)$(PREFIX)/share/bash-completion/completions
ZSHDIR := $(DESTDIR)$(PREFIX)/share/zsh/site-functions
FISHDIR := $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
INSTALLED := $(BINDIR)/rivumi-mcp $(MANDIR)/rivumi-mcp.1 \
	$(BASHDIR)/rivumi-mcp $(ZSHDIR)/_rivumi-mcp $(FISHDIR)/rivumi-mcp.fish

install: $(if $(filter $(RELEASE)/rivumi-mcp,$(BIN)),build)
	$(INSTALL) -d $(BINDIR) $(MANDIR) $(BASHDIR) $(ZSHDIR) $(FISHDIR)
	$(INSTALL) -m 755 $(BIN) $(BINDIR)/rivumi-mcp
	$(INSTALL) -m 644 rivumi-mcp.1 $(MANDIR)/rivumi-mcp.1
	$(BIN) completions bash > $(BASHDIR)/rivumi-mcp
	$(BIN) completions zsh > $(ZSHDIR)/_rivumi-mcp
	$(BIN) completions fish > $(FISHDIR)/rivumi-mcp.fish
	chmod 644 $(BASHDIR)/rivumi-mcp $(ZSHDIR)/_rivumi-mcp $(FISHDIR)/rivumi-mcp.fish

uninstall:
	rm -f $(INSTALLED)

clean:
	$(CARGO) clean
