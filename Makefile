# os-placement: Kubewarden policy placing pods on Linux or Windows nodes.
#
#   make deps    toolchain pieces a fresh machine needs (idempotent)
#   make tools   pinned release tools: cargo-sbom, and a venv (target/venv) with sigstore's
#                trust root, spdx-tools, actionlint, and what `make image` builds with
#   make build   the policy module, target/wasm32-wasip1/release/os_placement_policy.opt.wasm,
#                and the os-placement CLI, target/release/os-placement
#   make policy.wasm   the shipped module at the root (the build above, copied)
#   make run     build, then evaluate every example (examples/cases.yaml) through the .wasm
#   make test    fmt, clippy, core unit tests, build, tests through the .wasm in wasmtime, CLI tests,
#                the release chores (xtask) against a real registry, kwctl and policy-server
#   make fmt / make lint   rustfmt; clippy on every crate and on the module's target
#   make e2e-tests   the end-to-end tests through the module (e2e)
#   make clean   remove build outputs
#   make test-cli the registry client's tests (registries on 127.0.0.1), then the CLI's,
#                its verdicts compared with the .wasm's
#   make bench   os-placement against the floor (bench/floor) and peer policies, warm and fresh
#                instance, size, compile time, memory, containers (table + target/bench/bench.json);
#                BENCH_ARGS="--baseline old.wasm --rounds 40" adds an earlier build as a column;
#                then the cluster-size axis: 10 / 1,000 / 10,000 nodes and 100 / 10,000 / 50,000
#                published images served by a host that answers (target/bench/scale.json);
#                SCALE_ARGS="--baseline old.wasm" adds an earlier build; then `make bench-sync`
#   make bench-sync   the facts syncer (the release CLI, leader and standby) against the fake API
#                at 10,000 Pods / 200 Nodes and 150,000 Pods / 5,000 Nodes: first publication,
#                API requests, peak memory, a change published, idle requests, a relist, beside
#                their targets (table + target/bench/sync.json); SYNC_ARGS="--sizes 10000/200/400/10"
#   make bench-server   the same policies served by the real policy-server, loaded with wrk; then
#                policy-server against the fake Kubernetes API serving 1,000 and 10,000 nodes
#   make annotated-policy.wasm   the module with metadata.yml and README.md embedded (kwctl annotate)
#   make push REGISTRY=host[:port]/path TAG=v0.1.0   push the annotated module as an OCI artifact
#   make keypair [KEY_DIR=dir]   cosign.key (encrypted with $$COSIGN_PASSWORD) and cosign.pub
#   make sign REF=host[:port]/path:tag KEY=cosign.key   sign the pushed artifact by its digest
#   make sbom    policy-sbom.spdx.json: SPDX 2.3 of what the module is built from (Cargo.lock)
#   make image   the os-placement CLI as a container image, no container engine needed: static
#                musl binaries for linux/amd64 and linux/arm64 (cargo-zigbuild and zig from the
#                venv), user 65532, no shell; an OCI image layout, target/os-placement-image
#   make push-image REGISTRY=host[:port]/path TAG=v0.1.0   push the image (an image index), as
#                `make push` pushes the module; prints the reference with its digest
#   make image-sbom   os-placement-sbom.spdx.json: SPDX 2.3 of what the CLI is built from
#   make reproducible   build the module again in another directory, compare (not in make test)
#   make artifacthub   regenerate artifacthub-pkg.yml from metadata.yml and questions-ui.yml
#   make test-release   annotated module, AdmissionReview host, real registry, kwctl/policy-server interop,
#                signing, SBOMs, workflows (actionlint), Artifact Hub packaging, the CLI's image
#                pushed and pulled back with skopeo
#   make test-context   context-aware placement: real registry, cluster fixtures, real policy-server
#   make test-faults    registries that hang, slow down, reset, fail or lie, and an unreachable
#                Kubernetes API, under load through the real policy-server, for imageFacts
#                registry and cluster (table printed and in target/faults/report.md)
#   make bench-lookup   per-request time with and without an image lookup
#   make fuzz-smoke  each fuzz target for FUZZ_SMOKE_RUNS executions (part of `make test`)
#   make fuzz        each fuzz target for FUZZ_RUNS executions, one after the other

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

CARGO ?= cargo
WASM_TARGET := wasm32-wasip1
# cargo's output, and the module as shipped and tested: cargo's output shrunk by
# wasm-opt (Debian binaryen), about 15% smaller (see README, Performance).
WASM_CARGO := target/$(WASM_TARGET)/release/os_placement_policy.wasm
WASM := target/$(WASM_TARGET)/release/os_placement_policy.opt.wasm
# The features rustc enables for wasm32-wasip1, so wasm-opt adds no others.
WASM_OPT := wasm-opt -Oz --zero-filled-memory \
  --enable-bulk-memory --enable-sign-ext --enable-nontrapping-float-to-int \
  --enable-mutable-globals --enable-reference-types --enable-multivalue
CASES := examples/cases.yaml

# Hook for system packages later steps may need (Debian/Ubuntu names), e.g.
#   make deps APT_PACKAGES="binaryen"
APT_PACKAGES ?=
# wasm-opt, which shrinks the policy module.
APT_PACKAGES += binaryen
# The release tests run a real OCI registry (CNCF distribution).
APT_PACKAGES += docker-registry
# The fuzz seeds are read from the YAML examples (fuzz/seeds.py).
APT_PACKAGES += python3-yaml
# The release tools' venv (make tools: sigstore's trust root, spdx-tools, actionlint).
APT_PACKAGES += python3-venv
# The image tests pull the CLI's image back with a client of its own.
APT_PACKAGES += skopeo
# The credential tests' registry checks users of an htpasswd file (htpasswd -B).
APT_PACKAGES += apache2-utils
# The Google service account key test makes its RSA key with openssl.
APT_PACKAGES += openssl

# Everything builds in the shared ./target: the host (wasmtime) is built once,
# in the dev/test profile, and `run` reuses what `test` built.
unexport CARGO_TARGET_DIR
# Every build from Cargo.lock as committed.
LOCKED := --locked
# Reproducible module: no build path in it. Target-specific, so host builds
# (the e2e host, the CLI) keep their fingerprints.
CARGO_HOME ?= $(HOME)/.cargo
export CARGO_TARGET_WASM32_WASIP1_RUSTFLAGS := --remap-path-prefix=$(CURDIR)=/os-placement --remap-path-prefix=$(CARGO_HOME)=/cargo

ANNOTATED := annotated-policy.wasm
# The release chores (xtask/, `cargo xtask` in .cargo/config.toml).
XTASK = $(CARGO) run $(LOCKED) -q -p xtask --
# kwctl and policy-server for the interop tests (skipped outside CI when absent).
KUBEWARDEN_BIN ?= $(abspath ../shared/kubewarden)
TAG ?= v$(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)

# Builds the policy module and shrinks it into $(WASM) when cargo's output is newer.
define build-wasm
$(CARGO) build $(LOCKED) -p os-placement-policy --target $(WASM_TARGET) --release
@if [ ! $(WASM) -nt $(WASM_CARGO) ]; then $(WASM_OPT) $(WASM_CARGO) -o $(WASM); fi
@echo "$(WASM): $$(wc -c < $(WASM)) bytes (cargo's output: $$(wc -c < $(WASM_CARGO)))"
endef

.PHONY: deps tools venv image image-sbom push-image build run test test-cli test-hosts bench bench-deps bench-server bench-sync test-release test-context test-faults bench-lookup push artifacthub $(ANNOTATED) policy.wasm fmt lint e2e-tests clean keypair sign sbom reproducible

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

# The CLI as the tests and benchmarks run it: the release profile without the
# whole-program LTO (one codegen unit) it has for the module's size, which took
# about 100 s of every CLI build on two cores against 13 s; the image has its own profile.
CLI_BUILD_ENV := CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16

build: deps
	$(build-wasm)
	$(CLI_BUILD_ENV) $(CARGO) build $(LOCKED) -p os-placement-cli --release
	@echo "CLI: target/release/os-placement"

# The shipped module, as the release attaches it and Kubewarden's tooling expects it.
policy.wasm: build
	cp $(WASM) $@

run: build
	$(CARGO) run $(LOCKED) -p os-placement-e2e --bin os-placement-eval -- --wasm $(WASM) --cases $(CASES)

fmt:
	$(CARGO) fmt --all

lint: deps
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy $(LOCKED) --workspace --all-targets -- -D warnings
	$(CARGO) clippy $(LOCKED) -p os-placement-policy --target $(WASM_TARGET) -- -D warnings

# The e2e test binary (e2e/tests/main.rs) runs in groups, by test name.
E2E_TEST = OS_PLACEMENT_WASM="$(CURDIR)/$(WASM)" KUBEWARDEN_BIN="$(KUBEWARDEN_BIN)" \
  $(CARGO) test $(LOCKED) -p os-placement-e2e

# Everything through the module: the wasm tests, context-aware placement,
# hostile inputs (one thread: it measures peak memory) and the release tests.
e2e-tests: build test-hosts
	$(E2E_TEST) --lib --bins
	$(E2E_TEST) --test main wasm::
	$(MAKE) --no-print-directory test-context
	$(MAKE) --no-print-directory test-faults
	$(E2E_TEST) --test main hostile:: -- --nocapture --test-threads=1
	$(E2E_TEST) --test main release::

test: deps lint
	$(CARGO) test $(LOCKED) -p os-placement-core
	$(CARGO) test $(LOCKED) -p os-placement-door
	$(MAKE) --no-print-directory e2e-tests
	$(MAKE) --no-print-directory fuzz-smoke
	$(MAKE) --no-print-directory test-release
	$(MAKE) --no-print-directory test-cli
	$(MAKE) --no-print-directory test-playground

clean:
	$(CARGO) clean
	rm -rf policy.wasm $(ANNOTATED) policy-sbom.spdx.json os-placement-sbom.spdx.json playground/dist fuzz/corpus fuzz/artifacts fuzz/logs

# The CLI in the dev profile (the host the e2e tests built is reused); the
# parity test runs the .wasm built above.
test-cli: deps test-hosts
	$(build-wasm)
	$(CARGO) test $(LOCKED) -p os-placement-registry
	OS_PLACEMENT_WASM="$(CURDIR)/$(WASM)" $(CARGO) test $(LOCKED) -p os-placement-cli

# The registry names the credential tests reach, on 127.0.0.1 through
# /etc/hosts (e2e/src/identity: CLOUD_HOSTS); the line is added once.
CLOUD_TEST_HOSTS := 123456789012.dkr.ecr.us-east-1.amazonaws.com 210987654321.dkr.ecr.eu-west-1.amazonaws.com europe-west4-docker.pkg.dev osplacement.azurecr.io registry.other.test

test-hosts:
	@line="127.0.0.1 $(CLOUD_TEST_HOSTS) # os-placement test hosts"; \
	if ! grep -qxF "$$line" /etc/hosts; then \
	  sudo=""; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
	  echo "$$line" | $$sudo tee -a /etc/hosts >/dev/null && echo "/etc/hosts: added $$line"; \
	fi

# Context-aware placement (e2e/tests/context): real registry, cluster fixtures, real policy-server.
test-context: deps
	$(build-wasm)
	$(E2E_TEST) --test main context::

# Fault injection (e2e/tests/faults): fault registries and a small Kubernetes API on
# 127.0.0.1, the real policy-server, the syncer (the CLI `make build` built; two replicas
# at 10,000 Pods, leader takeovers; ECR read with IRSA under its /etc/hosts name); about two and a half minutes.
test-faults: build test-hosts
	OS_PLACEMENT_CLI="$(CURDIR)/target/release/os-placement" $(E2E_TEST) --test main faults:: -- --nocapture --test-threads=1

# Per-request time with and without an image lookup (release host).
bench-lookup: build
	$(CARGO) run $(LOCKED) --release -p os-placement-bench --bin os-placement-lookup-bench -- --wasm $(WASM)

# The release chores (xtask/tests): real registry, kwctl and policy-server (push, pull,
# signatures, Artifact Hub), the SBOMs through spdx-tools, the workflows through actionlint,
# the CLI's image (built once, here) pushed and read back with skopeo.
test-release: build tools sbom image image-sbom
	$(CARGO) test $(LOCKED) -p xtask --lib --bins
	OS_PLACEMENT_WASM="$(CURDIR)/$(WASM)" KUBEWARDEN_BIN="$(KUBEWARDEN_BIN)" \
	  SIGSTORE_TRUST_CONFIG="$(CURDIR)/$(TRUST_CONFIG)" SBOM="$(CURDIR)/$(SBOM)" \
	  OS_PLACEMENT_IMAGE="$(CURDIR)/$(IMAGE_DIR)" IMAGE_SBOM="$(CURDIR)/$(IMAGE_SBOM)" \
	  VENV="$(CURDIR)/$(VENV)" $(CARGO) test $(LOCKED) -p xtask --test main

# The protocol version is asked from the module through waPC, as kwctl asks it.
$(ANNOTATED): build
	$(XTASK) annotate $(WASM) --metadata-path metadata.yml --usage-path README.md \
	  --protocol-version "$$($(CARGO) run $(LOCKED) -q -p os-placement-e2e --bin os-placement-eval -- --wasm $(WASM) --protocol-version)" \
	  --output-path $@

# Regenerates artifacthub-pkg.yml from metadata.yml and questions-ui.yml
# (a new version needs CREATED_AT=<RFC 3339 time>).
artifacthub:
	$(XTASK) artifacthub --metadata-path metadata.yml --questions-path questions-ui.yml \
	  --output-path artifacthub-pkg.yml $(if $(CREATED_AT),--created-at $(CREATED_AT))

# e.g. make push REGISTRY=ghcr.io/os-placement/policies/os-placement TAG=v0.1.0
# (INSECURE=1 for plain HTTP; 127.0.0.1 and localhost always use it).
push: $(ANNOTATED)
	@[ -n "$(REGISTRY)" ] || { echo "usage: make push REGISTRY=host[:port]/path [TAG=$(TAG)] [INSECURE=1]" >&2; exit 2; }
	$(XTASK) push $(ANNOTATED) registry://$(REGISTRY):$(TAG) $(if $(INSECURE),--insecure)

# cosign.key (ECDSA P-256, encrypted with $COSIGN_PASSWORD) and cosign.pub in KEY_DIR.
KEY_DIR ?= .
keypair:
	@[ -n "$${COSIGN_PASSWORD+set}" ] || { echo "make keypair: export COSIGN_PASSWORD (the private key's password) first" >&2; exit 2; }
	mkdir -p $(KEY_DIR)
	$(XTASK) keypair --output-dir $(KEY_DIR)

# e.g. make sign REF=ghcr.io/os-placement/policies/os-placement:v0.1.0 KEY=cosign.key
sign:
	@[ -n "$(REF)" ] && [ -n "$(KEY)" ] || { echo "usage: make sign REF=host[:port]/path:tag KEY=cosign.key [INSECURE=1]" >&2; exit 2; }
	$(XTASK) sign registry://$(REF:registry://%=%) --key $(KEY) $(if $(INSECURE),--insecure)

# --- Release tools, pinned --------------------------------------------------------
CARGO_SBOM_VERSION := 0.10.0
VENV := target/venv
TRUST_CONFIG := target/tools/sigstore-trust-config.json
SBOM := policy-sbom.spdx.json

tools: deps venv
	@if [ "$$(cargo sbom --version 2>/dev/null)" != "cargo-sbom $(CARGO_SBOM_VERSION)" ]; then \
	  $(CARGO) install cargo-sbom --locked --version "$(CARGO_SBOM_VERSION)"; \
	fi
	mkdir -p $(dir $(TRUST_CONFIG))
	$(VENV)/bin/python xtask/trust_config.py $(TRUST_CONFIG)

# The venv of the Python tools (xtask/requirements.txt, pinned).
venv: deps
	@[ -x $(VENV)/bin/pip ] || python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r xtask/requirements.txt

# SPDX 2.3 JSON of a package's crates (Cargo.lock, the package and what it
# uses), by cargo-sbom, made valid SPDX by `cargo xtask sbom`: $(1) the package, $(2) the file.
define spdx
mkdir -p target/tools
cargo sbom --cargo-package $(1) --output-format spdx_json_2_3 > target/tools/$(1).cargo-sbom.spdx.json
$(XTASK) sbom target/tools/$(1).cargo-sbom.spdx.json --output-path $(2)
endef

sbom: tools
	$(call spdx,os-placement-policy,$(SBOM))

# --- The CLI's container image --------------------------------------------------------
# Static musl binaries for both platforms, cross-built by cargo-zigbuild with zig
# (PyPI's ziglang, in the venv) as linker and as the C compiler ring needs; certifi's
# CA bundle (Mozilla's roots, pinned) is what the CLI trusts for registries. The
# `image` profile (Cargo.toml) trades speed of the binary for build time.
IMAGE_TARGETS := x86_64-unknown-linux-musl aarch64-unknown-linux-musl
# No build path in the image's binaries either.
export CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_RUSTFLAGS := $(CARGO_TARGET_WASM32_WASIP1_RUSTFLAGS)
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_RUSTFLAGS := $(CARGO_TARGET_WASM32_WASIP1_RUSTFLAGS)
# Not target/image: cargo's `image` profile builds there.
IMAGE_DIR := target/os-placement-image
IMAGE_SBOM := os-placement-sbom.spdx.json
# The files' time is the commit's, so a commit always gives the same digests.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
# The commit, when the tree is that commit.
IMAGE_REVISION ?= $(shell git diff --quiet HEAD 2>/dev/null && git rev-parse HEAD)

image: deps venv
	rustup target add $(IMAGE_TARGETS)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(CARGO) zigbuild $(LOCKED) -p os-placement-cli \
	  --profile image $(addprefix --target ,$(IMAGE_TARGETS))
	$(XTASK) image --metadata-path metadata.yml \
	  --binary linux/amd64=target/x86_64-unknown-linux-musl/image/os-placement \
	  --binary linux/arm64=target/aarch64-unknown-linux-musl/image/os-placement \
	  --ca-bundle "$$($(VENV)/bin/python -m certifi)" --source-date-epoch $(SOURCE_DATE_EPOCH) \
	  --output-dir $(IMAGE_DIR) $(if $(IMAGE_REVISION),--revision $(IMAGE_REVISION))

# e.g. make push-image REGISTRY=ghcr.io/os-placement/os-placement TAG=v0.1.0
push-image: image
	@[ -n "$(REGISTRY)" ] || { echo "usage: make push-image REGISTRY=host[:port]/path [TAG=$(TAG)] [INSECURE=1]" >&2; exit 2; }
	$(XTASK) push-image $(IMAGE_DIR) registry://$(REGISTRY):$(TAG) $(if $(INSECURE),--insecure)

image-sbom: tools
	$(call spdx,os-placement-cli,$(IMAGE_SBOM))

# Two builds of this commit in different directories give the same policy.wasm. A full
# second build of the module (a few minutes): its own target, not part of `make test`.
REPRO_DIR ?= $(CURDIR)/target/reproducible
reproducible: build
	rm -rf $(REPRO_DIR) && mkdir -p $(REPRO_DIR)
	git archive --format=tar HEAD | tar -x -C $(REPRO_DIR)
	$(MAKE) -C $(REPRO_DIR) --no-print-directory build-wasm-only
	cmp $(WASM) $(REPRO_DIR)/$(WASM) && echo "reproducible: $$(sha256sum < $(WASM))"

# The module alone (what `reproducible` builds in the copy).
.PHONY: build-wasm-only
build-wasm-only:
	$(build-wasm)

# --- Benchmarks (not part of `make test`) ------------------------------------------
# The floor: a minimal guest on the same SDK, built with the same release profile.
# Shrunk by the same wasm-opt as the policy, so both go through the same pipeline.
FLOOR_CARGO := target/$(WASM_TARGET)/release/os_placement_bench_floor.wasm
FLOOR_WASM := target/$(WASM_TARGET)/release/os_placement_bench_floor.opt.wasm
define build-floor
$(CARGO) build $(LOCKED) -p os-placement-bench-floor --target $(WASM_TARGET) --release
@if [ ! $(FLOOR_WASM) -nt $(FLOOR_CARGO) ]; then $(WASM_OPT) $(FLOOR_CARGO) -o $(FLOOR_WASM); fi
endef
BENCH_APT_PACKAGES := wrk

bench-deps: deps
	@$(MAKE) --no-print-directory deps APT_PACKAGES="$(BENCH_APT_PACKAGES)"

# The EKS-like clusters of the cluster-size axis (nodes.py, images.py).
SCALE_TOOLS ?= $(abspath ../shared/tools/scale)

# Release host: timings of a debug wasmtime mean nothing.
bench: build bench-deps
	$(build-floor)
	$(CARGO) build $(LOCKED) --release -p os-placement-bench --bin os-placement-bench --bin os-placement-scale-bench
	target/release/os-placement-bench --wasm $(WASM) --floor $(FLOOR_WASM) $(BENCH_ARGS)
	target/release/os-placement-scale-bench --wasm $(WASM) --scale-tools $(SCALE_TOOLS) $(SCALE_ARGS)
	$(MAKE) --no-print-directory bench-sync

# The facts syncer across cluster sizes: two replicas of the release CLI against the fault
# suite's fake API (in process), every image on a registry that refuses connections; the
# Nodes from nodes.py. About six minutes and 1.5 GB of memory for the two default sizes.
bench-sync: build
	$(CARGO) build $(LOCKED) --release -p os-placement-bench --bin os-placement-sync-bench
	target/release/os-placement-sync-bench --cli target/release/os-placement --scale-tools $(SCALE_TOOLS) $(SYNC_ARGS)

# Throughput and latency through the real policy-server (KUBEWARDEN_BIN) on the fake
# API (an empty cluster, so os-placement's calls are answered), with wrk;
# then at 1,000 and 10,000 nodes, the cluster served by the fault suite's fake API.
bench-server: build bench-deps
	$(build-floor)
	$(CARGO) build $(LOCKED) --release -p os-placement-bench --bin os-placement-bench --bin os-placement-scale-bench --bin os-placement-fake-api
	KUBEWARDEN_BIN="$(KUBEWARDEN_BIN)" WASM="$(CURDIR)/$(WASM)" FLOOR="$(CURDIR)/$(FLOOR_WASM)" bench/server.sh
	target/release/os-placement-scale-bench --wasm $(WASM) --scale-tools $(SCALE_TOOLS) \
	  --server $(KUBEWARDEN_BIN) --sizes 1000/10000,10000/50000 $(SCALE_ARGS)

# --- Playground: the rule core in the browser (playground/) ------------------------
#   make playground        build playground/dist and serve it on 127.0.0.1 (prints the address)
#   make playground-dist   the self-contained static folder playground/dist/
#   make test-playground   parity with the policy .wasm, then browser tests in headless
#                          Debian chromium (part of `make test`)
PLAYGROUND_TARGET := wasm32-unknown-unknown
PLAYGROUND_WASM := target/$(PLAYGROUND_TARGET)/release/os_placement_playground.wasm
PLAYGROUND_DIST := playground/dist
PLAYGROUND_PORT ?= 8390
# The page's module, gzipped, stays under this (README: 250 KB).
PLAYGROUND_GZ_BUDGET := 250000
# The CLI must match the wasm-bindgen crate in Cargo.lock exactly.
WASM_BINDGEN_VERSION := $(shell awk '/^name = "wasm-bindgen"$$/{getline; gsub(/[^0-9.]/, ""); print; exit}' Cargo.lock)
# Which source the page's engine is built from: share links carry it.
PLAYGROUND_SOURCE := $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)

.PHONY: playground-deps playground-dist playground test-playground

playground-deps: deps
	rustup target add $(PLAYGROUND_TARGET)
	@if [ "$$(wasm-bindgen --version 2>/dev/null)" != "wasm-bindgen $(WASM_BINDGEN_VERSION)" ]; then \
	  echo "installing wasm-bindgen-cli $(WASM_BINDGEN_VERSION)"; \
	  $(CARGO) install wasm-bindgen-cli --version "=$(WASM_BINDGEN_VERSION)"; \
	fi
	@command -v node >/dev/null && command -v npm >/dev/null || { \
	  sudo=""; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
	  $$sudo apt-get update && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y --no-install-recommends nodejs npm; }

# Built for size (opt-level z: about 15% smaller gzipped than the release
# profile's "s"; an evaluation still takes a few milliseconds). examples.json
# holds the examples and presets the page reads in one request; bundle.mjs
# puts the first example, the page's start (bundled by esbuild, from
# playground/package-lock.json) and its style into index.html.
playground-dist: playground-deps
	OS_PLACEMENT_GIT_DESCRIBE="$(PLAYGROUND_SOURCE)" CARGO_PROFILE_RELEASE_OPT_LEVEL=z \
	  $(CARGO) build $(LOCKED) -p os-placement-playground --target $(PLAYGROUND_TARGET) --release
	rm -rf $(PLAYGROUND_DIST)
	wasm-bindgen --target web --no-typescript --out-dir $(PLAYGROUND_DIST)/pkg $(PLAYGROUND_WASM)
	cp playground/web/index.html playground/web/style.css playground/web/*.js $(PLAYGROUND_DIST)/
	cd playground && npm ci --no-audit --no-fund
	node playground/tools/bundle.mjs $(CURDIR) $(PLAYGROUND_DIST)
	@wasm=$(PLAYGROUND_DIST)/pkg/os_placement_playground_bg.wasm; gz=$$(gzip -9c $$wasm | wc -c); \
	  echo "$$wasm: $$(wc -c < $$wasm) bytes, $$gz bytes gzipped (budget $(PLAYGROUND_GZ_BUDGET))"; \
	  [ "$$gz" -le $(PLAYGROUND_GZ_BUDGET) ] || { echo "the playground module is over its gzip budget" >&2; exit 1; }

playground: playground-dist
	node playground/tests/serve.mjs $(PLAYGROUND_DIST) $(PLAYGROUND_PORT)

# The parity tests run the policy .wasm (and a real registry for the cases with facts).
test-playground: playground-dist
	$(build-wasm)
	OS_PLACEMENT_WASM="$(CURDIR)/$(WASM)" $(CARGO) test $(LOCKED) -p os-placement-playground
	@command -v chromium >/dev/null || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium; }
	node --test-concurrency=1 playground/tests/browser.test.mjs

# --- Fuzzing (fuzz/, its own workspace, built by cargo-fuzz with libFuzzer) ----------
# Targets run one after the other (one process). Logs and final stats (executions,
# coverage) go to fuzz/logs/<target>.log, crashes to fuzz/artifacts/<target>/.
# The property tests (core/tests/properties.rs) take PROPTEST_CASES, e.g.
#   PROPTEST_CASES=200000 cargo test -p os-placement-core --test properties
CARGO_FUZZ_VERSION := 0.13.1
FUZZ_TOOLCHAIN ?= nightly
FUZZ_TARGETS := validate_payload evaluate_structured settings_payload image_reference windows_images_glob published_answer
FUZZ_SMOKE_RUNS ?= 20000
FUZZ_RUNS ?= 10000000

.PHONY: fuzz-deps fuzz-seeds fuzz-smoke fuzz

fuzz-deps: deps
	rustup toolchain list | grep -q '^$(FUZZ_TOOLCHAIN)' || rustup toolchain install $(FUZZ_TOOLCHAIN) --profile minimal
	@if [ "$$(cargo fuzz --version 2>/dev/null)" != "cargo-fuzz $(CARGO_FUZZ_VERSION)" ]; then \
	  $(CARGO) install cargo-fuzz --locked --version "$(CARGO_FUZZ_VERSION)"; \
	fi

# Seeds from examples/ and the outside corpus (copied into fuzz/corpus, not committed).
fuzz-seeds:
	python3 fuzz/seeds.py "$(abspath $(or $(OS_PLACEMENT_CORPUS),../shared/corpus))"

fuzz-smoke: fuzz-deps fuzz-seeds
	FUZZ_TOOLCHAIN=$(FUZZ_TOOLCHAIN) fuzz/run.sh $(FUZZ_SMOKE_RUNS) $(FUZZ_TARGETS)

fuzz: fuzz-deps fuzz-seeds
	FUZZ_TOOLCHAIN=$(FUZZ_TOOLCHAIN) fuzz/run.sh $(FUZZ_RUNS) $(FUZZ_TARGETS)

# Mutation testing of the rule modules: hours, outside CI (see README, Development).
MUTANTS_VERSION := 27.1.0
MUTANTS_FILES := resolve place constraint affinity toleration image build windows_rules settings

.PHONY: mutants
mutants:
	@[ "$$(cargo mutants --version 2>/dev/null)" = "cargo-mutants $(MUTANTS_VERSION)" ] || \
	  $(CARGO) install cargo-mutants --locked --version "$(MUTANTS_VERSION)"
	$(CARGO) mutants --package os-placement-core --timeout 120 --output target/mutants \
	  $(foreach m,$(MUTANTS_FILES),-f core/src/$(m).rs)
