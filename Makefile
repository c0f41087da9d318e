# The two commands a new user needs: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test install install-test kernel-library clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet -e .
	touch $@

# NOTE: the mpi extra (mpi4py, MPICH with mpiexec) lets tests/mpi run programs under mpiexec -n 1, 2, 4.
$(VENV)/.installed-test: $(VENV)/.installed Makefile
	$(BIN)/pip install --quiet -e '.[test,mpi]'
	touch $@

# NOTE: the installation's per-op kernel library (compiler/lowering/op_library.py, the first
# tier's compiled helpers, about 30 s on 2 cores): built once per machine and helper source, a no-op when it is there
kernel-library: $(VENV)/.installed
	$(BIN)/python -c "from meshjit.compiler.lowering.op_library import build; build()"

install: $(VENV)/.installed kernel-library

install-test: $(VENV)/.installed-test kernel-library

demo: install
	$(BIN)/meshjit demo

# NOTE: a worker process per core (at most 4), each taking whole test files: 24,000 tests took
# 10 min in one process on 2 cores, 5.7 min in two; `pytest tests/...` alone runs in one process
test: install-test
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -n auto --maxprocesses 4 --dist loadfile tests

clean:
	rm -rf $(VENV) build *.egg-info compiler/lowering/kernel_library
