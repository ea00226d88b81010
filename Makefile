# mapthenet: `make test` is the test command (README, .ci/run).
GO      ?= go
PKGS    ?= ./...

.PHONY: test vet unit build bench demo fuzz clean

test: vet unit

vet:
	$(GO) vet $(PKGS)

# -race: the store, the crawler and the rank workers are concurrent.
unit:
	$(GO) test -race -count=1 -timeout 30m $(PKGS)

build:
	$(GO) build -o bin/mapthenet ./cmd/mapthenet

# Benchmarks: the Go micro-benchmarks, then the end-to-end benchmark command.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 ./rank/... ./graph/...
	$(GO) run ./bench $(BENCHFLAGS)

demo: build
	./bin/mapthenet demo

clean:
	rm -rf bin
