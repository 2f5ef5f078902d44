# One entry point for the workspace. The module list comes from `go list -m`,
# so a new module joins every target by being added to go.work.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

ROOT    := $(CURDIR)
MODULES := $(shell go list -m -f '{{.Dir}}' | sed 's|^$(ROOT)/||' | sort)
GOTEST  ?= go test
TESTFLAGS ?= -race -count=1 -timeout 20m
FUZZTIME ?= 10s

export ADK_TEST_REDIS_URL ADK_TEST_POSTGRES_DSN

.PHONY: bench-modules all test test-unit test-integration lint check-modules bench fuzz fuzz-short demo screenshots generate tidy modules help
all: lint test

help:
	@echo "make demo           start the dashboard with a synthetic workload (in-memory unless ADK_REDIS_DSN/ADK_POSTGRES_DSN/ADK_SQLITE_PATH)"
	@echo "                    on another port: DEMO_FLAGS=\"--addr 127.0.0.1:9090\" make demo; a fresh PostgreSQL: DEMO_FLAGS=--apply-schema make demo"
	@echo "make test           unit lane of every module with -race, then the integration lane"
	@echo "make lint           gofmt, go vet, staticcheck, templ generate check"
	@echo "make check-modules  every module builds, vets and tests alone (GOWORK=off); go mod tidy -diff clean"
	@echo "make bench          adk vs River and Asynq (tools/adkbench); make bench-modules for each module's benchmarks"
	@echo "make fuzz           longer fuzz runs"

modules:
	@printf '%s\n' $(MODULES)

## test: the unit lane of every module, then the integration lane.
test: test-unit fuzz-short test-integration

test-unit: $(addprefix test-unit/,$(MODULES))
test-unit/%:
	@echo "== unit $*"
	cd $* && $(GOTEST) $(TESTFLAGS) ./...

## The integration lane runs the tests, examples and fuzz seeds of the
## files tagged integration: every other test has run in the unit lane
## with the same flags, and the tag only adds files (no file is built
## without it), so running those again would test nothing new. A module
## with no tagged file says so and has nothing more to run.
INTEGRATION_TESTS = find . -name '*_test.go' -print0 | xargs -0r awk \
	'FNR == 1 { tagged = 0 } $$0 == "//go:build integration" { tagged = 1 } \
	tagged && match($$0, /^func (Test|Example|Fuzz)[A-Za-z0-9_]+/) { print substr($$0, 6, RLENGTH - 5) }' | \
	sort -u | paste -sd'|' -
test-integration: $(addprefix test-integration/,$(MODULES))
test-integration/%:
	@echo "== integration $*"
	@cd $* && names=$$($(INTEGRATION_TESTS)); \
	if [ -z "$$names" ]; then echo "no test of $* is tagged integration: its tests ran in the unit lane"; \
	else echo "$$(tr '|' '\n' <<<"$$names" | wc -l) tests tagged integration"; \
		echo "cd $* && $(GOTEST) $(TESTFLAGS) -tags integration -run '^(...)\$$' ./..."; \
		$(GOTEST) $(TESTFLAGS) -tags integration -run "^($$names)\$$" ./...; fi

## lint: formatting, vet and staticcheck for every module.
lint: $(addprefix lint/,$(MODULES)) lint-templ
lint/%:
	@echo "== lint $*"
	@out=$$(cd $* && gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	cd $* && go vet ./... && go vet -tags integration ./...
	cd $* && go tool staticcheck ./... && go tool staticcheck -tags integration ./...

lint-templ:
	@if find modules/dashboard -name '*.templ' | grep -q .; then \
		cd modules/dashboard && go tool templ generate >/dev/null && cd $(ROOT) && \
		git diff --exit-code -- modules/dashboard || { echo "templ generate changed files: run 'make generate' and commit"; exit 1; }; \
	fi

generate:
	cd modules/dashboard && go tool templ generate

## check-modules: each module alone, as a user who `go get`s it would build it.
check-modules: $(addprefix check-module/,$(MODULES))
check-module/%:
	@echo "== module $* (GOWORK=off)"
	cd $* && GOWORK=off go build ./...
	cd $* && GOWORK=off go vet ./...
	cd $* && GOWORK=off $(GOTEST) -count=1 ./...
	cd $* && GOWORK=off go mod tidy -diff

tidy: $(addprefix tidy/,$(MODULES))
tidy/%:
	cd $* && GOWORK=off go mod tidy

## demo: the dashboard on the embedded in-memory store with a synthetic 20-tenant workload.
## ADK_REDIS_DSN / ADK_POSTGRES_DSN switch it to that server, ADK_SQLITE_PATH=adk.db to a SQLite
## file that outlives the demo; ADK_DASHBOARD_TOKEN enables actions.
## DEMO_FLAGS passes flags to adk-dashboard (adk-dashboard --help lists them):
##   DEMO_FLAGS="--addr 127.0.0.1:9090" make demo   # another port (the default is 127.0.0.1:8080)
##   DEMO_FLAGS=--apply-schema make demo           # apply the PostgreSQL schema first (development databases only)
DEMO_FLAGS ?=
demo:
	cd modules/dashboard && $(if $(ADK_SQLITE_PATH),ADK_SQLITE_PATH=$(abspath $(ADK_SQLITE_PATH))) go run ./cmd/adk-dashboard --demo $(DEMO_FLAGS)

## screenshots: regenerate modules/dashboard/testdata/screenshots/*.png in headless Chromium.
screenshots:
	cd modules/dashboard && ADK_SCREENSHOTS=1 go test -tags integration -run '^TestBrowser' -count=1 .

## bench: adk's queues side by side with River and Asynq on the same servers (tools/adkbench);
## BENCH_FLAGS=-quick for a smoke run, BENCH_FLAGS="-items 100000" for the full size (over 10 minutes here).
BENCH_FLAGS ?= -items 20000
bench:
	go run ./tools/adkbench $(BENCH_FLAGS)

## bench-modules: every module's own go test benchmarks.
bench-modules: $(addprefix bench/,$(MODULES))
bench/%:
	@echo "== bench $*"
	cd $* && $(GOTEST) -run '^$$' -bench . -benchmem -tags integration -timeout 30m ./...

## fuzz-short runs every fuzz target briefly; fuzz runs them for FUZZTIME each (default 10s; try FUZZTIME=5m).
fuzz-short:
	@$(MAKE) --no-print-directory fuzz FUZZTIME=2s

fuzz:
	@set -e; for m in $(MODULES); do \
		for pkg in $$(cd $$m && go list ./...); do \
			dir=$$(cd $$m && go list -f '{{.Dir}}' $$pkg); \
			for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/^func //'); do \
				echo "== fuzz $$pkg $$f ($(FUZZTIME))"; \
				(cd $$dir && go test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) .); \
			done; \
		done; \
	done
