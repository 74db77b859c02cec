# QUIC-NC — see README.md.
#   make demo    baseline experiment: HTTP/3 downloads over an emulated lossy link
#   make test    everything CI runs (workspace tests + quiche's own suite on the patched tree)
#   make bench   benchmarks (print ratios against a baseline measured in the same run)
#   make peers   foreign QUIC peers for nc-experiment --compete (quic-go; needs Go)

CARGO ?= cargo
QUICHE_DIR := .quiche/quiche-0.30.0
export CARGO_TERM_COLOR ?= never

.PHONY: all quiche build release peers demo test test-workspace test-quiche bench bench-coding bench-cc fuzz fmt clippy clean-quiche

all: build

# Extract the pinned quiche crate and apply patches/quiche/*.patch (cached).
quiche:
	@bash patches/quiche/apply.sh

build: quiche
	$(CARGO) build --workspace

release: quiche
	$(CARGO) build --release --workspace --bins

# quic-go peer for `nc-experiment --compete X,quic-go:cubic`, next to the
# release binaries' directory: <target>/peers/quic-go-peer. The quinn peer
# (quinn's BBR, a separate cargo project) goes beside it: <target>/peers/quinn-peer.
PEERS_DIR ?= $(abspath $(or $(CARGO_TARGET_DIR),target))/peers
peers:
	cd interop/peers/quic-go && go build -o $(PEERS_DIR)/quic-go-peer .
	cd interop/peers/quinn && CARGO_TARGET_DIR=$(abspath $(or $(CARGO_TARGET_DIR),target))/peers-build \
		$(CARGO) build --release --locked
	mkdir -p $(PEERS_DIR) && cp $(abspath $(or $(CARGO_TARGET_DIR),target))/peers-build/release/quinn-peer $(PEERS_DIR)/quinn-peer

demo: release
	./target/release/nc-experiment $(DEMO_ARGS)

test: test-workspace test-quiche

test-workspace: quiche
	$(CARGO) test --workspace

# quiche's own library tests, on the patched tree, with quiche's own lock file.
test-quiche: quiche
	cd $(QUICHE_DIR) && CARGO_TARGET_DIR=$(CURDIR)/target/quiche $(CARGO) test --features qlog --lib

bench: bench-coding bench-cc

# GF(2^8) kernels, repair symbols and decoding (ratios to the scalar kernel
# and to external crates), then the redundancy policies at 10^5 symbols.
bench-coding: quiche
	$(CARGO) bench -p nc-frames
	$(CARGO) test --release -p nc-frames --test channel -- --include-ignored
	$(CARGO) run --release -p nc-frames --example sim_table 100000

# Controllers on the emulated link (plain QUIC, no coding), ratios to CUBIC.
bench-cc: release
	./target/release/nc-experiment --cc cubic,hybrid,ctcp,vegas,bbr2 \
		--loss 0,0.01,0.05,0.1 --markdown $(BENCH_ARGS)
	$(CARGO) run --release -p congestion --example simtable

# Short fuzzing runs of every nc-frames target (nightly + cargo-fuzz).
FUZZ_SECS ?= 60
fuzz:
	command -v cargo-fuzz >/dev/null || $(CARGO) install cargo-fuzz
	cd nc-frames/fuzz && for t in $$($(CARGO) +nightly fuzz list); do \
		$(CARGO) +nightly fuzz run $$t -- -max_total_time=$(FUZZ_SECS) || exit 1; done

fmt:
	$(CARGO) fmt --all

clippy: quiche
	$(CARGO) clippy --workspace --all-targets

clean-quiche:
	rm -rf .quiche
