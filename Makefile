# mapthenet: `make test` is the test command (README, .ci/run).
GO      ?= go
PKGS    ?= ./...

.PHONY: test vet unit build bench demo fuzz clean map-picture

test: vet unit

# vet, and gofmt: a file gofmt would change fails the test command.
vet:
	$(GO) vet $(PKGS)
	@unformatted="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './mapthenet-*'))"; \
	if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted" >&2; exit 1; fi

# -race: the store, the crawler and the rank workers are concurrent.
# gotestsum (a tool in go.mod) runs go test and ends with the list of
# skipped tests and why, so that a test skipped for want of a browser or
# DuckDB shows in the output.
unit:
	$(GO) tool gotestsum --format pkgname-and-test-fails --format-hide-empty-pkg -- -race -count=1 -timeout 30m $(PKGS)

build:
	$(GO) build -buildvcs=auto -o bin/mapthenet ./cmd/mapthenet

# Benchmarks: the Go micro-benchmarks, then the end-to-end benchmark command
# (rank --edges and ranking from ids). XL=1 also ranks graphgen's XL graph
# (100M domains, 1B edges) from ids: opt in, as its edge file takes 4 GB
# of disk (generated once, in 90 s on 2 cores, and kept in BENCHDIR,
# outside the checkout) and ranking it about 4 minutes and 7 GiB of memory.
BENCHDIR ?= /tmp/mapthenet-bench
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 ./rank/... ./graph/...
	$(GO) run ./bench -stages rank,ids $(BENCHFLAGS)
	@if [ "$(XL)" = 1 ]; then echo "$(GO) run ./bench -size XL -stages ids -dir $(BENCHDIR)"; $(GO) run ./bench -size XL -stages ids -dir $(BENCHDIR); fi

# Fuzzing: every Fuzz target of $(PKGS) for FUZZTIME each. go test fuzzes
# one target per run, so list them (go test -list) and run each in turn;
# the targets that fail are named at the end (their inputs are written to
# the package's testdata/fuzz/). Minimising a new input may take
# FUZZMINTIME (go's default, 60s, took all of a slow target's time: the
# count of new inputs stayed still while it minimised).
FUZZTIME ?= 30s
FUZZMINTIME ?= 5s
fuzz:
	@targets="$$($(GO) test -list '^Fuzz' $(PKGS) | awk '/^Fuzz/ { names = names " " $$1; next } /^ok/ { n = split(names, a, " "); for (i = 1; i <= n; i++) print $$2 "," a[i]; names = "" }')"; \
	failed=""; \
	for t in $$targets; do \
		pkg=$${t%%,*}; name=$${t#*,}; \
		echo "fuzz $$pkg $$name ($(FUZZTIME))"; \
		$(GO) test "$$pkg" -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) || failed="$$failed $$pkg.$$name"; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz targets that failed:$$failed" >&2; exit 1; fi

# The README's picture, docs/map.png: a generated web of 100,000 domains
# ranked, split into communities, laid out and drawn as a rebuild and
# `mapthenet map --png` do (about a minute; the same bytes every time).
map-picture:
	$(GO) run ./docs/mappicture -out docs/map.png

# The demo's store and snapshot go to ./mapthenet-demo (fresh each time) so
# that the README's DuckDB queries can be pasted as they are.
demo: build
	rm -rf mapthenet-demo
	./bin/mapthenet demo --out mapthenet-demo

clean:
	rm -rf bin mapthenet-demo
