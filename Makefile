# os-placement: Kubewarden policy placing pods on Linux or Windows nodes.
#
#   make deps    toolchain pieces a fresh machine needs (idempotent)
#   make build   the policy module, target/wasm32-wasip1/release/os_placement_policy.wasm
#   make run     build, then evaluate every example (examples/cases.yaml) through the .wasm
#   make test    fmt, clippy, core unit tests, build, tests through the .wasm in wasmtime
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

.PHONY: deps build run test bench

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

# Release host: native timings in a debug build mean nothing.
bench: build
	$(CARGO) run --release -p os-placement-e2e --bin os-placement-bench -- --wasm $(WASM)

# --- Playground: the rule core in the browser (playground/) ------------------------
#   make playground        build playground/dist and serve it on 127.0.0.1 (prints the address)
#   make playground-dist   the self-contained static folder playground/dist/
#   make test-playground   browser tests in headless Debian chromium (part of `make test`)
PLAYGROUND_TARGET := wasm32-unknown-unknown
PLAYGROUND_WASM := target/$(PLAYGROUND_TARGET)/release/os_placement_playground.wasm
PLAYGROUND_DIST := playground/dist
PLAYGROUND_PORT ?= 8390
# The CLI must match the wasm-bindgen crate in Cargo.lock exactly.
WASM_BINDGEN_VERSION := $(shell awk '/^name = "wasm-bindgen"$$/{getline; gsub(/[^0-9.]/, ""); print; exit}' Cargo.lock)

.PHONY: playground-deps playground-dist playground test-playground

playground-deps: deps
	rustup target add $(PLAYGROUND_TARGET)
	@if [ "$$(wasm-bindgen --version 2>/dev/null)" != "wasm-bindgen $(WASM_BINDGEN_VERSION)" ]; then \
	  echo "installing wasm-bindgen-cli $(WASM_BINDGEN_VERSION)"; \
	  $(CARGO) install wasm-bindgen-cli --version "=$(WASM_BINDGEN_VERSION)"; \
	fi

playground-dist: playground-deps
	$(CARGO) build -p os-placement-playground --target $(PLAYGROUND_TARGET) --release
	rm -rf $(PLAYGROUND_DIST)
	wasm-bindgen --target web --no-typescript --out-dir $(PLAYGROUND_DIST)/pkg $(PLAYGROUND_WASM)
	cp playground/web/index.html playground/web/style.css playground/web/app.js playground/web/presets.yaml $(PLAYGROUND_DIST)/
	mkdir -p $(PLAYGROUND_DIST)/examples
	cp -r examples/cases.yaml examples/manifests examples/settings $(PLAYGROUND_DIST)/examples/
	@wasm=$(PLAYGROUND_DIST)/pkg/os_placement_playground_bg.wasm; \
	  echo "$$wasm: $$(wc -c < $$wasm) bytes, $$(gzip -9c $$wasm | wc -c) bytes gzipped"

playground: playground-dist
	node playground/tests/serve.mjs $(PLAYGROUND_DIST) $(PLAYGROUND_PORT)

test-playground: playground-dist
	$(CARGO) build -p os-placement-policy --target $(WASM_TARGET) --release
	OS_PLACEMENT_WASM="$(CURDIR)/$(WASM)" $(CARGO) test -p os-placement-playground
	@command -v chromium >/dev/null || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium; }
	cd playground && npm ci --no-audit --no-fund
	node --test-concurrency=1 playground/tests/browser.test.mjs

# The browser tests are part of `make test`.
test: test-playground
