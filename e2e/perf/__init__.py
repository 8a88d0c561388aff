"""Scheduler benchmark: py-scheduler vs kube-scheduler vs a no-algorithm binder, on scheduler_perf workloads.

``python -m e2e.perf --help``. Each workload and size gets a fresh lean local control plane (etcd +
kube-apiserver, ``e2e.cluster``), fake nodes like upstream's scheduler_perf, and interleaved runs of

* ``py``: py-scheduler (``python -m scheduler.app.cli run --qps Q --burst B --scheduler-name N``);
* ``kube``: kube-scheduler v1.37.2 built from source, same QPS/burst, leader election off;
* ``ceiling``: ``e2e.perf.ceiling``, a Python binder with no algorithm (same client stack and QPS):
  what the API server on this machine allows;
* ``ceiling-events`` (only when asked for): the same binder writing each pod's Scheduled event too, as both
  schedulers do; the ceiling for a scheduler that keeps that contract;
* ``ceiling-go`` / ``ceiling-go-events``: the same binders in Go (``ceiling-binder`` from build.sh's bin dir,
  e2e/cluster/gobin/cmd/ceiling-binder), whose bindings run on every core: a ceiling where the control plane
  has cores of its own, and the one the py/ceiling goal uses where it ran.

Every run reports each scheduler process's CPU per pod (``process_cpu_seconds_per_1000``, busiest first).

Results: ``--out`` JSON (machine, runs, summary with py/kube and py/ceiling ratios of median pods/s,
goals met or not), a markdown table next to it (``.md``) and a chart (``.png``). Modules: ``workloads`` (pod templates,
sizes), ``runner`` (one size: cluster, runs), ``kubeio`` (watcher process, creators), ``schedulers``,
``ceiling``, ``procstat`` (/proc CPU, context switches and VmHWM), ``stats`` (pure maths, JSON, markdown),
``goals`` (the targets checked on the runs), ``plot``,
``profile`` (py-spy raw summaries), ``sysprofile`` (perf record and perf trace summaries). The in-process
measuring tools are in ``e2e.perf.lab``.
"""
