# The two commands are `make run` and `make test`; the rest serve them and CI.
SHELL := /bin/bash
GO    ?= go
BIN   := bin/readings

.PHONY: run test build generate check-generated vet fmt-check smoke web check-web web-test e2e db-start db-stop db-destroy

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

## web: rebuild the console's committed assets (web/dist) and generated types; needs Node.js
web:
	cd web && npm ci --no-audit --no-fund && npm run build

## check-web: fail when the committed console (web/dist, web/src/gen) is not what its sources build
check-web: web
	git diff --exit-code -- web/dist web/src/gen
	@untracked=$$(git status --porcelain --untracked-files=all -- web/dist web/src/gen); \
	  if [ -n "$$untracked" ]; then echo "console files not committed (run make web):"; echo "$$untracked"; exit 1; fi

## web-test: the console's unit tests (Vitest)
web-test:
	cd web && npm test

## e2e: the console in headless Chromium against the real service on a fresh database
e2e: build
	scripts/e2e.sh

## smoke: the quickstart as a new user runs it (make run, then curl)
smoke:
	scripts/smoke.sh

db-start:
	@scripts/devdb.sh start
db-stop:
	@scripts/devdb.sh stop
db-destroy:
	@scripts/devdb.sh destroy
