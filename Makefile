# `make test` is the one command that sets up and runs every test on a fresh
# machine: it checks, and starts (installing from Debian's packages when
# missing) MariaDB, Redis and PostgreSQL, redis-sentinel for the Redis
# Cluster and Sentinel tests, Chromium for the browser tests and
# gcc for the race detector, python3-redis for the Python worker's tests,
# then runs the Go tests against them.
# REFRESHER_TEST_MYSQL, REFRESHER_TEST_REDIS and REFRESHER_TEST_POSTGRES point
# the tests (and the checks) at other servers; see scripts/services.sh.
GO ?= go

.PHONY: test services browser cc python build vet fuzz bench bench-scaling
# The packages that run goroutines are tested with the race detector; the
# pure ones (policy's property tests run ten times slower under -race)
# without it.
RACE_PKGS = refresher redisio worker e2e cmd models operator
# The two groups run at once: the pure group is mostly the demo's 20 s of
# waiting, which would otherwise come after the race group's minute.
test: services browser cc python vet
	@$(GO) test -count=1 -timeout 20m $$($(GO) list ./... | grep -v -E '^github.com/refresher/refresher/($(subst $() ,|,$(RACE_PKGS)))(/|$$)') & pure=$$!; \
	$(GO) test -count=1 -timeout 20m -race $(RACE_PKGS:%=./%/...); race=$$?; \
	wait $$pure; pure=$$?; \
	if [ $$race -ne 0 ] || [ $$pure -ne 0 ]; then echo "make test: FAIL (race group exit $$race, pure group exit $$pure)"; exit 1; fi

browser:
	./scripts/browser.sh

cc:
	./scripts/cc.sh

python:
	./scripts/python.sh

services:
	./scripts/services.sh
	./scripts/redis-topologies.sh

vet:
	$(GO) vet ./...

build:
	CGO_ENABLED=0 $(GO) build -o bin/refresher ./cmd/refresher

# `make bench` measures the full refresh cycle (100k due models) against a
# hand-written baseline in the same run; `make bench-scaling` compares 100k
# and 1M rows with 50k due (a few minutes; BENCH_FLAGS=--huge adds 10M rows:
# 10-15 minutes more and 5 GB of disk). BENCH_FLAGS adds flags, e.g.
# BENCH_FLAGS="--store postgres" (mysql, the default; postgres; sqlite) or
# "--rows 20000 --repeat 3". See docs/performance.md.
bench: services
	$(GO) run ./bench $(BENCH_FLAGS)

bench-scaling: services
	$(GO) run ./bench --scaling $(BENCH_FLAGS)
