"""A real, throw-away Kubernetes control plane on 127.0.0.1, run as plain processes (no Docker).

Components (binaries built by ``build.sh`` into a per-version cache):

* etcd (data on /dev/shm when possible, no fsync) and kube-apiserver (static admin token, RBAC);
* unless ``lean``: kube-controller-manager (Deployments, GC, namespace deletion, node lifecycle, ...)
  and kwok (keeps fake nodes alive with leases, turns bound pods Running, finishes pod deletion).

Every process writes its PID to ``<dir>/pids/<name>.pid`` and its output to ``<dir>/logs/<name>.log``;
``down`` only ever signals PIDs it wrote whose ``/proc/<pid>/cmdline`` still names the expected binary.

CLI: ``python -m e2e.cluster {up,down,nodes,status} --help``.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import copy
import fcntl
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from e2e.process import gate_flag, pid_runs

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

HERE = Path(__file__).resolve().parent
BUILD_SH = HERE / "build.sh"
DEFAULT_DIR = os.environ.get("PY_SCHEDULER_CLUSTER_DIR", ".cluster")

# Start order; ``down`` stops them in reverse.
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kwok")
EXTRAS = ("kube-controller-manager", "kwok")

SERVICE_CIDR = "10.0.0.0/24"
# Only written into objects (endpoint reconciler is off); avoids "no suitable network address"
# on hosts without a default route and the loopback check of newer apiservers.
ADVERTISE_ADDRESS = "10.0.1.1"
POD_CIDR = "10.244.0.1/16"  # kwok hands out pod IPs from here
NODE_IP = "10.240.0.1"  # kwok's host IP for nodes that have no address
SA_ISSUER = "https://kubernetes.default.svc.cluster.local"
CONTEXT = "py-scheduler-local"
# Bindings, and writes of Leases other than the control plane's and the nodes' (a scheduler's leader election).
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  verbs: [create]
  resources: [{group: "", resources: [pods/binding]}]
- level: None
  namespaces: [kube-system, kube-node-lease]
- level: Metadata
  verbs: [create, update, patch]
  resources: [{group: coordination.k8s.io, resources: [leases]}]
- level: None
"""


class ClusterError(RuntimeError):
    """The local control plane could not be started, reached or stopped."""


def _log(msg: str) -> None:
    print(f"[cluster] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------------
# versions, binaries, ports, processes


def _gomod_version(gomod: Path, module: str) -> str:
    """Version of ``module`` in a go.mod, so cluster.json reports exactly what build.sh pins."""
    for line in gomod.read_text().splitlines():
        parts = line.split()
        if parts[:1] == ["require"]:
            parts = parts[1:]
        if len(parts) >= 2 and parts[0] == module:
            return parts[1]
    return "unknown"


def pinned_versions() -> dict[str, str]:
    """Kubernetes, etcd and kwok versions pinned by the Go modules next to build.sh."""
    return {
        "kubernetes": _gomod_version(HERE / "gobin" / "go.mod", "k8s.io/kubernetes"),
        "etcd": _gomod_version(HERE / "gobin" / "go.mod", "go.etcd.io/etcd/server/v3"),
        "kwok": _gomod_version(HERE / "kwokbin" / "go.mod", "sigs.k8s.io/kwok"),
    }


def build_binaries(build: bool = True) -> Path:
    """Run build.sh (a no-op when the cache is warm) and return the binary directory."""
    args = ["bash", str(BUILD_SH)] + ([] if build else ["--print-bin-dir"])
    res = subprocess.run(args, stdout=subprocess.PIPE, text=True, check=False)
    if res.returncode != 0:
        raise ClusterError(f"{BUILD_SH} failed with exit code {res.returncode} (its output is above)")
    return Path(res.stdout.strip().splitlines()[-1])


def _free_ports(n: int) -> list[int]:
    """Ports the kernel considers free; all sockets stay open until the end so the ports differ."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) for _ in range(n)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]


def _wait_port_free(port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(("127.0.0.1", port))
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise ClusterError(f"port {port} still in use after {timeout:.0f} s") from None
        time.sleep(0.2)


def override_flags(args: Sequence[str], overrides: Mapping[str, str | None]) -> list[str]:
    """``args`` with each ``--name=value`` named in ``overrides`` replaced (None: removed) and the other
    overrides appended; replacing in place matters for list flags, which repeat rather than override."""
    out: list[str] = []
    seen: set[str] = set()
    for arg in args:
        name = arg[2:].partition("=")[0] if arg.startswith("--") else None
        if name is None or name not in overrides:
            out.append(arg)
            continue
        seen.add(name)
        value = overrides[name]
        if value is not None:
            out.append(f"--{name}={value}")
    out.extend(f"--{name}={value}" for name, value in overrides.items() if name not in seen and value is not None)
    return out


# API versions kube-apiserver v1.37 serves only when asked (--runtime-config), per gate that needs them: the
# storage of workloads/podgroups also checks GenericWorkload, so both the gate and the version must be on.
GATED_APIS = {"GenericWorkload": ("scheduling.k8s.io/v1beta1",), "CompositePodGroup": ("scheduling.k8s.io/v1alpha3",)}


def served_apis(gates: Mapping[str, bool]) -> list[str]:
    """``--runtime-config`` entries (``group/version=true``) for the API versions the enabled gates need."""
    return [f"{gv}=true" for gate, versions in GATED_APIS.items() if gates.get(gate) for gv in versions]


def parse_gates(spec: str) -> dict[str, bool]:
    """``Gate=true,Other=false`` into a dict; ValueError on an entry that is not ``name=bool``."""
    gates: dict[str, bool] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, sep, value = item.partition("=")
        if not sep or value.strip().lower() not in ("true", "false"):
            raise ValueError(f"bad feature gate {item!r}: want Name=true|false")
        gates[name.strip()] = value.strip().lower() == "true"
    return gates


# The gates of the Workload API as the live tests run them (kube-apiserver, kube-controller-manager and both
# schedulers): pod groups and gang scheduling, topology-constrained placement.
WORKLOAD_GATES = {"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True}


def _http_status(url: str, token: str | None = None, timeout: float = 2.0) -> int:
    """HTTP status of a GET (0 when unreachable); TLS is not verified: this is only a probe."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=ctx) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as e:
        return int(e.code)
    except (urllib.error.URLError, OSError):
        return 0


# --------------------------------------------------------------------------------------------------
# keys and certificates


def _run_openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _make_pki(pki: Path) -> bool:
    """Write sa.key and, with openssl, a CA plus a serving cert for 127.0.0.1.

    A real CA lets clients verify TLS (no InsecureRequestWarning spam from the Python client).
    Returns False when openssl is missing: then the apiserver self-signs and clients skip verify.
    """
    pki.mkdir(parents=True, exist_ok=True)
    if shutil.which("openssl") is None:
        (pki / "sa.key").write_bytes(_rsa_private_key_pem(2048))
        return False
    _run_openssl("genrsa", "-out", str(pki / "sa.key"), "2048")
    _run_openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "3650",
        "-keyout", str(pki / "ca.key"), "-out", str(pki / "ca.crt"), "-subj", "/CN=py-scheduler-local-ca",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
    )  # fmt: skip
    _run_openssl(
        "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=kube-apiserver",
        "-keyout", str(pki / "apiserver.key"), "-out", str(pki / "apiserver.csr"),
    )  # fmt: skip
    ext = pki / "apiserver.ext"
    ext.write_text(
        "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
        "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,"
        "DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:10.0.0.1\n"
    )
    _run_openssl(
        "x509", "-req", "-in", str(pki / "apiserver.csr"), "-CA", str(pki / "ca.crt"),
        "-CAkey", str(pki / "ca.key"), "-set_serial", str(secrets.randbits(63)), "-days", "3650",
        "-extfile", str(ext), "-out", str(pki / "apiserver.crt"),
    )  # fmt: skip
    return True


def _is_probable_prime(n: int, rounds: int = 40) -> bool:
    """Miller-Rabin, for the openssl-less fallback key."""
    for p in (3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37):
        if n % p == 0:
            return n == p
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for _ in range(rounds):
        x = pow(secrets.randbelow(n - 3) + 2, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = pow(x, 2, n)
            if x == n - 1:
                break
        else:
            return False
    return True


def _der(tag: int, body: bytes) -> bytes:
    n = len(body)
    if n < 128:
        return bytes([tag, n]) + body
    size = (n.bit_length() + 7) // 8
    return bytes([tag, 0x80 | size]) + n.to_bytes(size, "big") + body


def _rsa_private_key_pem(bits: int) -> bytes:
    """PKCS#1 RSA private key in pure Python: used only where openssl is not installed."""
    e = 65537

    def prime() -> int:
        while True:
            c = secrets.randbits(bits // 2) | (3 << (bits // 2 - 2)) | 1
            if (c - 1) % e and _is_probable_prime(c):
                return c

    p, q = prime(), prime()
    d = pow(e, -1, (p - 1) * (q - 1))
    ints = (0, p * q, e, d, p, q, d % (p - 1), d % (q - 1), pow(q, -1, p))
    body = b"".join(_der(0x02, i.to_bytes(i.bit_length() // 8 + 1, "big")) for i in ints)
    b64 = "\n".join(textwrap.wrap(base64.b64encode(_der(0x30, body)).decode(), 64))
    return f"-----BEGIN RSA PRIVATE KEY-----\n{b64}\n-----END RSA PRIVATE KEY-----\n".encode()


# --------------------------------------------------------------------------------------------------
# the cluster


class LocalCluster:
    """One local control plane whose state lives in ``state_dir`` (default ``.cluster``).

    ``up()`` is idempotent: a healthy cluster described by ``state_dir`` is reused, so pytest
    fixtures, the benchmark and ``make`` targets can all share one cluster.
    """

    def __init__(
        self,
        state_dir: str | os.PathLike[str] = DEFAULT_DIR,
        bin_dir: str | None = None,
        profiling: bool = False,
        flags: Mapping[str, Mapping[str, str | None]] | None = None,
        audit: bool = False,
        feature_gates: Mapping[str, bool] | None = None,
    ) -> None:
        """``profiling`` serves kube-apiserver's /debug/pprof (the benchmark's ``--profile apiserver``).

        ``audit`` makes kube-apiserver write an audit log (``audit_log``) of Bindings and Lease writes outside
        kube-system and kube-node-lease: who bound a pod and when, in the API server's own words (the
        leader-handover tests). Off by default: the benchmark measures the API server without it.

        ``flags`` overrides command-line flags per component (``{"kube-apiserver": {"bind-address":
        "0.0.0.0"}}``; None drops a flag): e2e-node's real kubelet needs an API server its pods can reach.

        ``feature_gates`` go to kube-apiserver and kube-controller-manager, with the API groups they need served
        (``served_apis``): ``{"GenericWorkload": True}`` serves scheduling.k8s.io/v1beta1's workloads and
        podgroups and keeps pods' ``spec.schedulingGroup``. A running cluster is reused only with the same gates.
        """
        self.dir = Path(state_dir).resolve()
        self._bin_dir = Path(bin_dir) if bin_dir else None
        self._profiling = profiling
        self._audit = audit
        self._flags = {name: dict(values) for name, values in (flags or {}).items()}
        self._gates = dict(sorted((feature_gates or {}).items()))
        self._procs: dict[str, subprocess.Popen[bytes]] = {}

    # ---- paths and state ----
    @property
    def kubeconfig(self) -> Path:
        """Admin kubeconfig (token auth, system:masters)."""
        return self.dir / "kubeconfig"

    @property
    def state_file(self) -> Path:
        return self.dir / "cluster.json"

    def log_file(self, name: str) -> Path:
        return self.dir / "logs" / f"{name}.log"

    @property
    def audit_log(self) -> Path:
        """kube-apiserver's audit log (JSON lines, one audit.k8s.io/v1 Event each) when started with ``audit``."""
        return self.dir / "logs" / "audit.log"

    def _audit_flags(self) -> list[str]:
        """kube-apiserver flags for the audit log: Metadata level (who, what, when, the response code), written
        synchronously so a test reads every request that was answered."""
        if not self._audit:
            return []
        policy = self.dir / "audit-policy.yaml"
        policy.write_text(AUDIT_POLICY)
        return [f"--audit-policy-file={policy}", f"--audit-log-path={self.audit_log}", "--audit-log-mode=blocking",
                "--audit-log-format=json"]

    def _gate_flags(self, gates: Mapping[str, bool] | None = None) -> list[str]:
        """``--feature-gates`` for kube-apiserver and kube-controller-manager (none when no gate is set)."""
        flag = gate_flag(self._gates if gates is None else gates)
        return [f"--feature-gates={flag}"] if flag else []

    def _runtime_config(self) -> list[str]:
        """kube-apiserver's ``--runtime-config`` for the API versions the gates need (none otherwise)."""
        apis = served_apis(self._gates)
        return [f"--runtime-config={','.join(apis)}"] if apis else []

    def _pid_file(self, name: str) -> Path:
        return self.dir / "pids" / f"{name}.pid"

    def state(self) -> dict[str, Any] | None:
        """Contents of cluster.json, or None when there is no cluster."""
        try:
            data: dict[str, Any] = json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return None
        return data

    def _require_state(self) -> dict[str, Any]:
        st = self.state()
        if st is None:
            raise ClusterError(f"no cluster in {self.dir}; run `python -m e2e.cluster up --dir {self.dir}`")
        return st

    @property
    def server(self) -> str:
        """https://127.0.0.1:PORT of kube-apiserver."""
        return str(self._require_state()["server"])

    @property
    def token(self) -> str:
        """Bearer token of the admin user."""
        return str(self._require_state()["token"])

    def api_client(self) -> ApiClient:
        """A kubernetes.client.ApiClient for the admin kubeconfig."""
        from kubernetes import config

        return config.new_client_from_config(config_file=str(self.kubeconfig))

    def _alive(self, name: str) -> bool:
        try:
            pid = int(self._pid_file(name).read_text())
        except (OSError, ValueError):
            return False
        return pid_runs(pid, name)

    def is_up(self) -> bool:
        """etcd and kube-apiserver run and /readyz answers 200."""
        st = self.state()
        return (
            st is not None
            and self._alive("etcd")
            and self._alive("kube-apiserver")
            and _http_status(f"{st['server']}/readyz", st["token"]) == 200
        )

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        """Serialise up/down on one state dir (parallel pytest workers, make targets)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self.dir / ".lock", "w") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            yield

    # ---- up ----
    def up(self, lean: bool = False, build: bool = True) -> LocalCluster:
        """Start the control plane unless it already runs; with ``lean`` skip KCM and kwok."""
        t0 = time.monotonic()
        with self._lock():
            st = self.state()
            if st is not None and self.is_up():
                if st.get("feature_gates", {}) != self._gates:
                    raise ClusterError(f"the cluster in {self.dir} runs with feature gates "
                                       f"{gate_flag(st.get('feature_gates', {})) or 'none'}, not "
                                       f"{gate_flag(self._gates) or 'none'}: take it down first")
                missing = [] if lean else [c for c in EXTRAS if not self._alive(c)]
                if not missing:
                    _log(f"already up: {st['server']} (kubeconfig {self.kubeconfig})")
                    return self
                self._start_extras(st, missing)
                st["lean"] = False
                self._write_state(st)
                _log(f"started {', '.join(missing)} in {time.monotonic() - t0:.1f} s")
                return self
            if st is not None or (self.dir / "pids").exists():
                _log(f"{self.dir} holds a stopped or broken cluster: cleaning it up")
                self._teardown(keep_logs=True)
            try:
                self._start(lean, build)
            except BaseException:
                self._teardown(keep_logs=True)
                raise
        _log(f"up in {time.monotonic() - t0:.1f} s: {self.server}; export KUBECONFIG={self.kubeconfig}")
        return self

    def start_extras(self, *names: str) -> None:
        """Start some of EXTRAS on a running (lean) control plane, e.g. KCM without kwok for a benchmark whose
        fake nodes must stay untouched but whose pods need a controller (DRA's resourceclaim controller)."""
        with self._lock():
            st = self._require_state()
            missing = [n for n in names if n in EXTRAS and not self._alive(n)]
            if missing:
                self._start_extras(st, missing)

    def _write_state(self, st: dict[str, Any]) -> None:
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(st, indent=2) + "\n")
        tmp.replace(self.state_file)

    def _spawn(self, st: dict[str, Any], name: str, args: list[str], env: dict[str, str] | None = None) -> None:
        """Start ``name`` in its own session (survives the CLI, not hit by Ctrl-C) and record its PID."""
        args = override_flags(args, self._flags.get(name, {}))
        log = self.log_file(name)
        with open(log, "ab") as out:
            out.write(f"==== {datetime.now(UTC).isoformat()} {' '.join(args)}\n".encode())
            out.flush()
            proc = subprocess.Popen(
                [str(Path(st["bin_dir"]) / name), *args],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, **(env or {})},
            )
        self._procs[name] = proc
        self._pid_file(name).write_text(f"{proc.pid}\n")
        st.setdefault("pids", {})[name] = proc.pid
        st.setdefault("spawned", {})[name] = {"args": args, "env": env}
        self._write_state(st)

    def _wait(self, name: str, ready: Callable[[], bool], timeout: float) -> None:
        """Poll ``ready`` until it holds; fail fast if the process dies, pointing at its log."""
        t0 = time.monotonic()
        while not ready():
            proc = self._procs.get(name)
            dead = proc.poll() is not None if proc is not None else not self._alive(name)
            waited = time.monotonic() - t0
            if dead or waited > timeout:
                code = proc.returncode if proc is not None else "?"
                why = f"exited (code {code})" if dead else f"not ready in {timeout:.0f} s"
                raise ClusterError(f"{name} {why}; see {self.log_file(name)}\n{self._tail(name)}")
            time.sleep(0.1 if waited < 5 else 0.5)
        _log(f"{name} ready in {time.monotonic() - t0:.1f} s")

    def _tail(self, name: str, lines: int = 25) -> str:
        try:
            text = self.log_file(name).read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join("    " + line for line in text[-lines:])

    def _start(self, lean: bool, build: bool) -> None:
        bin_dir = self._bin_dir or build_binaries(build)
        needed = ["etcd", "kube-apiserver", *([] if lean else EXTRAS)]
        absent = [b for b in needed if not (bin_dir / b).is_file()]
        if absent:
            raise ClusterError(f"missing binaries in {bin_dir}: {absent}; run bash {BUILD_SH}")
        for sub in ("pids", "logs"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        pki = self.dir / "pki"
        has_ca = _make_pki(pki)
        token = secrets.token_hex(24)
        (self.dir / "tokens.csv").write_text(f'{token},admin,admin,"system:masters"\n')
        (self.dir / "tokens.csv").chmod(0o600)

        etcd_data = self.dir / "etcd"
        shm = Path("/dev/shm")
        if shm.is_dir() and os.access(shm, os.W_OK):
            etcd_data = Path(tempfile.mkdtemp(prefix="py-scheduler-etcd-", dir=shm))
            (self.dir / "etcd").symlink_to(etcd_data)
        etcd_port, peer_port, api_port = _free_ports(3)
        server = f"https://127.0.0.1:{api_port}"
        st: dict[str, Any] = {
            "server": server,
            "token": token,
            "kubeconfig": str(self.kubeconfig),
            "bin_dir": str(bin_dir),
            "versions": pinned_versions(),
            "ports": {"etcd": etcd_port, "etcd_peer": peer_port, "kube-apiserver": api_port},
            "pids": {},
            "etcd_data_dir": str(etcd_data),
            "tls_verified": has_ca,
            "lean": lean,
            "feature_gates": self._gates,
            "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        self._write_state(st)

        etcd_url, peer_url = f"http://127.0.0.1:{etcd_port}", f"http://127.0.0.1:{peer_port}"
        self._spawn(st, "etcd", [
            "--name=py-scheduler", f"--data-dir={etcd_data}",
            f"--listen-client-urls={etcd_url}", f"--advertise-client-urls={etcd_url}",
            f"--listen-peer-urls={peer_url}", f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=py-scheduler={peer_url}", "--unsafe-no-fsync=true",
            "--log-level=warn", f"--quota-backend-bytes={8 << 30}",
        ])  # fmt: skip
        self._wait("etcd", lambda: _http_status(f"{etcd_url}/health") == 200, 30)

        tls = [f"--tls-cert-file={pki / 'apiserver.crt'}", f"--tls-private-key-file={pki / 'apiserver.key'}"]
        self._spawn(st, "kube-apiserver", [
            f"--etcd-servers={etcd_url}", "--bind-address=127.0.0.1", f"--secure-port={api_port}",
            f"--advertise-address={ADVERTISE_ADDRESS}", "--endpoint-reconciler-type=none",
            f"--cert-dir={pki}", *(tls if has_ca else []),
            f"--token-auth-file={self.dir / 'tokens.csv'}", "--authorization-mode=RBAC",
            f"--service-account-issuer={SA_ISSUER}", f"--service-account-key-file={pki / 'sa.key'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
            "--allow-privileged=true", f"--profiling={str(self._profiling).lower()}",
            "--max-requests-inflight=400", "--max-mutating-requests-inflight=200", *self._audit_flags(),
            *self._gate_flags(), *self._runtime_config(),
        ])  # fmt: skip
        self._wait("kube-apiserver", lambda: _http_status(f"{server}/readyz", token) == 200, 120)
        self._write_kubeconfig(st, pki / ("ca.crt" if has_ca else ""))
        if not lean:
            self._start_extras(st, list(EXTRAS))

    def _write_kubeconfig(self, st: dict[str, Any], ca: Path) -> None:
        cluster: dict[str, Any] = {"server": st["server"]}
        if st.get("tls_verified"):
            cluster["certificate-authority-data"] = base64.b64encode(ca.read_bytes()).decode()
        else:
            cluster["insecure-skip-tls-verify"] = True
        cfg = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": CONTEXT, "cluster": cluster}],
            "users": [{"name": "admin", "user": {"token": st["token"]}}],
            "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": "admin"}}],
            "current-context": CONTEXT,
        }
        self.kubeconfig.write_text(yaml.safe_dump(cfg, sort_keys=False))
        self.kubeconfig.chmod(0o600)

    def _start_extras(self, st: dict[str, Any], names: Sequence[str]) -> None:
        """Start kube-controller-manager and/or kwok against the running apiserver."""
        pki = self.dir / "pki"
        kubeconfig = f"--kubeconfig={self.kubeconfig}"
        if "kube-controller-manager" in names:
            ca = pki / "ca.crt" if st.get("tls_verified") else pki / "apiserver.crt"
            self._spawn(st, "kube-controller-manager", [
                kubeconfig, "--leader-elect=false", "--use-service-account-credentials=false",
                f"--service-account-private-key-file={pki / 'sa.key'}",
                *([f"--root-ca-file={ca}"] if ca.is_file() else []),
                "--secure-port=0", "--controllers=*", "--profiling=false",
                "--kube-api-qps=100", "--kube-api-burst=200",
                # kwok renews every node's lease; on a loaded 2-core machine a renewal can come late, and
                # the default 50 s grace would taint a healthy simulated node unreachable (seen once in CI).
                "--node-monitor-grace-period=3m", *self._gate_flags(st.get("feature_gates")),
            ])  # fmt: skip
        if "kwok" in names:
            (kwok_port,) = _free_ports(1)
            st["ports"]["kwok"] = kwok_port
            # HOME is redirected so a stray ~/.kwok/kwok.yaml (always loaded by kwok) cannot change stages.
            self._spawn(st, "kwok", [
                kubeconfig, "--manage-all-nodes=true", f"--cidr={POD_CIDR}", f"--node-ip={NODE_IP}",
                f"--server-address=127.0.0.1:{kwok_port}",
            ], env={"HOME": str(self.dir)})  # fmt: skip
            self._wait("kwok", lambda: _http_status(f"http://127.0.0.1:{kwok_port}/healthz") == 200, 60)
        if "kube-controller-manager" in names:
            # The serviceaccount controller creating default/default proves the controllers run.
            sa = f"{st['server']}/api/v1/namespaces/default/serviceaccounts/default"
            self._wait("kube-controller-manager", lambda: _http_status(sa, st["token"]) == 200, 90)

    # ---- faults (e2e/chaos) ----
    def signal(self, name: str, sig: int) -> None:
        """Send ``sig`` to one component: SIGKILL, SIGSTOP and SIGCONT inject faults."""
        pid = int(self._pid_file(name).read_text())
        if pid_runs(pid, name):
            os.kill(pid, sig)

    def kill(self, name: str) -> None:
        """kill -9 one component and wait until it is gone."""
        self.signal(name, signal.SIGKILL)
        pid = int(self._pid_file(name).read_text())
        deadline = time.monotonic() + 10
        while pid_runs(pid, name) and time.monotonic() < deadline:
            if name in self._procs:
                self._procs[name].poll()
            time.sleep(0.05)

    def restart(self, name: str, timeout: float = 120.0) -> None:
        """Start a killed component again with the arguments it first ran with, and wait until it serves."""
        st = self._require_state()
        spawned = st["spawned"][name]
        ports = {"etcd": ("etcd", "etcd_peer"), "kube-apiserver": ("kube-apiserver",)}.get(name, ())
        for key in ports:  # a killed process's listener can linger for a moment
            _wait_port_free(st["ports"][key], timeout)
        self._spawn(st, name, list(spawned["args"]), spawned.get("env"))
        if name == "etcd":
            url = f"http://127.0.0.1:{st['ports']['etcd']}/health"
            self._wait(name, lambda: _http_status(url) == 200, timeout)
        elif name == "kube-apiserver":
            self._wait(name, lambda: _http_status(f"{st['server']}/readyz", st["token"]) == 200, timeout)

    def etcd_delete(self, key: str) -> None:
        """Delete one key straight from etcd (its JSON gateway), behind the API server's back: a change
        no watch of the API server reports, as while it is down."""
        port = self._require_state()["ports"]["etcd"]
        body = json.dumps({"key": base64.b64encode(key.encode()).decode()}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v3/kv/deleterange", data=body, method="POST")
        with urllib.request.urlopen(req, timeout=10) as resp:
            resp.read()

    # ---- down ----
    def down(self, keep_logs: bool = False) -> None:
        """Stop the processes this cluster started and remove its state (and /dev/shm data)."""
        if not self.dir.exists():
            _log(f"no cluster in {self.dir}")
            return
        with self._lock():
            self._teardown(keep_logs)

    def _teardown(self, keep_logs: bool) -> None:
        t0 = time.monotonic()
        stopped = self._stop_processes()
        etcd_data = (self.state() or {}).get("etcd_data_dir")
        if etcd_data and Path(etcd_data).name.startswith("py-scheduler-etcd-"):
            shutil.rmtree(etcd_data, ignore_errors=True)
        if not keep_logs:
            shutil.rmtree(self.dir, ignore_errors=True)
        elif self.dir.exists():
            for entry in self.dir.iterdir():
                if entry.name in ("logs", ".lock"):
                    continue
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)
        _log(f"down in {time.monotonic() - t0:.1f} s (stopped: {', '.join(stopped) or 'nothing'})")

    def _stop_processes(self, grace: float = 10.0) -> list[str]:
        """SIGTERM, then SIGKILL after ``grace`` s; only PIDs from our pid files that still run our binary."""
        targets: dict[str, int] = {}
        for name in reversed(COMPONENTS):
            pid_file = self._pid_file(name)
            try:
                pid = int(pid_file.read_text())
            except (OSError, ValueError):
                continue
            if pid_runs(pid, name):
                targets[name] = pid
            pid_file.unlink(missing_ok=True)

        def alive() -> dict[str, int]:
            for proc in self._procs.values():
                proc.poll()  # reap our own children so they do not linger as zombies
            return {n: p for n, p in targets.items() if pid_runs(p, n)}

        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
            for pid in alive().values():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            deadline = time.monotonic() + wait
            while alive() and time.monotonic() < deadline:
                time.sleep(0.1)
        if alive():
            raise ClusterError(f"could not stop {sorted(alive())}")
        self._procs.clear()
        return list(targets)

    def __enter__(self) -> LocalCluster:
        return self.up()

    def __exit__(self, *exc: object) -> None:
        self.down()


# --------------------------------------------------------------------------------------------------
# fake nodes


def _parse_taint(spec: str | Mapping[str, str]) -> dict[str, str]:
    """``key=value:Effect`` or ``key:Effect`` (kubectl taint syntax) into a taint dict."""
    if isinstance(spec, Mapping):
        return dict(spec)
    kv, sep, effect = spec.rpartition(":")
    if not sep or effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
        raise ValueError(f"bad taint {spec!r}: want key[=value]:NoSchedule|PreferNoSchedule|NoExecute")
    key, _, value = kv.partition("=")
    return {"key": key, "value": value, "effect": effect} if value else {"key": key, "effect": effect}


def node_manifest(
    name: str,
    index: int,
    *,
    zones: int = 1,
    regions: int = 1,
    cpu: str = "4",
    memory: str = "32Gi",
    pods: int = 110,
    ephemeral_storage: str = "100Gi",
    labels: Mapping[str, str] | None = None,
    taints: Sequence[str | Mapping[str, str]] = (),
    now: str | None = None,
) -> dict[str, Any]:
    """A Ready v1.Node with status, like scheduler_perf's; zone ``zone-<index % zones>``.

    Zone z belongs to region ``region-<z % regions>`` so zones nest in regions. zones/regions = 0
    leave the label out. Ready=True + phase Running make kwok adopt it without re-initialising it.
    """
    now = now or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    all_labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
    }
    if zones > 0:
        zone = index % zones
        all_labels["topology.kubernetes.io/zone"] = f"zone-{zone}"
        if regions > 0:
            all_labels["topology.kubernetes.io/region"] = f"region-{zone % regions}"
    elif regions > 0:
        all_labels["topology.kubernetes.io/region"] = f"region-{index % regions}"
    all_labels.update(labels or {})
    resources = {"cpu": cpu, "memory": memory, "pods": str(pods), "ephemeral-storage": ephemeral_storage}

    def cond(type_: str, status: str, reason: str, message: str) -> dict[str, str]:
        return {
            "type": type_,
            "status": status,
            "reason": reason,
            "message": message,
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }

    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": all_labels},
        "spec": {"taints": [_parse_taint(t) for t in taints]} if taints else {},
        "status": {
            "capacity": resources,
            "allocatable": dict(resources),
            "phase": "Running",
            "conditions": [
                cond("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
                cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory"),
                cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            ],
        },
    }


def _client_for_pool(client: ApiClient | str | os.PathLike[str] | None, workers: int) -> ApiClient:
    """A private ApiClient whose connection pool fits ``workers`` concurrent requests."""
    from kubernetes import client as k8s
    from kubernetes import config

    if isinstance(client, k8s.ApiClient):
        cfg = copy.deepcopy(client.configuration)
    else:
        cfg = k8s.Configuration()
        path = client or LocalCluster().kubeconfig
        config.load_kube_config(config_file=str(path), client_configuration=cfg)
    cfg.connection_pool_maxsize = max(workers, 1)
    return k8s.ApiClient(configuration=cfg)


def create_nodes(
    client: ApiClient | str | os.PathLike[str] | None,
    count: int,
    *,
    zones: int = 1,
    regions: int = 1,
    cpu: str = "4",
    memory: str = "32Gi",
    pods: int = 110,
    ephemeral_storage: str = "100Gi",
    labels: Mapping[str, str] | None = None,
    taints: Sequence[str | Mapping[str, str]] = (),
    prefix: str = "node",
    start: int = 0,
    workers: int = 16,
) -> list[str]:
    """Create nodes ``<prefix>-<start>`` .. ``<prefix>-<start+count-1>``, one POST each, in parallel.

    ``client`` is an ApiClient, a kubeconfig path, or None for ``.cluster/kubeconfig``.
    Existing nodes (409) are left as they are. Returns the node names.
    """
    from kubernetes import client as k8s

    api_client = _client_for_pool(client, workers)
    # Typed as Any: a plain dict body and a raw urllib3 response (no model deserialisation) are intended.
    create_node: Callable[..., Any] = k8s.CoreV1Api(api_client).create_node
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    names = [f"{prefix}-{i}" for i in range(start, start + count)]

    def post(i: int) -> None:
        body = node_manifest(
            names[i], start + i, zones=zones, regions=regions, cpu=cpu, memory=memory, pods=pods,
            ephemeral_storage=ephemeral_storage, labels=labels, taints=taints, now=now,
        )  # fmt: skip
        try:
            resp = create_node(body, _preload_content=False, _request_timeout=60)
            resp.read()
            resp.release_conn()
        except k8s.ApiException as e:
            if e.status != 409:
                raise ClusterError(f"creating node {names[i]}: HTTP {e.status}: {e.body}") from e

    try:
        with ThreadPoolExecutor(max_workers=max(workers, 1)) as pool:
            list(pool.map(post, range(count)))
    finally:
        api_client.close()
    return names


# --------------------------------------------------------------------------------------------------
# CLI


def _node_options() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("node options")
    g.add_argument("--zones", type=int, default=1, help="zone-<i %% Z> labels (0: none) [1]")
    g.add_argument("--regions", type=int, default=1, help="region-<zone %% R> labels (0: none) [1]")
    g.add_argument("--cpu", default="4")
    g.add_argument("--memory", default="32Gi")
    g.add_argument("--pods", type=int, default=110)
    g.add_argument("--ephemeral-storage", default="100Gi")
    g.add_argument("--label", action="append", default=[], metavar="K=V")
    g.add_argument("--taint", action="append", default=[], metavar="K[=V]:EFFECT")
    g.add_argument("--prefix", default="node", help="names are <prefix>-<i> [node]")
    g.add_argument("--start", type=int, default=0, help="first index i [0]")
    g.add_argument("--workers", type=int, default=16, help="concurrent POSTs [16]")
    return p


def _create_from_args(client: str | os.PathLike[str], count: int, args: argparse.Namespace) -> None:
    labels = {}
    for kv in args.label:
        k, sep, v = kv.partition("=")
        if not sep:
            raise SystemExit(f"bad --label {kv!r}: want K=V")
        labels[k] = v
    t0 = time.monotonic()
    names = create_nodes(
        client, count, zones=args.zones, regions=args.regions, cpu=args.cpu, memory=args.memory,
        pods=args.pods, ephemeral_storage=args.ephemeral_storage, labels=labels, taints=args.taint,
        prefix=args.prefix, start=args.start, workers=args.workers,
    )  # fmt: skip
    span = f"{names[0]}..{names[-1]}" if names else "none"
    _log(f"nodes {span} ({count}) present after {time.monotonic() - t0:.1f} s")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m e2e.cluster {up,down,nodes,status}``."""
    parser = argparse.ArgumentParser(prog="python -m e2e.cluster", description=__doc__.splitlines()[0])
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--dir", default=DEFAULT_DIR, help=f"state directory [{DEFAULT_DIR}]")
    sub = parser.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up", parents=[common, _node_options()], help="start (idempotent)")
    up.add_argument("--lean", action="store_true", help="etcd + kube-apiserver only")
    up.add_argument("--no-build", action="store_true", help="do not run build.sh, only use its cache")
    up.add_argument("--nodes", type=int, default=0, metavar="N", help="also create N nodes")
    up.add_argument("--feature-gates", default="", metavar="GATE=BOOL,...",
                    help="for kube-apiserver and kube-controller-manager (GenericWorkload=true also serves "
                         "scheduling.k8s.io/v1beta1); --workload is the Workload API's gates")
    up.add_argument("--workload", action="store_true",
                    help=f"the Workload API's gates: {gate_flag(WORKLOAD_GATES)}")
    down = sub.add_parser("down", parents=[common], help="stop and remove state")
    down.add_argument("--keep-logs", action="store_true")
    nodes = sub.add_parser("nodes", parents=[common, _node_options()], help="create fake nodes")
    nodes.add_argument("--count", type=int, required=True)
    nodes.add_argument("--kubeconfig", help="default: <dir>/kubeconfig")
    sub.add_parser("status", parents=[common], help="print cluster.json; exit 1 when down")
    args = parser.parse_args(argv)

    gates: dict[str, bool] = {}
    if args.cmd == "up":
        try:
            gates = {**(WORKLOAD_GATES if args.workload else {}), **parse_gates(args.feature_gates)}
        except ValueError as e:
            parser.error(str(e))
    cluster = LocalCluster(args.dir, feature_gates=gates)
    try:
        if args.cmd == "up":
            cluster.up(lean=args.lean, build=not args.no_build)
            if args.nodes:
                _create_from_args(cluster.kubeconfig, args.nodes, args)
        elif args.cmd == "down":
            cluster.down(keep_logs=args.keep_logs)
        elif args.cmd == "nodes":
            _create_from_args(args.kubeconfig or cluster.kubeconfig, args.count, args)
        else:
            st = cluster.state()
            running = {c: cluster._alive(c) for c in COMPONENTS}
            print(json.dumps({"up": cluster.is_up(), "running": running, "state": st}, indent=2))
            return 0 if cluster.is_up() else 1
    except ClusterError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0
