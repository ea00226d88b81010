# mapthenet: `make test` is the test command (README, .ci/run).
GO      ?= go
PKGS    ?= ./...

.PHONY: test vet unit build bench demo fuzz clean

test: vet unit

# vet, and gofmt: a file gofmt would change fails the test command.
vet:
	$(GO) vet $(PKGS)
	@unformatted="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './mapthenet-*'))"; \
	if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted" >&2; exit 1; fi

# -race: the store, the crawler and the rank workers are concurrent.
unit:
	$(GO) test -race -count=1 -timeout 30m $(PKGS)

build:
	$(GO) build -buildvcs=auto -o bin/mapthenet ./cmd/mapthenet

# Benchmarks: the Go micro-benchmarks, then the end-to-end benchmark command.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 ./rank/... ./graph/...
	$(GO) run ./bench $(BENCHFLAGS)

# The demo's store and snapshot go to ./mapthenet-demo (fresh each time) so
# that the README's DuckDB queries can be pasted as they are.
demo: build
	rm -rf mapthenet-demo
	./bin/mapthenet demo --out mapthenet-demo

clean:
	rm -rf bin mapthenet-demo
