"""The real node: containerd (runc, CNI bridge) plus kubelet and kube-proxy from build.sh, run as plain
processes whose state lives under one directory, and a teardown that leaves the host as it found it.

Everything the node changes outside its state directory is recorded first and undone by ``down``: the
port-less bridge that carries the node IP, the CNI bridge, network namespaces, iptables chains, mounts,
kubepods cgroups, kernel tunables the kubelet sets, /var/log/containers links and /run/containerd.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from e2e.debian import AptError, apt_install
from e2e.process import pid_runs

NODE_NAME = "e2e-node"
# The node's address lives on a port-less bridge of its own (a dummy link where the kernel has no dummy
# driver, as here), so nothing depends on this machine's network.
NODE_LINK = "pysched-node0"
NODE_IP = "10.246.0.1"
BRIDGE = "pysched-cni0"
CNI_NETWORK = "pysched"
POD_SUBNET = "10.245.0.0/24"
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
# Debian packages and a file each one installs (present: nothing to do).
PACKAGES = {
    "containerd": "/usr/bin/containerd",
    "runc": "/usr/sbin/runc",
    "containernetworking-plugins": "/usr/lib/cni/bridge",
    "iptables": "/usr/sbin/iptables",
    "conntrack": "/usr/sbin/conntrack",
    "buildah": "/usr/bin/buildah",
    "mmdebstrap": "/usr/bin/mmdebstrap",
}
# What the kubelet's container manager sets on start (setupKernelTunables); restored by ``down``.
KERNEL_TUNABLES = (
    "vm/overcommit_memory",
    "vm/panic_on_oom",
    "kernel/panic",
    "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys",
    "kernel/keys/root_maxbytes",
)
IPTABLES_TABLES = ("filter", "nat", "mangle")
NETNS_DIR = Path("/run/netns")
CONTAINER_LOGS = Path("/var/log/containers")
CGROUP_ROOT = Path("/sys/fs/cgroup")


class NodeError(RuntimeError):
    """The node could not be started, reached or cleaned up."""


def log(msg: str) -> None:
    print(f"[node] {msg}", file=sys.stderr, flush=True)


def run(argv: Sequence[str], check: bool = True, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    """Run a host tool, capturing its output; a failure names the command and says what it printed."""
    res = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False)
    if check and res.returncode != 0:
        raise NodeError(f"{shlex.join(argv)} exited {res.returncode}: {(res.stderr or res.stdout).strip()[-2000:]}")
    return res


def ensure_packages() -> list[str]:
    """Install the Debian packages the node and the image build need, only those missing (as the Prometheus
    fixture does); returns what was installed."""
    missing = [pkg for pkg, path in PACKAGES.items() if not Path(path).exists()]
    if not missing:
        return []
    log(f"apt-get install {' '.join(missing)}")
    try:
        apt_install(missing)
    except AptError as e:
        raise NodeError(str(e)) from e
    return missing


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return int(resp.status) == 200
    except (urllib.error.URLError, OSError):
        return False


def wait_for(what: str, ok: Callable[[], bool], timeout: float, dead: Callable[[], str | None] | None = None) -> float:
    """Poll ``ok`` until it holds; ``dead`` returns why waiting is pointless (a process exited)."""
    t0 = time.monotonic()
    while not ok():
        why = dead() if dead else None
        if why:
            raise NodeError(f"{what}: {why}")
        if time.monotonic() - t0 > timeout:
            raise NodeError(f"{what}: not within {timeout:.0f} s")
        time.sleep(0.5)
    return time.monotonic() - t0


class RealNode:
    """containerd + kubelet + kube-proxy (+ the control plane's kube-scheduler, which places the
    scheduler's own pods) under ``state_dir``; ``up`` records the host state that ``down`` restores."""

    def __init__(self, state_dir: Path, bin_dir: Path, kubeconfig: Path) -> None:
        self.dir = state_dir.resolve()
        self.bin_dir = bin_dir
        self.kubeconfig = kubeconfig
        self._procs: dict[str, subprocess.Popen[bytes]] = {}

    # ---- paths ----
    @property
    def sock(self) -> Path:
        return self.dir / "run" / "containerd.sock"

    def log_file(self, name: str) -> Path:
        return self.dir / "logs" / f"{name}.log"

    @property
    def _before_file(self) -> Path:
        return self.dir / "host-before.json"

    def ctr(self, *args: str, check: bool = True, timeout: float = 300.0) -> subprocess.CompletedProcess[str]:
        """containerd's own client on this node's socket, in the CRI's namespace."""
        return run(["ctr", f"--address={self.sock}", "--namespace=k8s.io", *args], check=check, timeout=timeout)

    # ---- processes ----
    def _spawn(self, name: str, argv: Sequence[str], env: Mapping[str, str] | None = None) -> None:
        with open(self.log_file(name), "ab") as out:
            proc = subprocess.Popen(
                list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True, env={**os.environ, **(env or {})},
            )  # fmt: skip
        self._procs[name] = proc
        (self.dir / "pids" / f"{name}.pid").write_text(f"{proc.pid}\n")

    def _exited(self, name: str) -> str | None:
        proc = self._procs.get(name)
        if proc is not None and proc.poll() is not None:
            tail = self.log_file(name).read_text(errors="replace").splitlines()[-20:]
            return f"{name} exited with {proc.returncode}; {self.log_file(name)}:\n" + "\n".join(tail)
        return None

    def _stop(self, name: str, grace: float = 15.0) -> None:
        """SIGTERM, then SIGKILL; only the PID from our pid file, and only while it runs ``name``."""
        pid_file = self.dir / "pids" / f"{name}.pid"
        try:
            pid = int(pid_file.read_text())
        except (OSError, ValueError):
            return
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
            if not pid_runs(pid, name):
                break
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
            deadline = time.monotonic() + wait
            while pid_runs(pid, name) and time.monotonic() < deadline:
                if name in self._procs:
                    self._procs[name].poll()
                time.sleep(0.1)
        if pid_runs(pid, name):
            raise NodeError(f"could not stop {name} (pid {pid})")
        pid_file.unlink(missing_ok=True)
        self._procs.pop(name, None)

    # ---- host state ----
    def _record_host(self) -> None:
        """What ``down`` must restore or must leave alone (it removes only what was not there before)."""
        before: dict[str, Any] = {
            "tunables": {t: Path("/proc/sys", t).read_text().strip() for t in KERNEL_TUNABLES},
            "netns": sorted(p.name for p in NETNS_DIR.iterdir()) if NETNS_DIR.is_dir() else None,
            "chains": _kube_chains(),
            "container_logs_dir": CONTAINER_LOGS.is_dir(),
            "run_containerd": Path("/run/containerd").exists(),
        }
        self._before_file.write_text(json.dumps(before, indent=1) + "\n")

    # ---- up ----
    def up(self, timeout: float = 180.0) -> float:
        """Start containerd, kube-proxy, kubelet and kube-scheduler; returns seconds until the node is Ready."""
        t0 = time.monotonic()
        for sub in ("pids", "logs", "run", "cni/net.d", "cni/ipam", "pod-logs", "kubelet"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        self._record_host()
        run(["ip", "link", "add", NODE_LINK, "type", "bridge"])
        run(["ip", "addr", "add", f"{NODE_IP}/32", "dev", NODE_LINK])
        run(["ip", "link", "set", NODE_LINK, "up"])
        self._write_configs()
        self._spawn("containerd", ["containerd", f"--config={self.dir / 'containerd.toml'}"])
        answers = lambda: self.ctr("version", check=False).returncode == 0  # noqa: E731
        waited = wait_for("containerd", answers, 60, lambda: self._exited("containerd"))
        log(f"containerd ready in {waited:.1f} s")
        return time.monotonic() - t0

    def start_kube(self, timeout: float = 180.0) -> float:
        """kubelet and kube-scheduler (after the images are in containerd), then kube-proxy once the node
        is registered (it reads the node IP from the Node); returns seconds until all three serve."""
        t0 = time.monotonic()
        bins = self.bin_dir
        self._spawn("kubelet", [
            str(bins / "kubelet"), f"--config={self.dir / 'kubelet.yaml'}", f"--kubeconfig={self.kubeconfig}",
            f"--root-dir={self.dir / 'kubelet'}", f"--hostname-override={NODE_NAME}", f"--node-ip={NODE_IP}",
            "--v=2",
        ])  # fmt: skip
        self._spawn("kube-scheduler", [
            str(bins / "kube-scheduler"), f"--kubeconfig={self.kubeconfig}", "--leader-elect=false",
            "--secure-port=0", "--v=1",
        ])  # fmt: skip

        def dead() -> str | None:
            return self._exited("kubelet") or self._exited("kube-proxy") or self._exited("kube-scheduler")

        waited = wait_for(f"node {NODE_NAME} Ready", self._node_ready, timeout, dead)
        log(f"kubelet: node {NODE_NAME} Ready in {waited:.1f} s")
        self._spawn("kube-proxy", [str(bins / "kube-proxy"), f"--config={self.dir / 'kube-proxy.yaml'}", "--v=2"])
        healthz = str(yaml.safe_load((self.dir / "kube-proxy.yaml").read_text())["healthzBindAddress"])
        waited = wait_for("kube-proxy healthy", lambda: _http_ok(f"http://{healthz}/healthz"), 60, dead)
        log(f"kube-proxy healthy in {waited:.1f} s")
        return time.monotonic() - t0

    def _node_ready(self) -> bool:
        res = run(
            [str(self.bin_dir / "kubectl"), f"--kubeconfig={self.kubeconfig}", "get", "node", NODE_NAME,
             "-o", "jsonpath={.status.conditions[?(@.type=='Ready')].status}"],
            check=False,
        )  # fmt: skip
        return res.returncode == 0 and res.stdout.strip() == "True"

    def _write_configs(self) -> None:
        d = self.dir
        (d / "containerd.toml").write_text(containerd_config(d, self.sock))
        (d / "cni" / "net.d" / f"10-{CNI_NETWORK}.conflist").write_text(
            json.dumps(cni_config(d / "cni" / "ipam"), indent=2) + "\n"
        )
        (d / "kubelet.yaml").write_text(yaml.safe_dump(kubelet_config(self.sock, d / "pod-logs"), sort_keys=False))
        (d / "kube-proxy.yaml").write_text(yaml.safe_dump(kube_proxy_config(self.kubeconfig), sort_keys=False))

    # ---- down ----
    def down(self) -> list[str]:
        """Stop everything and restore the host; every step runs even when an earlier one fails, and the
        failures are returned (the caller reports them) rather than hiding the test's own outcome."""
        problems: list[str] = []

        def step(what: str, fn: Callable[[], object]) -> None:
            t0 = time.monotonic()
            try:
                fn()
            except Exception as e:
                problems.append(f"{what}: {e}")
            if time.monotonic() - t0 > 2:
                log(f"teardown: {what} took {time.monotonic() - t0:.1f} s")

        before = self._before()
        for name in ("kube-scheduler", "kubelet", "kube-proxy"):
            step(f"stop {name}", lambda name=name: self._stop(name))
        step("remove containers", self._remove_containers)
        step("stop containerd", lambda: self._stop("containerd"))
        step("unmount", self._unmount)
        step("network namespaces", lambda: self._remove_netns(before))
        step("iptables", lambda: self._clean_iptables(before))
        step("links", self._remove_links)
        step("cgroups", _remove_kubepods_cgroups)
        step("kernel tunables", lambda: self._restore_tunables(before))
        step("leftover files", lambda: self._remove_files(before))
        return problems

    def _before(self) -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads(self._before_file.read_text())
        except (OSError, ValueError):
            return {}
        return data

    def _remove_containers(self) -> None:
        """Kill what the kubelet left running (it is stopped by now) and delete the containers."""
        if not self.sock.exists() or self.ctr("version", check=False).returncode != 0:
            return
        for task in self.ctr("tasks", "ls", "-q", check=False).stdout.split():
            self.ctr("tasks", "kill", "--signal=SIGKILL", task, check=False)
        for task in self.ctr("tasks", "ls", "-q", check=False).stdout.split():
            self.ctr("tasks", "delete", "--force", task, check=False)
        for container in self.ctr("containers", "ls", "-q", check=False).stdout.split():
            self.ctr("containers", "delete", container, check=False)

    def _unmount(self) -> None:
        """Everything mounted below the state dir (container rootfs, volumes), deepest first."""
        for target in sorted(mounts_under(self.dir), key=lambda p: -len(p.parts)):
            run(["umount", "--lazy", str(target)], check=False)
        left = mounts_under(self.dir)
        if left:
            raise NodeError(f"still mounted: {[str(p) for p in left]}")

    def _remove_netns(self, before: Mapping[str, Any]) -> None:
        if not NETNS_DIR.is_dir():
            return
        old = set(before.get("netns") or [])
        for ns in NETNS_DIR.iterdir():
            if ns.name not in old and ns.name.startswith("cni-"):
                run(["umount", "--lazy", str(ns)], check=False)
                ns.unlink(missing_ok=True)
        if before.get("netns") is None and not any(NETNS_DIR.iterdir()):
            NETNS_DIR.rmdir()

    def _clean_iptables(self, before: Mapping[str, Any]) -> None:
        kube_proxy = self.bin_dir / "kube-proxy"
        if kube_proxy.exists():
            run([str(kube_proxy), "--cleanup"], check=False)
        _remove_new_kube_chains(before.get("chains") or {})

    def _remove_links(self) -> None:
        for link in (BRIDGE, NODE_LINK):
            if Path("/sys/class/net", link).exists():
                run(["ip", "link", "delete", link])

    def _restore_tunables(self, before: Mapping[str, Any]) -> None:
        for tunable, value in (before.get("tunables") or {}).items():
            path = Path("/proc/sys", tunable)
            if path.read_text().strip() != value:
                path.write_text(f"{value}\n")

    def _remove_files(self, before: Mapping[str, Any]) -> None:
        """Links the kubelet put in /var/log/containers, libcni's result cache for our network, containerd's
        shim sockets; then the state dir itself (kept: its logs, for a failed run's post-mortem)."""
        if CONTAINER_LOGS.is_dir():
            for entry in CONTAINER_LOGS.iterdir():
                if entry.is_symlink() and str(os.readlink(entry)).startswith(str(self.dir)):
                    entry.unlink()
            if not before.get("container_logs_dir", True) and not any(CONTAINER_LOGS.iterdir()):
                CONTAINER_LOGS.rmdir()
        results = Path("/var/lib/cni/results")
        if results.is_dir():
            for entry in results.glob(f"{CNI_NETWORK}-*"):
                entry.unlink()
        if not before.get("run_containerd", True):
            shutil.rmtree("/run/containerd", ignore_errors=True)
        for entry in self.dir.iterdir():
            if entry.name not in ("logs", "host-before.json") and not mounts_under(entry):
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)


# --------------------------------------------------------------------------------------------------
# configuration files


def containerd_config(state: Path, sock: Path) -> str:
    """containerd 1.6 (config version 2) with every path under ``state``, runc on cgroupfs, CNI from
    Debian's plugin directory and the locally made pause image as the sandbox image."""
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return f"""version = 2
root = "{state / "containerd" / "root"}"
state = "{state / "containerd" / "state"}"

[grpc]
  address = "{sock}"

[plugins."io.containerd.internal.v1.opt"]
  path = "{state / "containerd" / "opt"}"

[{cri}]
  sandbox_image = "{PAUSE_IMAGE}"
  enable_selinux = false
  # Without CAP_SYS_RESOURCE (this sandbox's root lacks it) no process may lower its oom_score_adj, so
  # runc would fail every pod sandbox (-998); clamp to containerd's own score instead.
  restrict_oom_score_adj = {str(not _has_cap_sys_resource()).lower()}

[{cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[{cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[{cri}.containerd.runtimes.runc.options]
  SystemdCgroup = false

[{cri}.cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = "{state / "cni" / "net.d"}"
"""


def _has_cap_sys_resource() -> bool:
    """Whether this process's effective capabilities include CAP_SYS_RESOURCE (bit 24)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) >> 24 & 1)
    return False


def cni_config(ipam_dir: Path) -> dict[str, Any]:
    """A bridge with host-local addresses; no masquerade (pods only talk to this host: the API server
    behind the kubernetes Service, and the API server's service proxy to them)."""
    return {
        "cniVersion": "1.0.0",
        "name": CNI_NETWORK,
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": True,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": POD_SUBNET}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(ipam_dir),
                },
            }
        ],
    }


def kubelet_config(sock: Path, pod_logs: Path) -> dict[str, Any]:
    """KubeletConfiguration for this machine; docs/deploy-node.md says why each setting differs from
    a production node's."""
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "failCgroupV1": False,
        "cgroupDriver": "cgroupfs",
        "containerRuntimeEndpoint": f"unix://{sock}",
        "address": NODE_IP,
        "port": free_port(),
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": free_port(),
        "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
        "authorization": {"mode": "AlwaysAllow"},
        "podLogsDir": str(pod_logs),
        "resolvConf": "/etc/resolv.conf",
        "failSwapOn": False,
        "evictionHard": {
            "memory.available": "100Mi",
            "nodefs.available": "1%",
            "imagefs.available": "1%",
            "nodefs.inodesFree": "1%",
        },
        "syncFrequency": "10s",
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
    }


def kube_proxy_config(kubeconfig: Path) -> dict[str, Any]:
    """iptables mode; leaves the host's conntrack sysctls and route_localnet alone."""
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "hostnameOverride": NODE_NAME,
        "mode": "iptables",
        "clusterCIDR": POD_SUBNET,
        "healthzBindAddress": f"127.0.0.1:{free_port()}",
        "metricsBindAddress": f"127.0.0.1:{free_port()}",
        "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
        "iptables": {"localhostNodePorts": False},
    }


# --------------------------------------------------------------------------------------------------
# host helpers


def mounts_under(root: Path) -> list[Path]:
    prefix = str(root)
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        target = line.split()[4].replace("\\040", " ")
        if target == prefix or target.startswith(prefix + "/"):
            found.append(Path(target))
    return found


def _kube_chains() -> dict[str, list[str]]:
    """KUBE-* chains per ``binary/table`` (iptables and ip6tables), so ``down`` removes only new ones."""
    chains: dict[str, list[str]] = {}
    for binary in ("iptables", "ip6tables"):
        if not shutil.which(binary):
            continue
        for table in IPTABLES_TABLES:
            res = run([binary, "-w", "-t", table, "-S"], check=False)
            chains[f"{binary}/{table}"] = [
                line.split()[1] for line in res.stdout.splitlines() if line.startswith("-N KUBE-")
            ]
    return chains


def _remove_new_kube_chains(before: Mapping[str, Sequence[str]]) -> None:
    """Delete the KUBE-* chains the kubelet and kube-proxy created (and the rules jumping to them)."""
    for key, now in _kube_chains().items():
        binary, table = key.split("/")
        new = set(now) - set(before.get(key, []))
        if not new:
            continue
        rules = run([binary, "-w", "-t", table, "-S"]).stdout.splitlines()
        for rule in rules:
            parts = shlex.split(rule)
            if parts[:1] == ["-A"] and parts[1] not in new and any(p in new for p in parts[2:]):
                run([binary, "-w", "-t", table, "-D", *parts[1:]], check=False)
        for chain in new:
            run([binary, "-w", "-t", table, "-F", chain], check=False)
        for chain in new:
            run([binary, "-w", "-t", table, "-X", chain], check=False)


def _remove_kubepods_cgroups() -> None:
    """The kubelet's cgroupfs tree (``kubepods``) in every v1 hierarchy, leaves first."""
    for hierarchy in CGROUP_ROOT.iterdir() if CGROUP_ROOT.is_dir() else ():
        top = hierarchy / "kubepods"
        if not top.is_dir():
            continue
        dirs = [Path(d) for d, _, _ in os.walk(top)]
        for d in sorted(dirs, key=lambda p: -len(p.parts)):
            with contextlib.suppress(OSError):
                d.rmdir()
