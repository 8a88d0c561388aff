#!/usr/bin/env bash
# Builds the real control-plane binaries (kube-apiserver, kube-controller-manager, kube-scheduler,
# kubectl, etcd, kwok) from the Go module proxy into a per-version cache outside the repo.
# Skips the build when the cached binaries already report the pinned version.
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

if [ "${1:-}" = "--print-bin-dir" ]; then echo "$BIN_DIR"; exit 0; fi

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

if ((${#want[@]})); then
  major="${K8S_VERSION#v}"; major="${major%%.*}"
  minor="${K8S_VERSION#v*.}"; minor="${minor%%.*}"
  now="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  ld="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=$major -X $p.gitMinor=$minor"
    ld="$ld -X $p.gitTreeState=clean -X $p.buildDate=$now"
  done
  pkgs=()
  for b in "${want[@]}"; do
    if [ "$b" = etcd ]; then pkgs+=(./cmd/etcd); else pkgs+=("k8s.io/kubernetes/cmd/$b"); fi
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
echo "$BIN_DIR"
