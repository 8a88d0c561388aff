"""End-to-end test support for py-scheduler (local control plane, samples)."""
