# The two commands are `make run` and `make test`; the rest serve them and CI.
SHELL := /bin/bash
GO    ?= go
BIN   := bin/readings

.PHONY: run test build generate check-generated vet fmt-check smoke db-start db-stop db-destroy bench

## run: build and serve on 127.0.0.1:8080 (a private PostgreSQL unless DATABASE_URL is set)
run: build
	scripts/run.sh

## test: every test, against a real PostgreSQL (TEST_DATABASE_URL, Docker, or the private cluster)
test:
	$(GO) test ./...

build:
	$(GO) build -o $(BIN) .

## generate: regenerate gen/ from openapi/openapi.yaml
generate:
	$(GO) generate ./...

## check-generated: fail when generated code or go.mod is not what the sources say
check-generated: generate
	git diff --exit-code -- gen go.mod go.sum
	@untracked=$$(git status --porcelain --untracked-files=all -- gen); \
	  if [ -n "$$untracked" ]; then echo "generated files not committed:"; echo "$$untracked"; exit 1; fi
	$(GO) mod tidy -diff

vet:
	$(GO) vet ./...

fmt-check:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi

## smoke: the quickstart as a new user runs it (make run, then curl)
smoke:
	scripts/smoke.sh

db-start:
	@scripts/devdb.sh start
db-stop:
	@scripts/devdb.sh stop
db-destroy:
	@scripts/devdb.sh destroy

## bench: the service against raw PostgreSQL on this machine, as markdown tables (BENCH_FLAGS=-quick to try it)
bench:
	@$(GO) build -o bin/bench ./scripts/bench
	@bin/bench $(BENCH_FLAGS)
