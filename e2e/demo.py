"""`make run` without KUBECONFIG: the local control plane, py-scheduler, a sample workload, and where
its pods landed. The scheduler keeps running until Ctrl-C."""

from __future__ import annotations

import argparse
import signal
import time
from pathlib import Path

from kubernetes import client, config, utils

from e2e.cluster.cluster import LocalCluster
from e2e.process import start_scheduler, stop_scheduler

SAMPLE = Path(__file__).parent / "samples" / "workload.yaml"


def show(core: client.CoreV1Api) -> None:
    print(f"{'POD':<28} {'NODE':<12} {'PHASE':<10} MESSAGE")
    for p in core.list_namespaced_pod("demo").items:
        msg = ""
        for c in p.status.conditions or []:
            if c.type == "PodScheduled" and c.status == "False":
                msg = c.message or ""
        print(f"{p.metadata.name:<28} {p.spec.node_name or '-':<12} {p.status.phase:<10} {msg[:90]}")


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default=".cluster")
    args = ap.parse_args()
    cluster = LocalCluster(args.dir)
    kubeconfig = str(cluster.kubeconfig)
    log = Path(args.dir) / "logs" / "py-scheduler.log"
    proc = start_scheduler(kubeconfig, log)
    print(f"py-scheduler started (log: {log}); KUBECONFIG={Path(kubeconfig).resolve()}")
    api = config.new_client_from_config(config_file=kubeconfig)
    try:
        utils.create_from_yaml(api, str(SAMPLE))
    except utils.FailToCreateError as exc:
        if not all(getattr(e, "status", None) == 409 for e in exc.api_exceptions):
            raise
    time.sleep(8)
    show(client.CoreV1Api(api))
    print("\nScheduler running; Ctrl-C to stop (the control plane stays up: `make cluster-down`).")
    signal.signal(signal.SIGTERM, _interrupt)  # stop the scheduler on SIGTERM too, not only Ctrl-C
    try:
        proc.wait()
    except KeyboardInterrupt:
        pass
    finally:
        stop_scheduler(proc)


if __name__ == "__main__":
    main()
