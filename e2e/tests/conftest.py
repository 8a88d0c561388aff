"""The e2e suite runs against $KUBECONFIG, with py-scheduler already serving `py-scheduler`."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from kubernetes import client, config

from e2e.kube import create_namespace, delete_namespace


@pytest.fixture(scope="session")
def api() -> client.ApiClient:
    return config.new_client_from_config(config_file=os.environ["KUBECONFIG"])


@pytest.fixture(scope="session")
def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


@pytest.fixture
def ns(core: client.CoreV1Api) -> Iterator[str]:
    name = create_namespace(core, "e2e")
    yield name
    delete_namespace(core, name)
