# The two commands are `make run` and `make test`; the rest serve them and CI.
SHELL := /bin/bash
GO    ?= go
BIN   := bin/readings

.PHONY: run test build generate check-generated vet fmt-check fuzz smoke db-start db-stop db-destroy \
	node-modules lint ts-check docs-assets examples check-docs-assets browser-test web check-web web-test e2e bench help

## run: build and serve on 127.0.0.1:8080, or LISTEN_ADDR (a private PostgreSQL unless DATABASE_URL is set)
run: build
	scripts/run.sh

## test: every test, against a real PostgreSQL (TEST_DATABASE_URL, Docker, or the private cluster), once per storage mode
# The server's package, whose authorization matrix calls every operation as every identity, outlasts go test's default 10 minutes on a busy machine.
test:
	GO=$(GO) scripts/test.sh -timeout 30m

## build: the binary, bin/readings
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

## vet: go vet ./...
vet:
	$(GO) vet ./...

## fmt-check: fail when gofmt would change a tracked Go file
fmt-check:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi

## fuzz: every fuzz target for FUZZTIME each (default 30s)
fuzz:
	scripts/fuzz.sh

# The npm tooling around the contract lives in openapi/ (package.json and
# its lockfile, the repository's only ones). npm ci runs again only when the
# lockfile changes; install scripts are skipped, none of these needs one.
NPM_DIR      := openapi
NODE_MODULES := $(NPM_DIR)/node_modules/.package-lock.json
NPM_BIN      := $(NPM_DIR)/node_modules/.bin
# Swagger UI's files that /docs serves, with their licences.
DOCS_ASSETS  := swagger-ui-bundle.js swagger-ui-bundle.js.LICENSE.txt swagger-ui.css favicon-32x32.png LICENSE NOTICE

## node-modules: npm ci in openapi/, when its lockfile changed since the last one
node-modules: $(NODE_MODULES)
$(NODE_MODULES): $(NPM_DIR)/package.json $(NPM_DIR)/package-lock.json
	cd $(NPM_DIR) && npm ci --ignore-scripts --no-audit --no-fund

## lint: lint openapi/openapi.yaml with Redocly's CLI (rules in openapi/redocly.yaml)
lint: $(NODE_MODULES)
	cd $(NPM_DIR) && REDOCLY_TELEMETRY=off node_modules/.bin/redocly lint --config redocly.yaml openapi.yaml

## ts-check: TypeScript types from the spec (openapi-typescript), then type-check the example client
ts-check: $(NODE_MODULES)
	$(NPM_BIN)/openapi-typescript $(NPM_DIR)/openapi.yaml -o $(NPM_DIR)/ts-client-example/api.d.ts
	$(NPM_BIN)/tsc -p $(NPM_DIR)/ts-client-example --noEmit

## docs-assets: copy Swagger UI's files for /docs from node_modules into server/docs/assets
docs-assets: $(NODE_MODULES)
	rm -rf server/docs/assets
	mkdir -p server/docs/assets
	cp $(addprefix $(NPM_DIR)/node_modules/swagger-ui-dist/,$(DOCS_ASSETS)) server/docs/assets/

## check-docs-assets: fail when the committed assets are not what docs-assets copies
check-docs-assets: docs-assets
	git diff --exit-code --stat -- server/docs/assets
	@untracked=$$(git status --porcelain --untracked-files=all -- server/docs/assets); \
	  if [ -n "$$untracked" ]; then echo "docs assets not committed:"; echo "$$untracked"; exit 1; fi

## browser-test: headless Chromium loads /docs from a fresh service and checks it
browser-test: build $(NODE_MODULES)
	node scripts/browser-test.mjs

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

## examples: run every sh example of README.md and docs/ as written against a fresh make run, and check the outputs they show
examples: build
	scripts/examples.sh

## smoke: the quickstart as a new user runs it (make run, then curl)
smoke:
	scripts/smoke.sh

## db-start: start the private PostgreSQL and print its URL
db-start:
	@scripts/devdb.sh start
## db-stop: stop the private PostgreSQL clusters, both storage modes' (make test starts both)
db-stop:
	@for mode in $$(scripts/devdb.sh modes); do DEVDB_STORAGE=$$mode scripts/devdb.sh stop; done
## db-destroy: stop the private PostgreSQL clusters and delete their data
db-destroy:
	@for mode in $$(scripts/devdb.sh modes); do DEVDB_STORAGE=$$mode scripts/devdb.sh destroy; done

.PHONY: load chaos widest cluster cluster-stop chaos-cluster load-cluster backup-drill check-rules

## load: a fresh service under a mixed read/write load for LOAD_SECONDS (60) at LOAD_RATE req/s (200), then the report
load:
	scripts/load.sh

## chaos: kill -9 mid-ingest, PostgreSQL restarts under load, 8 slow export readers beside another organization, the widest data, kill -9 between alarm events and their webhook deliveries, writes into chunks being compressed, a point-in-time restore from backups (backup-drill); fails on a lost or partial batch, a 500, a hang, a slow recovery, a p99 over 1 s, a peak RSS over 256 MiB, an event never delivered, a deadlock or a write that does not read back
chaos:
	scripts/chaos-kill.sh
	scripts/chaos-db.sh
	scripts/chaos-slow.sh
	scripts/widest.sh
	scripts/chaos-webhook.sh
	scripts/chaos-stress.sh
	scripts/backup-drill.sh

## backup-drill: pgBackRest's full and incremental backups under load, the cluster destroyed, a point-in-time restore; fails unless every batch acknowledged before the target is there and none sent after, and the rollups and alarms agree with the readings
backup-drill: build
	scripts/backup-drill.sh

## check-rules: promtool checks the alerting rules in prometheus/ and runs their unit tests (Debian's prometheus package has promtool)
check-rules:
	@command -v promtool >/dev/null || { echo "promtool is not installed: install Debian's prometheus package"; exit 1; }
	promtool check rules prometheus/readings.rules.yml
	promtool test rules prometheus/readings.rules.test.yml

## widest: the service's peak RSS on the widest data its limits allow, under its heaviest reads at once; fails above 256 MiB
widest:
	scripts/widest.sh

## cluster: a primary PostgreSQL, a hot standby, 3 replicas of the service and HAProxy on 127.0.0.1:8090 (docs/deployment.md)
cluster: build
	scripts/cluster.sh start

## cluster-stop: stop what make cluster started and delete its data
cluster-stop:
	scripts/cluster.sh stop

## chaos-cluster: under load through HAProxy, kill -9 a replica, stop the standby, restart the primary; fails on a lost batch, an error a retry would not hide or a slow recovery
chaos-cluster:
	scripts/chaos-cluster.sh

## load-cluster: the mixed load through HAProxy, offered past saturation, with 1 replica in rotation then 3: the throughput of each
load-cluster:
	scripts/load-cluster.sh

## bench: the service against raw PostgreSQL, InfluxDB and VictoriaMetrics on this machine, as markdown tables (BENCH_FLAGS=-quick to try it, -profile DIR for the service's CPU profiles)
bench:
	@$(GO) build -o bin/bench ./scripts/bench
	@bin/bench $(BENCH_FLAGS)

## help: list the targets
help:
	@sed -n 's/^## //p' $(MAKEFILE_LIST)
