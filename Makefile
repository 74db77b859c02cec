# QUIC-NC — see README.md.
#   make demo    baseline experiment: HTTP/3 downloads over an emulated lossy link
#   make test    everything CI runs (workspace tests + quiche's own suite on the patched tree)
#   make bench   benchmarks (print ratios against a baseline measured in the same run)

CARGO ?= cargo
QUICHE_DIR := .quiche/quiche-0.30.0
export CARGO_TERM_COLOR ?= never

.PHONY: all quiche build release demo test test-workspace test-quiche bench fmt clippy clean-quiche

all: build

# Extract the pinned quiche crate and apply patches/quiche/*.patch (cached).
quiche:
	@bash patches/quiche/apply.sh

build: quiche
	$(CARGO) build --workspace

release: quiche
	$(CARGO) build --release --workspace --bins

demo: release
	./target/release/nc-experiment $(DEMO_ARGS)

test: test-workspace test-quiche

test-workspace: quiche
	$(CARGO) test --workspace

# quiche's own library tests, on the patched tree, with quiche's own lock file.
test-quiche: quiche
	cd $(QUICHE_DIR) && CARGO_TARGET_DIR=$(CURDIR)/target/quiche $(CARGO) test --features qlog --lib

bench: release
	$(CARGO) bench -p nc-frames
	./target/release/nc-experiment --markdown $(BENCH_ARGS)

fmt:
	$(CARGO) fmt --all

clippy: quiche
	$(CARGO) clippy --workspace --all-targets

clean-quiche:
	rm -rf .quiche
