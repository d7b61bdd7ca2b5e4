# os-placement: Kubewarden policy placing pods on Linux or Windows nodes.
#
#   make deps    toolchain pieces a fresh machine needs (idempotent)
#   make build   the policy module, target/wasm32-wasip1/release/os_placement_policy.wasm,
#                and the os-placement CLI, target/release/os-placement
#   make run     build, then evaluate every example (examples/cases.yaml) through the .wasm
#   make test    fmt, clippy, core unit tests, build, tests through the .wasm in wasmtime, CLI tests
#   make test-cli the CLI's tests, its verdicts compared with the .wasm's
#   make bench   module size, and corpus evaluation time through the .wasm vs the native core

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

CARGO ?= cargo
WASM_TARGET := wasm32-wasip1
WASM := target/$(WASM_TARGET)/release/os_placement_policy.wasm
CASES := examples/cases.yaml

# Hook for system packages later steps may need (Debian/Ubuntu names), e.g.
#   make deps APT_PACKAGES="binaryen"
APT_PACKAGES ?=

# Everything builds in the shared ./target: the host (wasmtime) is built once,
# in the dev/test profile, and `run` reuses what `test` built.
unexport CARGO_TARGET_DIR

.PHONY: deps build run test test-cli bench

deps:
	@command -v rustup >/dev/null || { echo "rustup not found: install it from https://rustup.rs" >&2; exit 1; }
	@if [ -n "$(strip $(APT_PACKAGES))" ]; then \
	  missing=""; \
	  for p in $(APT_PACKAGES); do dpkg -s "$$p" >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	  if [ -n "$$missing" ]; then \
	    sudo=""; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
	    $$sudo apt-get update && $$sudo apt-get install -y --no-install-recommends $$missing; \
	  fi; \
	fi
	rustup target add $(WASM_TARGET)
	rustup component add rustfmt clippy

build: deps
	$(CARGO) build -p os-placement-policy --target $(WASM_TARGET) --release
	@echo "$(WASM): $$(wc -c < $(WASM)) bytes"
	$(CARGO) build -p os-placement-cli --release
	@echo "CLI: target/release/os-placement"

run: build
	$(CARGO) run -p os-placement-e2e --bin os-placement-eval -- --wasm $(WASM) --cases $(CASES)

test: deps
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) clippy -p os-placement-policy --target $(WASM_TARGET) -- -D warnings
	$(CARGO) test -p os-placement-core
	$(CARGO) build -p os-placement-policy --target $(WASM_TARGET) --release
	@echo "$(WASM): $$(wc -c < $(WASM)) bytes"
	OS_PLACEMENT_WASM="$(CURDIR)/$(WASM)" $(CARGO) test -p os-placement-e2e
	$(MAKE) --no-print-directory test-cli

# The CLI in the dev profile (the host the e2e tests built is reused); the
# parity test runs the .wasm built above.
test-cli: deps
	$(CARGO) build -p os-placement-policy --target $(WASM_TARGET) --release
	OS_PLACEMENT_WASM="$(CURDIR)/$(WASM)" $(CARGO) test -p os-placement-cli

# Release host: native timings in a debug build mean nothing.
bench: build
	$(CARGO) run --release -p os-placement-e2e --bin os-placement-bench -- --wasm $(WASM)
