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
	clean lock differential differential-dra differential-workload chaos soak e2e-node lab-smoke

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

# Unit tests need no Go-built binary (rendering manifests/ with the pinned kubectl is an integration test);
# they include the example plugin's own tests, which use only the public kit (scheduler.testing).
unit: install
	$(BIN)/pytest -q -m "not integration" tests examples/node-label-score/tests

# tests/integration/test_helm_chart.py renders and lints charts/py-scheduler with build.sh's helm.
integration: install binaries
	bash e2e/cluster/build.sh --helm
	$(BIN)/pytest -q -m integration tests

# The e2e suite runs against $$KUBECONFIG when set; otherwise against the local control plane, with
# py-scheduler started as a process.
e2e: install binaries
	$(BIN)/python -m e2e.run

# e2e-node last: it needs root and apt-get (CI has both); ~3.5 min warm, ~20 min cold on this loaded
# 2-core machine (docs/deploy-node.md).
test: lint unit integration e2e bench-smoke e2e-node

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

# A real kubelet node (containerd, runc, CNI and buildah from Debian, installed when missing; kubelet and
# kube-proxy from `build.sh --node`) beside the kwok nodes, running py-scheduler from the Dockerfile's image
# as `kubectl apply -k` deploys manifests/, then as `helm install` does (charts/py-scheduler, helm from
# `build.sh --helm`); tears everything down after. Root only. docs/deploy-node.md.
e2e-node: install binaries
	bash e2e/cluster/build.sh --node --helm
	$(BIN)/python -m e2e.node run

# py-scheduler vs kube-scheduler on upstream's scheduler_perf test cases (e2e/perf/suite: its own YAML and
# templates from the module cache), each at its 2-core size, a fresh control plane per run; `--suite full` runs
# upstream's sizes, and the hand-made suite with the ceiling binders is BENCH_ARGS="--suite bench
# --schedulers py,kube,ceiling,ceiling-go". Then a paced run (BENCH_PACED_ARGS= skips it): pods created at 100/s, below both schedulers' capacity,
# so its latencies are scheduling delay rather than queue build-up; three interleaved rounds, as a p99 of
# one run is set by a few API server stalls.
BENCH_ARGS ?= --suite quick
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

# The harness end to end on 20 nodes, then one upstream scheduler_perf case of each op-code family at its tiny
# size (upstream's smallest workload), py and kube (part of `make test`; measures nothing worth reporting).
SMOKE_CASES ?= SchedulingBasic,PreemptionBasic,SchedulingWithMixedChurn,SchedulingWhileGated,EventHandlingPodAdd,SchedulingRequiredPodAntiAffinityWithNSSelector,SchedulingWithResourceClaim,GangScheduling
bench-smoke: install binaries
	$(BIN)/python -m e2e.perf --workload SchedulingBasic --nodes 20 --pods 40 --repeat 1 --timeout 180 \
	  --out .bench/smoke.json
	$(BIN)/python -m e2e.perf --workload $(SMOKE_CASES) --size tiny --repeat 1 --out .bench/smoke-suite.json

# The laboratory's tools (e2e/perf/lab: in-process measuring; writecost alone starts a control plane), each run tiny.
lab-smoke: install
	$(BIN)/pytest -q tests/e2e/test_perf_lab.py tests/e2e/test_perf_cgpython.py

# kube-scheduler v1.37.2 vs `simulate` on N random seeded scenarios (a small batch runs in `make integration`).
N ?= 200
SEED ?= 1
differential: install binaries
	$(BIN)/python -m e2e.differential --scenarios $(N) --first-seed $(SEED)

# The same with devices (DRA, e2e/differential_dra.py): N scenarios of 2-5 pods each, the devices compared.
differential-dra: install binaries
	$(BIN)/python -m e2e.differential_dra --scenarios $(N) --first-seed $(SEED)

# The same with pod groups (the Workload API's gates on, e2e/differential_workload.py): N scenarios of 1-3
# groups each, every member's node or message, the PodGroup's condition and the victims compared.
differential-workload: install binaries
	$(BIN)/python -m e2e.differential_workload --scenarios $(N) --first-seed $(SEED)

# py-scheduler under faults (e2e/chaos): apiserver/etcd/scheduler/leader kills, outages, a competing binder,
# node deletions, 410 on nodes; 300 pods on 20 nodes per scenario; then, on a control plane with the Workload API
# gates on, gangs of PodGroups bound while py-scheduler and/or kube-apiserver are killed (~18 min on 2 cores; not
# part of `make test`). CHAOS_ARGS="--scenario gang-both-kill9 --seed 1 --seed 2" runs one scenario for two seeds.
CHAOS_ARGS ?=
chaos: install binaries
	$(BIN)/python -m e2e.chaos $(CHAOS_ARGS)

# Memory under churn (e2e/soak.py): 50 nodes, 40 pods created every 2 s and each deleted 20 s later, a third with
# preferred pod anti-affinity, for SOAK_MINUTES; RSS sampled every 30 s. Fails if RSS grows more than 5 MB over
# the second half, a pod is left pending or the scheduler dies. Not part of `make test`.
SOAK_MINUTES ?= 30
SOAK_ARGS ?=
soak: install binaries
	$(BIN)/python -m e2e.soak --minutes $(SOAK_MINUTES) $(SOAK_ARGS)

lock:
	rm -rf .lock-venv && $(PY) -m venv .lock-venv
	.lock-venv/bin/pip install -q --upgrade pip
	.lock-venv/bin/pip install -q -e '.[dev,bench]'
	{ echo "# Pinned versions of every Python dependency (runtime, dev, bench) that make install and CI use."; \
	  echo "# Refresh with 'make lock' (resolves pyproject.toml's ranges anew in a scratch venv), then run make test."; \
	  .lock-venv/bin/pip freeze --all --exclude-editable | grep -v -E '^(py-scheduler|pip)=='; } > constraints.txt
	rm -rf .lock-venv

clean: cluster-down
	rm -rf $(VENV) .bench .chaos .node .pytest_cache .mypy_cache .ruff_cache
