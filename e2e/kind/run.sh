#!/usr/bin/env bash
# `make e2e-kind`: the e2e suite against py-scheduler deployed in a kind cluster from manifests/.
#   create the cluster (e2e/kind/kind-config.yaml) -> build the image (Dockerfile) -> kind load it ->
#   kubectl apply -k e2e/kind/overlay -> wait for the rollout and a leader -> python -m e2e.run with
#   KUBECONFIG set -> fail on any denied API call in the scheduler's logs -> delete the cluster.
# Needs docker (with a running engine) and kind; without them it stops with exit code 2.
# Environment: KIND_CLUSTER_NAME (py-scheduler-e2e), KIND_NODE_IMAGE (kind's default),
#              KEEP_CLUSTER=1 (do not delete the cluster, for debugging), KUBECTL (kubectl to use).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"

CLUSTER="${KIND_CLUSTER_NAME:-py-scheduler-e2e}"
IMAGE="py-scheduler:kind-e2e"  # must match e2e/kind/overlay/kustomization.yaml
NS=py-scheduler

missing=()
command -v docker >/dev/null 2>&1 || missing+=(docker)
command -v kind >/dev/null 2>&1 || missing+=(kind)
if ((${#missing[@]})); then
  echo "make e2e-kind: ${missing[*]} not found on PATH; this target needs docker (with a running engine) and kind." >&2
  echo "  Without them use 'make e2e' (the same suite against the local control plane, no Docker needed)." >&2
  exit 2
fi
if ! docker info >/dev/null 2>&1; then
  echo "make e2e-kind: the docker CLI is installed but no Docker engine answers ('docker info' failed)." >&2
  echo "  Start the engine (or set DOCKER_HOST), or use 'make e2e' (local control plane, no Docker needed)." >&2
  exit 2
fi

PY="$root/.venv/bin/python"
[ -x "$PY" ] || PY=python3
if [ -z "${KUBECTL:-}" ]; then
  if command -v kubectl >/dev/null 2>&1; then KUBECTL=kubectl
  else KUBECTL="$(bash e2e/cluster/build.sh --print-bin-dir)/kubectl"; fi
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/py-scheduler-kind-XXXXXX")"
export KUBECONFIG="$work/kubeconfig"

dump() {
  echo "---- py-scheduler pods and logs ----" >&2
  "$KUBECTL" -n "$NS" get pods -o wide >&2 || true
  "$KUBECTL" -n "$NS" describe pods >&2 || true
  "$KUBECTL" -n "$NS" logs -l app.kubernetes.io/name=py-scheduler --all-containers --prefix --tail=200 >&2 || true
}
cleanup() {
  local rc=$?
  if [ "$rc" -ne 0 ]; then dump; fi
  if [ "${KEEP_CLUSTER:-0}" = 1 ]; then
    echo "keeping kind cluster $CLUSTER: export KUBECONFIG=$KUBECONFIG" >&2
  else
    kind delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true
    rm -rf "$work"
  fi
  exit "$rc"
}
trap cleanup EXIT

echo "==> kind cluster $CLUSTER" >&2
kind create cluster --name "$CLUSTER" --config e2e/kind/kind-config.yaml --kubeconfig "$KUBECONFIG" --wait 180s \
  ${KIND_NODE_IMAGE:+--image "$KIND_NODE_IMAGE"}
server_minor="$("$KUBECTL" version -o json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["minor"])')"
if [ "${server_minor%+}" != 34 ]; then
  echo "note: the kind cluster runs Kubernetes 1.$server_minor; py-scheduler follows 1.37 (set KIND_NODE_IMAGE)" >&2
fi

echo "==> image $IMAGE" >&2
docker build -t "$IMAGE" .
kind load docker-image "$IMAGE" --name "$CLUSTER"

echo "==> deploy (e2e/kind/overlay -> manifests/)" >&2
"$KUBECTL" apply -k e2e/kind/overlay
"$KUBECTL" -n "$NS" rollout status deployment/py-scheduler --timeout=300s
for _ in $(seq 1 60); do
  holder="$("$KUBECTL" -n "$NS" get lease py-scheduler -o jsonpath='{.spec.holderIdentity}' 2>/dev/null || true)"
  [ -n "$holder" ] && break
  sleep 2
done
[ -n "$holder" ] || { echo "no replica acquired the lease $NS/py-scheduler" >&2; exit 1; }
echo "leader: $holder" >&2

echo "==> e2e suite" >&2
"$PY" -m e2e.run

logs="$("$KUBECTL" -n "$NS" logs -l app.kubernetes.io/name=py-scheduler --all-containers --prefix --tail=-1)"
denied="$(grep -E -i 'forbidden|"status": 403' <<<"$logs" || true)"
if [ -n "$denied" ]; then
  echo "the scheduler was denied API access; manifests/ lacks a permission:" >&2
  echo "$denied" | head -20 >&2
  exit 1
fi
echo "make e2e-kind: passed" >&2
