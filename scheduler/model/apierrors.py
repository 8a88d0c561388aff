"""The API server's error statuses the scheduler acts on (upstream's k8s.io/apimachinery/pkg/api/errors).

A leaf of the core: the plugins raise and catch them (DynamicResources' claim writes), the edge
(scheduler.kube) raises them, and neither side has to import the other for it.
"""

from __future__ import annotations


class APIStatusError(Exception):
    """An API request the server answered with an error status (upstream apimachinery's StatusError).
    The edge raises a subclass for the statuses the scheduler acts on, so callers catch by type
    (upstream's errors.IsNotFound / IsConflict) instead of comparing status numbers."""

    status: int = 0


class NotFoundError(APIStatusError):
    """404: the object does not exist (deleted meanwhile, or never created)."""

    status = 404


class ConflictError(APIStatusError):
    """409: a precondition (uid, resourceVersion) failed or the object already exists."""

    status = 409
