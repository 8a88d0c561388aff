# py-scheduler: every target does its own set-up, so a fresh clone needs only `make run` or `make test`.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
CLUSTER_DIR ?= .cluster
NODES ?= 6
ZONES ?= 3
export GOTOOLCHAIN := local

.PHONY: install lint unit integration e2e test cluster-up cluster-down binaries run e2e-kind bench bench-gang bench-smoke \
	clean lock differential chaos

# Every Python dependency is pinned in constraints.txt (runtime, dev and bench alike), so a fresh machine
# installs exactly what was tested; `make lock` resolves pyproject.toml's ranges anew.
$(BIN)/py-scheduler: pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt -e '.[dev]'
	touch $@

install: $(BIN)/py-scheduler

binaries:
	bash e2e/cluster/build.sh

lint: install
	$(BIN)/ruff check scheduler tests e2e examples
	$(BIN)/mypy
	$(BIN)/mypy examples/node-label-score/src

# Unit tests render manifests/ with the pinned kubectl, so they need the binaries too.
unit: install binaries
	$(BIN)/pytest -q -m "not integration" tests

integration: install binaries
	$(BIN)/pytest -q -m integration tests

# The e2e suite runs against $$KUBECONFIG when set; otherwise against the local control plane, with
# py-scheduler started as a process.
e2e: install binaries
	$(BIN)/python -m e2e.run

test: lint unit integration e2e bench-smoke

cluster-up: install binaries
	$(BIN)/python -m e2e.cluster up --dir $(CLUSTER_DIR) --nodes $(NODES) --zones $(ZONES)
	@echo "export KUBECONFIG=$(abspath $(CLUSTER_DIR))/kubeconfig"

cluster-down: install
	$(BIN)/python -m e2e.cluster down --dir $(CLUSTER_DIR)

# With KUBECONFIG: run against that cluster. Without: a local control plane with simulated nodes,
# a sample workload from e2e/samples/, and where its pods landed.
run: install
	@if [ -n "$$KUBECONFIG" ]; then \
	  exec $(BIN)/py-scheduler run --kubeconfig "$$KUBECONFIG" $(ARGS); \
	else \
	  $(MAKE) --no-print-directory cluster-up && \
	  exec $(BIN)/python -m e2e.demo --dir $(CLUSTER_DIR); \
	fi

e2e-kind: install
	bash e2e/kind/run.sh

# py-scheduler vs kube-scheduler vs a no-algorithm binder on scheduler_perf workloads (~40 min on 2 cores).
# Then a paced run (BENCH_PACED_ARGS= skips it): pods created at 100/s, below both schedulers' capacity,
# so its latencies are scheduling delay rather than queue build-up; three interleaved rounds, as a p99 of
# one run is set by a few API server stalls.
BENCH_ARGS ?= --suite bench
BENCH_PACED_ARGS ?= --workload SchedulingBasic --nodes 1000 --pods 3000 --schedulers py,kube --rate 100 --repeat 3
bench: install binaries
	$(BIN)/pip install -q -c constraints.txt -e '.[bench]'
	$(BIN)/python -m e2e.perf $(BENCH_ARGS) --out .bench/results.json
	$(if $(strip $(BENCH_PACED_ARGS)),$(BIN)/python -m e2e.perf $(BENCH_PACED_ARGS) --out .bench/paced.json)
	$(MAKE) bench-gang

# Gang scheduling (Coscheduling, PodGroups): py-scheduler only, kube-scheduler v1.37 gangs only with its GenericWorkload gate on (beta, off).
GANG_ARGS ?= --nodes 500 --groups 100 --size 10 --unfit 10
bench-gang: install binaries
	$(BIN)/python -m e2e.perf.gang $(GANG_ARGS) --out .bench/gang.json

# The harness end to end on 20 nodes (part of `make test`; measures nothing worth reporting).
bench-smoke: install binaries
	$(BIN)/python -m e2e.perf --workload SchedulingBasic --nodes 20 --pods 40 --repeat 1 --timeout 180 \
	  --out .bench/smoke.json

# kube-scheduler v1.37.2 vs `simulate` on N random seeded scenarios (a small batch runs in `make integration`).
N ?= 200
SEED ?= 1
differential: install binaries
	$(BIN)/python -m e2e.differential --scenarios $(N) --first-seed $(SEED)

# py-scheduler under faults (e2e/chaos): apiserver/etcd/scheduler/leader kills, outages, a competing binder,
# node deletions, 410 on nodes; 300 pods on 20 nodes per scenario (~15 min on 2 cores; not part of `make test`).
CHAOS_ARGS ?=
chaos: install binaries
	$(BIN)/python -m e2e.chaos $(CHAOS_ARGS)

lock:
	rm -rf .lock-venv && $(PY) -m venv .lock-venv
	.lock-venv/bin/pip install -q --upgrade pip
	.lock-venv/bin/pip install -q -e '.[dev,bench]'
	{ echo "# Pinned versions of every Python dependency (runtime, dev, bench) that make install and CI use."; \
	  echo "# Refresh with 'make lock' (resolves pyproject.toml's ranges anew in a scratch venv), then run make test."; \
	  .lock-venv/bin/pip freeze --all --exclude-editable | grep -v -E '^(py-scheduler|pip)=='; } > constraints.txt
	rm -rf .lock-venv

clean: cluster-down
	rm -rf $(VENV) .bench .chaos .pytest_cache .mypy_cache .ruff_cache
