# The two commands of the quick start:
#   make book   [PROFILE=best|smoke|quick|standard|paper]  execute every notebook and build _build/html
#               (best, per chapter: paper where its stored records cover it, else standard
#               where they do, else quick; nothing stored is computed again)
#   make test                                 run pytest (includes every notebook under smoke
#                                             and a headless-Chromium check of the built book)
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PROFILE ?= best
BENCH_ARGS ?=
# torch's CPU allocator with transparent huge pages: 1.5-2x faster training steps here
# (fresh memory otherwise page-faults; cpu-performance-notes.md). Read when torch loads.
export THP_MEM_ALLOC_ENABLE ?= 1
# Every stored record notes the commit (`git --no-optional-locks status`, which never writes
# the index). In a fresh clone most index entries are "racily clean" (written in the same
# second as the index), so each such call re-reads every tracked file: ~80 ms instead of
# ~12 ms, paid per record (thousands in `make test`). One refresh of the index ends that.
REFRESH_INDEX = @git update-index -q --refresh >/dev/null 2>&1 || true

.PHONY: book test bench venv browser clean

# Create .venv if missing; reinstall when pyproject.toml changes.
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	@touch $@

venv: $(STAMP)

book: $(STAMP)
	$(REFRESH_INDEX)
	$(BIN)/sst book --profile $(PROFILE)

# Headless Chromium and its driver for the browser test (Debian packages).
browser:
	@command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1 || tools/install_chromium.sh

test: $(STAMP) browser
	$(REFRESH_INDEX)
	$(BIN)/python -m pytest

# Time our models beside torch references: make bench BENCH_ARGS='--only tanh_rnn_train_d64'
bench: $(STAMP)
	$(BIN)/sst bench $(BENCH_ARGS)

clean:
	rm -rf _build notebooks/*.ipynb results/smoke results/quick
