# `make test` is the one command that sets up and runs every test on a fresh
# machine: it starts (installing from Debian's packages when missing) MariaDB
# and Redis, then runs the Go tests against them.
GO ?= go

.PHONY: test services build vet fuzz bench
test: services vet
	$(GO) test -count=1 -timeout 20m ./...

services:
	./scripts/services.sh

vet:
	$(GO) vet ./...

build:
	CGO_ENABLED=0 $(GO) build -o bin/refresher ./cmd/refresher
