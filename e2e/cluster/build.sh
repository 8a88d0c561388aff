#!/usr/bin/env bash
# Builds the real control-plane binaries (kube-apiserver, kube-controller-manager, kube-scheduler,
# kubectl, etcd, kwok) and the benchmark's ceiling-binder from the Go module proxy into a per-version
# cache outside the repo.
# Skips the build when the cached binaries already report the pinned version.
# `build.sh --node` also builds what e2e-node's real node runs (kubelet, kube-proxy and the pod sandbox's
# pause); only then, so the default build stays as fast as before. `build.sh --helm` also builds helm.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# go mod tidy writes the requirement inside a block or, when it is alone, as "require k8s.io/kubernetes vX".
K8S_VERSION="$(awk '$1=="k8s.io/kubernetes"{print $2} $1=="require" && $2=="k8s.io/kubernetes"{print $3}' \
  "$here/gobin/go.mod")"
if [ -z "$K8S_VERSION" ]; then echo "no k8s.io/kubernetes requirement in $here/gobin/go.mod" >&2; exit 1; fi
KWOK_VERSION="$(awk '$1=="sigs.k8s.io/kwok"{print $2}' "$here/kwokbin/go.mod")"
BIN_DIR="${PY_SCHEDULER_BIN_DIR:-$HOME/.cache/py-scheduler/bin/$K8S_VERSION}"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-trimpath -buildvcs=false"
mkdir -p "$BIN_DIR"

node=false
helm=false
for arg in "$@"; do
  case $arg in
    --print-bin-dir) echo "$BIN_DIR"; exit 0 ;;
    --node) node=true ;;
    --helm) helm=true ;;
    *) echo "build.sh: unknown argument $arg (--print-bin-dir, --node, --helm)" >&2; exit 2 ;;
  esac
done

# have BINARY WANT ARGS...: BINARY exists and `BINARY ARGS...` prints WANT.
# (Output is captured, not piped to grep -q, so pipefail cannot trip on SIGPIPE.)
have() {
  local bin=$1 want=$2 out; shift 2
  [ -x "$BIN_DIR/$bin" ] && out="$("$BIN_DIR/$bin" "$@" 2>/dev/null)" && [[ $out == *"$want"* ]]
}

want=()
have kube-apiserver "$K8S_VERSION" --version || want+=(kube-apiserver)
have kube-controller-manager "$K8S_VERSION" --version || want+=(kube-controller-manager)
have kube-scheduler "$K8S_VERSION" --version || want+=(kube-scheduler)
have kubectl "$K8S_VERSION" version --client || want+=(kubectl)
[ -x "$BIN_DIR/etcd" ] && "$BIN_DIR/etcd" --version >/dev/null 2>&1 || want+=(etcd)
if $node; then
  have kubelet "$K8S_VERSION" --version || want+=(kubelet)
  have kube-proxy "$K8S_VERSION" --version || want+=(kube-proxy)
  have pause "$K8S_VERSION" -v || want+=(pause)
fi

if ((${#want[@]})); then
  major="${K8S_VERSION#v}"; major="${major%%.*}"
  minor="${K8S_VERSION#v*.}"; minor="${minor%%.*}"
  now="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  ld="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=$major -X $p.gitMinor=$minor"
    ld="$ld -X $p.gitTreeState=clean -X $p.buildDate=$now"
  done
  ld="$ld -X main.version=$K8S_VERSION"  # pause's; no other main package here has that variable
  pkgs=()
  for b in "${want[@]}"; do
    case $b in
      etcd | pause) pkgs+=("./cmd/$b") ;;
      *) pkgs+=("k8s.io/kubernetes/cmd/$b") ;;
    esac
  done
  echo "building ${want[*]} ($K8S_VERSION) into $BIN_DIR" >&2
  start=$SECONDS
  (cd "$here/gobin" && go build -p "$(nproc)" -tags selinux,notest,grpcnotrace -ldflags "$ld" -o "$BIN_DIR/" "${pkgs[@]}")
  echo "built in $((SECONDS - start)) s" >&2
fi

if ! [ -x "$BIN_DIR/kwok" ] || ! "$BIN_DIR/kwok" --version 2>/dev/null | grep -q "${KWOK_VERSION#v}"; then
  echo "building kwok $KWOK_VERSION" >&2
  start=$SECONDS
  (cd "$here/kwokbin" && go build -p "$(nproc)" \
     -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION" \
     -o "$BIN_DIR/kwok" sigs.k8s.io/kwok/cmd/kwok)
  echo "built kwok in $((SECONDS - start)) s" >&2
fi
# Helm v4 (charts/py-scheduler: its lint, template test and e2e-node's install), from its own module so its
# dependencies do not move the control plane's; only with --helm, as the targets that use it ask.
HELM_VERSION="$(awk '$1=="helm.sh/helm/v4"{print $2}' "$here/helmbin/go.mod")"
if $helm && ! have helm "$HELM_VERSION" version --template '{{.Version}}'; then
  echo "building helm $HELM_VERSION" >&2
  start=$SECONDS
  (cd "$here/helmbin" && go build -p "$(nproc)" \
     -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION -X helm.sh/helm/v4/internal/version.gitTreeState=clean" \
     -o "$BIN_DIR/helm" helm.sh/helm/v4/cmd/helm)
  echo "built helm in $((SECONDS - start)) s" >&2
fi
# The benchmark's Go ceiling binder (e2e/perf's ceiling-go), from the same pinned client-go. Its --version
# prints a hash of its sources and of this module's go.mod/go.sum, so a changed binder is rebuilt, and a
# packed one on a machine without Go (../shared/device-bench) is taken as it is. Without Go and without it,
# the rest still builds: only the ceiling-go binders cannot run. Same tags as the control plane's build,
# so client-go's packages come from its build cache.
binder_hash="$(cat "$here"/gobin/cmd/ceiling-binder/*.go "$here/gobin/go.mod" "$here/gobin/go.sum" | sha256sum | cut -c1-16)"
if ! have ceiling-binder "$binder_hash" --version; then
  if command -v go >/dev/null 2>&1; then
    echo "building ceiling-binder" >&2
    start=$SECONDS
    (cd "$here/gobin" && go build -p "$(nproc)" -tags selinux,notest,grpcnotrace \
       -ldflags "-s -w -X main.sourceHash=$binder_hash" -o "$BIN_DIR/ceiling-binder" ./cmd/ceiling-binder)
    echo "built ceiling-binder in $((SECONDS - start)) s" >&2
  else
    echo "no Go toolchain: ceiling-binder not built (--schedulers ceiling-go needs it)" >&2
  fi
fi
echo "$BIN_DIR"
