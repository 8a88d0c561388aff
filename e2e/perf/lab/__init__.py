"""The laboratory: tools that measure one part of the scheduler in process, with no API server.

The benchmark (``python -m e2e.perf``) answers how fast py-scheduler is against kube-scheduler; these answer
where its time goes, repeatably on a loaded machine (callgrind counts instructions, not seconds). Each runs
from ``python -m e2e.perf.lab.<tool>``; ``make lab-smoke`` runs every one tiny (tests/e2e/test_perf_lab.py).

* ``inproc``: the scheduling loop (the offline writer), CPU or instructions a pod and a hash of the placements;
* ``watchreplay``: the pod watch path, live-shaped watch lines replayed into a scheduler, CPU an event;
* ``cgparts``: single expressions of a cycle (``fwk.run_pre_score_plugins(...)``), a callgrind dump each;
* ``cgpython``: a callgrind run's instructions by Python function (``pyframes.c`` as the frame evaluator);
* ``parfilter``: the sequential Filter/Score walk against upstream's split over threads; ``gilshim.c`` measures
  the share of a phase that runs without the GIL;
* ``shims``: compiles the C shims (``cgmark.c``: valgrind client requests around the measured pods).

How to run them and what they found: docs/performance.md ("The laboratory") and docs/performance-record.md.
"""
