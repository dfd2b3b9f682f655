# The Customer Relationship Service. `make run` and `make test` are all a newcomer
# needs; every target installs what it uses.

GO      ?= go
PORT    ?= 8080
export PORT

.PHONY: run test test-faults test-citus test-browser lint generate sdk-typescript-dist check-generated conformance bench bench-wrk bench-memory fuzz build apidocs sdk-typescript-deps db-stop clean

## run: compile crm-server (saying so) and serve on :$(PORT) with the demo account (a private PostgreSQL under ./.data
## unless DATABASE_URL is set) and /metrics (METRICS_ADDR=main) until Ctrl-C, which ends it quietly with status 0
run: apidocs
	@GO=$(GO) tools/run.sh

## test: every test, against DATABASE_URL or a private PostgreSQL under ./.data, in five go test runs at once (each runs
## tests while another still builds): impl's tests in two processes (CRM_TEST_SHARD: they spend most of their time waiting
## on PostgreSQL, one test at a time) and the rest of ./impl/... ./conformance/..., all three under the race detector, whose
## binary also runs the tests of the list, the contact list and the event feed once more through their functions
## (CRM_FAST_PATH=both, impl/main_test.go); the other packages without it; and the Go SDK's own module (sdk/go: its
## example; its tests against a server are in ./sdk). tools/testprogress reports each package as it ends (with why
## tests skipped), every 10 s the running ones and the ones still being built, failures at once, and a summary.
## Where npm is installed the reference page's renderer must be embedded (CRM_REQUIRE_APIDOCS).
RACE_PKGS = ./impl/... ./conformance/...
IMPL = github.com/crmservice/crm/impl
GO_TEST = $(GO) test -json -count=1 -timeout 30m
# The Go SDK is a module of its own (go.mod's replace directive points the server's module at it).
GO_SDK = sdk/go
test: SHELL := /bin/bash
test: apidocs sdk-typescript-deps
	@export CRM_REQUIRE_APIDOCS=$$(command -v npm >/dev/null 2>&1 && echo 1) GO=$(GO); \
	$(GO) build -o bin/testprogress ./tools/testprogress && \
	race_rest=$$($(GO) list $(RACE_PKGS) | grep -vx '$(IMPL)' | tr '\n' ' ') && \
	plain=$$($(GO) list ./... | grep -v -e /impl -e /conformance | tr '\n' ' ') && \
	echo "test: building the tests, then running them (a line every 10 s says what is going on)" && \
	bin/testprogress -packages "$$($(GO) list ./... | grep -vx '$(IMPL)') $(IMPL)(1/2) $(IMPL)(2/2) $$(cd $(GO_SDK) && $(GO) list ./...)" \
	  -run "(1/2) tools/race-prebuild.sh ./impl && CRM_TEST_SHARD=1/2 CRM_FAST_PATH=both $(GO_TEST) -race ./impl" \
	  -run "(2/2) tools/race-prebuild.sh ./impl && CRM_TEST_SHARD=2/2 CRM_FAST_PATH=both $(GO_TEST) -race ./impl" \
	  -run "tools/race-prebuild.sh $$race_rest && $(GO_TEST) -race $$race_rest" \
	  -run "$(GO_TEST) $$plain" \
	  -run "cd $(GO_SDK) && $(GO_TEST) ./..."

## test-faults: the fault suite (./faults): real crm-server processes killed with SIGKILL, a private PostgreSQL under ./.data/faults
## frozen with SIGSTOP, restarted and stopped for 20 s, slow clients, mail across a kill; envelopes within the deadlines and recovery by itself
test-faults:
	.ci/test-faults.sh

## test-citus: the tests on a private Citus cluster under ./.data/citus (skips, saying why, where the citus extension is not installed)
test-citus:
	.ci/test-citus.sh

## test-browser: the API reference page (/docs) and CORS in Debian's Chromium driven by playwright-core; installs both when missing, or says why it skips
test-browser:
	.ci/test-browser.sh

## lint: generated code up to date, gofmt, go vet, staticcheck (the server's module and the Go SDK's), the OpenAPI document through Spectral and Redocly,
## the TypeScript SDK's package packed from a clean copy and judged by @arethetypeswrong/cli and publint (.ci/lint-sdk.sh), and
## the clients that oapi-codegen, ogen, openapi-typescript (with openapi-fetch), @hey-api/openapi-ts and orval generate from it,
## compiled (tsc --strict) and run against a server on the demo account (.ci/lint-clients.sh; the TypeScript ones where npm is);
## go vet and staticcheck say every 15 s that they are still running (tools/progress.sh)
lint: check-generated
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@tools/progress.sh "lint: go vet" "every package of the server's module and of the Go SDK's" \
		sh -c '$(GO) vet ./... && cd $(GO_SDK) && $(GO) vet ./...'
	@tools/progress.sh "lint: staticcheck" "compiled into bin/ first, then every package checked (about 3 minutes the first time on 2 cores, under a minute once its cache is warm)" \
		sh -c '$(GO) build -o bin/staticcheck honnef.co/go/tools/cmd/staticcheck && bin/staticcheck ./... && cd $(GO_SDK) && ../../bin/staticcheck ./...'
	.ci/lint-openapi.sh
	.ci/lint-sdk.sh
	.ci/lint-clients.sh

## generate: rebuild gen/ from openapi.yaml with oapi-codegen, the Go SDK's models and plain client (sdk/go/crm/api), then the
## typed SDKs over them with tools/sdkgen (sdk/go/crm/operations.gen.go; sdk/typescript/src/types.ts and operations.ts, and the
## package's version), all from gen/generate.go; then the TypeScript SDK's built package (sdk-typescript-dist)
GENERATED = gen sdk/go/crm/api/api.gen.go sdk/go/crm/operations.gen.go sdk/typescript/src/types.ts sdk/typescript/src/operations.ts sdk/typescript/package.json sdk/typescript/package-lock.json sdk/typescript/dist
generate:
	$(GO) generate ./gen/...
	@$(MAKE) -s sdk-typescript-dist

## sdk-typescript-dist: the TypeScript SDK as it is installed, ESM and CommonJS with their types (sdk/typescript/dist, in git, so
## that `npm install <the directory>` and `npm pack` need nothing else): compiled by the SDK's pinned tsc; without npm it is left as it is
sdk-typescript-dist: sdk-typescript-deps
	@if ! command -v npm >/dev/null 2>&1; then \
		echo "sdk-typescript-dist: npm is not installed, so sdk/typescript/dist was not rebuilt (make check-generated needs npm)"; exit 0; fi; \
	npm run --prefix sdk/typescript --silent build

## check-generated: fail when gen/ or the SDKs differ from what openapi.yaml generates
check-generated: generate
	@git diff --exit-code --stat -- $(GENERATED) || { echo "generated code is stale: run 'make generate' and commit it"; exit 1; }
	@untracked=$$(git ls-files --others --exclude-standard -- $(GENERATED)); \
	if [ -n "$$untracked" ]; then echo "generated files not in git: $$untracked"; exit 1; fi

## conformance: start a server on the demo data and replay conformance/cases against it
conformance: build
	.ci/conformance.sh

## bench: generate (once) a million counterparties, measure the hot paths over HTTP and SQL into docs/benchmarks.md, then the Go benchmarks.
## wrk (Debian's package, installed here with apt-get when missing) drives the hot scenarios from outside the benchmark's process too.
bench: bench-wrk
	$(GO) run ./cmd/crm-bench
	$(MAKE) bench-memory
	$(GO) test -run '^$$' -bench . -benchmem ./...

## fuzz: each Go fuzz target (request decoding and validation in impl, the mail parser and sanitiser in impl/mailer) for
## FUZZTIME (20s) each; new failing inputs land in the package's testdata/fuzz, which make test then replays
FUZZTIME ?= 20s
fuzz:
	@set -e; for dir in $$(grep -l '^func Fuzz' $$(git ls-files '*_test.go') | xargs -n1 dirname | sort -u); do \
	  for target in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go | sed 's/^func //'); do \
	    echo "fuzz: $$target in ./$$dir for $(FUZZTIME)"; \
	    $(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) ./$$dir; \
	  done; \
	done
## bench-wrk: install wrk for make bench when it is missing, or say why not (the report then says wrk was skipped)
bench-wrk:
	@command -v wrk >/dev/null 2>&1 && exit 0; \
	if ! command -v apt-get >/dev/null 2>&1; then echo "bench-wrk: wrk is missing and there is no apt-get here: install wrk yourself"; exit 0; fi; \
	sudo=; if [ "$$(id -u)" != 0 ]; then if sudo -n true 2>/dev/null; then sudo="sudo -n"; else \
		echo "bench-wrk: wrk is missing and installing it needs root (apt-get install wrk)"; exit 0; fi; fi; \
	echo "bench-wrk: installing Debian's package wrk"; \
	DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y --no-install-recommends wrk >/dev/null || \
	{ $$sudo apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y --no-install-recommends wrk >/dev/null; } || \
	echo "bench-wrk: apt-get could not install wrk"
## bench-memory: real crm-server processes under 20 concurrent 9.5 MiB POST /mail/send, 40 concurrent 1 MiB nested and wide bodies,
## the widest valid insert and one 10 MiB nested mail; their peak resident memory (VmHWM) into docs/benchmarks.md
bench-memory:
	$(GO) run ./cmd/crm-memload

## build: the binaries, into ./bin (with the renderer of the API reference page, see apidocs)
build: apidocs
	$(GO) build -o bin/ ./cmd/...

## apidocs: the renderer of the API reference page (/docs): Redoc from its npm package (impl/apidocs/package-lock.json)
## into impl/apidocs/assets/redoc, which the server embeds. Without npm the server builds all the same and /docs says so.
APIDOCS_BUNDLE = impl/apidocs/assets/redoc/redoc.standalone.js
apidocs: $(APIDOCS_BUNDLE)
$(APIDOCS_BUNDLE): impl/apidocs/package.json impl/apidocs/package-lock.json
	@if ! command -v npm >/dev/null 2>&1; then \
		echo "apidocs: npm is not installed, so /docs will only link the contract (install Node.js with npm for the rendered page)"; exit 0; fi; \
	echo "apidocs: fetching the renderer of /docs (Redoc) with npm ci into impl/apidocs/node_modules"; \
	npm ci --prefix impl/apidocs --omit=peer --ignore-scripts --no-audit --no-fund --loglevel=error && \
	mkdir -p impl/apidocs/assets/redoc && \
	cp impl/apidocs/node_modules/redoc/LICENSE impl/apidocs/node_modules/redoc/bundles/redoc.standalone.js.LICENSE.txt impl/apidocs/assets/redoc/ && \
	cp impl/apidocs/node_modules/redoc/bundles/redoc.standalone.js $@

## sdk-typescript-deps: the TypeScript SDK's pinned compiler (typescript, @types/node) with npm ci from
## sdk/typescript/package-lock.json, which make test's TypeScript tests (go test ./sdk) use; without npm they skip
SDK_TS_DEPS = sdk/typescript/node_modules/.package-lock.json
sdk-typescript-deps: $(SDK_TS_DEPS)
$(SDK_TS_DEPS): sdk/typescript/package.json sdk/typescript/package-lock.json
	@if ! command -v npm >/dev/null 2>&1; then \
		echo "sdk-typescript-deps: npm is not installed, so the TypeScript SDK's tests will skip (install Node.js with npm)"; exit 0; fi; \
	echo "sdk-typescript-deps: npm ci in sdk/typescript (typescript, @types/node)"; \
	npm ci --prefix sdk/typescript --no-audit --no-fund --loglevel=error

## db-stop: stop the private PostgreSQL under ./.data
db-stop:
	$(GO) run ./cmd/crm-server db stop

clean: db-stop
	rm -rf bin .data
