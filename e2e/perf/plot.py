"""PNG chart of median pods/s per scheduler per workload and size (matplotlib, headless)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from e2e.perf.stats import SCHEDULERS, groups, medians

COLORS = {
    "py": "#3776ab", "kube": "#f28e2b", "ceiling": "#b0b0b0", "ceiling-events": "#707070", "ceiling-go": "#59a14f",
    "ceiling-go-events": "#2f6b2a", "py-w0": "#6f9fd8", "py-w1": "#1d4f91",
}  # fmt: skip
HATCH = {"py": "", "kube": "//", "ceiling": "..", "ceiling-events": "xx", "ceiling-go": "..", "ceiling-go-events": "xx",
         "py-w0": "", "py-w1": ""}


def plot(doc: Mapping[str, Any], path: str | Path) -> Path | None:
    """Grouped bars (one group per workload/size, one bar per scheduler, min-max whiskers); None without
    matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    runs = doc["runs"]
    groups_ = groups(runs)
    if not groups_:
        return None
    scheds = [s for s in SCHEDULERS if any(r["scheduler"] == s for r in runs)]
    width = 0.8 / max(len(scheds), 1)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(groups_) + 2), 5.0))
    for i, s in enumerate(scheds):
        xs, ys, lo, hi = [], [], [], []
        for g, (wl, nodes, pods) in enumerate(groups_):
            m = medians(runs, wl, nodes, pods, s)
            if m["pods_per_second"] is None:
                continue
            xs.append(g + (i - (len(scheds) - 1) / 2) * width)
            ys.append(m["pods_per_second"])
            lo.append(m["pods_per_second"] - m["pods_per_second_min"])
            hi.append(m["pods_per_second_max"] - m["pods_per_second"])
        bars = ax.bar(xs, ys, width, yerr=[lo, hi], capsize=3, label=s, color=COLORS.get(s), hatch=HATCH.get(s),
                      edgecolor="black", linewidth=0.5)  # fmt: skip
        ax.bar_label(bars, labels=[f"{y:.0f}" for y in ys], fontsize=7, padding=2)
    ax.set_xticks(range(len(groups_)))
    ax.set_xticklabels([f"{wl}\n{n} nodes / {p} pods" for wl, n, p in groups_], fontsize=7, rotation=20, ha="right")
    ax.set_ylabel("pods / s (median, min-max)")
    machine = doc.get("machine") or {}
    ax.set_title(f"Scheduling throughput, {machine.get('cpus', '?')} CPUs, {machine.get('cpu_model', '')}", fontsize=9)
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
