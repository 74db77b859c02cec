# QUIC-NC — see README.md.
#   make demo    coded QUIC beside quiche's controllers over an emulated lossy link
#   make bench-e2e  end-to-end benchmark tables + target check (results/)
#   make bench-cellular  coded QUIC on replayed LTE traces: tables, target check, SVG plots (results/)
#   make bench-fairness  hybrid next to four CUBICs, shallow buffers, RTT mix, coded flows sharing: per-run ratios, target check (results/)
#   make test    everything CI runs (workspace tests, quiche's own suite on the patched tree, short fuzz runs, the SDK from Python/C/Kotlin)
#   make test-sdk  the SDK alone: bindings into target/sdk/, tests from Python, C (valgrind) and Kotlin (Maven)
#   make bench   benchmarks (print ratios against a baseline measured in the same run)
#   make peers   foreign QUIC peers for nc-experiment --compete (quic-go; needs Go)
#   make interop the interop runner's test cases against third-party QUIC stacks (results/interop-*)
#   make report  every scenario in scenarios/ (full variant) and the HTML reports (results/report)

CARGO ?= cargo
QUICHE_DIR := .quiche/quiche-0.30.0
export CARGO_TERM_COLOR ?= never

.PHONY: all quiche build release peers interop demo report test test-sdk test-workspace test-quiche test-fuzz bench bench-coding bench-cc bench-e2e bench-cellular bench-fairness fuzz fmt clippy clean-quiche

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

# nc-experiment and the binaries it starts (release builds).
EXPERIMENT = $(abspath $(or $(CARGO_TARGET_DIR),target))/release/nc-experiment
EXPERIMENT_BINS = $(CARGO) build --release -p interop -p quic-nc-examples --bins

# The product on a lossy link: coded QUIC (coded+hybrid) beside quiche's own
# controllers without coding (cubic, bbr2, reno) and our controller without
# coding; 5 MB downloads, 20 Mbit/s, 40 ms RTT, BDP buffer, 0/5/10 % loss both
# ways, 3 interleaved runs per cell (each capped at 10 s), medians (min-max),
# ratios to coded+hybrid, and the in-order delivery delay of the download
# (GET /stamped/N). About 4 minutes. More: DEMO_ARGS="--runs 5 --per-run".
# --stamped is added unless DEMO_ARGS has it or runs something it does not
# apply to (a subcommand such as bench-e2e, --stream, --compete, --direct).
DEMO_STAMPED = $(if $(filter-out -%,$(firstword $(DEMO_ARGS)))$(filter --stream% --compete% --direct% --stamped,$(DEMO_ARGS)),,--stamped)
demo: quiche
	$(EXPERIMENT_BINS)
	$(EXPERIMENT) $(DEMO_STAMPED) $(DEMO_ARGS)

# The interop matrix: every implementation (ours with coding on and off,
# ngtcp2, aioquic, quic-go, quinn, curl) as client and server on every
# quic-interop-runner test case we run, over linkem shaped like the runner's
# simulator. Installs the peers first (interop/peers/setup-third-party.sh).
# Writes results/interop-<time>/{results.json,matrix.md,index.html}; see
# docs/interop.md. Subsets: INTEROP_ARGS="--clients quic-nc --cases handshake,retry".
interop: quiche
	$(EXPERIMENT_BINS)
	bash interop/peers/setup-third-party.sh
	$(abspath $(or $(CARGO_TARGET_DIR),target))/release/nc-interop $(INTEROP_ARGS)

# Every scenario in scenarios/ in its full variant (docs/experiments.md):
# results/scenario-<name>-full/{results.json,qlog/}, then the HTML reports
# and PNG plots in results/report/ (index.html). Each scenario is bounded
# by its own max_duration; all of them take several hours. Subsets:
#   make report SCENARIOS="scenarios/tcpnc-fig6.toml" VARIANT=quick
SCENARIOS ?= $(wildcard scenarios/*.toml)
VARIANT ?= full
REPORT = $(abspath $(or $(CARGO_TARGET_DIR),target))/release/qlog-report
report: quiche
	$(EXPERIMENT_BINS) -p qlog-analysis
	@n=0; total=$(words $(SCENARIOS)); for f in $(SCENARIOS); do n=$$((n+1)); \
		echo "== [$$n/$$total] $$f ($(VARIANT))"; \
		$(EXPERIMENT) scenario --variant $(VARIANT) --report $$f || exit 1; done
	$(REPORT) -o results/report --png $(foreach f,$(SCENARIOS),results/scenario-$(basename $(notdir $(f)))-$(VARIANT)/results.json)

test: test-workspace test-quiche test-fuzz test-sdk

test-workspace: quiche
	$(CARGO) test --workspace

# The SDK from Python, C (under valgrind) and Kotlin on the JVM; bindings
# are generated into target/sdk/ (sdk/bindings.sh).
test-sdk: quiche
	bash sdk/test.sh

# A short run of every fuzz target (10 s each; skipped, saying so, without a
# nightly toolchain).
test-fuzz:
	nc-frames/fuzz/ci.sh

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

# Controllers on the emulated link (plain QUIC, no coding): 10 MB, 3 interleaved
# runs per cell (each capped at 90 s), medians (min-max), ratios to CUBIC.
bench-cc: quiche
	$(EXPERIMENT_BINS)
	$(EXPERIMENT) --rows cubic+nc=off,hybrid+nc=off,ctcp+nc=off,vegas+nc=off,bbr2+nc=off \
		--loss 0,0.01,0.05,0.1 --size 10MB --timeout 90 --markdown $(BENCH_ARGS)
	$(CARGO) run --release -p congestion --example simtable

# End-to-end benchmark on 20 Mbit/s, 40 ms RTT, one BDP, loss both ways: bulk
# 10 MB (0-20 % Bernoulli + Gilbert-Elliott, 10 rows incl. quinn's BBR, 3 runs,
# 90 s cap), short 1 MB flows (5 runs), /stream/8mbit/20s delivery delays and
# CPU per MB coded vs plain on loopback, then a target check. Markdown on
# stdout and in results/bench-e2e-TIME.md, everything in results/*.json.
# Builds the quinn peer if missing. Roughly 1 h; subsets, e.g.
#   make bench-e2e BENCH_E2E_ARGS="--tables bulk,short --runs 3 --loss 0,0.05"
# (nc-experiment bench-e2e --help lists the options).
bench-e2e: quiche
	$(EXPERIMENT_BINS)
	$(EXPERIMENT) bench-e2e $(BENCH_E2E_ARGS)

# Coded QUIC on cellular traces (../shared/traces: Verizon and T-Mobile LTE,
# mahimahi format) replayed by linkem, 20 ms one-way delay each way, drop-tail
# 100 and 1000 packets, loss 0 and 2 % both ways: bulk downloads capped at 60 s
# (rows hybrid, hybrid+nc=off, cubic+nc=off, bbr2+nc=off, quinn:bbr) and a
# /stream/2mbit/60s (hybrid vs hybrid+nc=off), 3 runs per cell at trace offsets
# 0/40/80 s, then a target check and a throughput-vs-queueing-delay SVG per
# trace. Markdown on stdout and in results/bench-cellular-TIME.md, the plots
# beside it, everything in results/*.json. Builds the quinn peer if missing.
# Roughly 2.5-3 h; a smoke test (about a minute):
#   make bench-cellular BENCH_CELLULAR_ARGS="--traces Verizon-LTE-short --buffers 100p --loss 0 --runs 1 --duration 10s --rows hybrid,hybrid+nc=off"
# (nc-experiment bench-cellular --help lists the options).
bench-cellular: quiche
	$(EXPERIMENT_BINS)
	$(EXPERIMENT) bench-cellular $(BENCH_CELLULAR_ARGS)

# Fairness (issue 12's targets): coded hybrid against quiche's, quic-go's,
# ngtcp2's and quinn's CUBIC on a one-BDP buffer (both start orders, a 2 s
# head start each way), on 25 and 10 kB buffers (and alone there), with
# 40/80 ms paths, and coded flows sharing a 5 % lossy link; every run's
# figure, median (min-max), the runs meeting each target, then a target
# check. Markdown on stdout and in results/bench-fairness-TIME.md, every
# run in results/bench-fairness-TIME.json. Builds the peers if missing.
# Roughly 2 h with 10 runs per cell; e.g. BENCH_FAIRNESS_ARGS="--runs 5" or
#   make bench-fairness BENCH_FAIRNESS_ARGS="--groups shallow --others cubic+nc=off --buffers 10% --runs 1"
# Made in parts ("--runs 5 --seed 1", then "--runs 5 --seed 6"), the parts'
# JSON reports merge into one with BENCH_FAIRNESS_ARGS="--merge A.json,B.json"
# (nc-experiment bench-fairness --help lists the options).
bench-fairness: quiche
	$(EXPERIMENT_BINS)
	$(EXPERIMENT) bench-fairness $(BENCH_FAIRNESS_ARGS)

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
