# syntax=docker/dockerfile:1
# py-scheduler image: `docker build -t py-scheduler:0.1.0 .`
# Two stages: dependencies are installed into a virtualenv in the build stage; the final stage gets only
# that virtualenv on a slim Python, runs as an unprivileged user and has no compiler, pip or setuptools.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
# A venv without pip of its own: the build stage's pip installs into it (pip --python), so nothing
# installer-related is copied into the final image.
RUN python -m venv --without-pip /opt/py-scheduler
# Dependencies first (cached while only the code changes), then the package itself.
COPY pyproject.toml README.md constraints.txt ./
RUN mkdir -p scheduler && touch scheduler/__init__.py \
 && pip --python /opt/py-scheduler/bin/python install -c constraints.txt . \
 && pip --python /opt/py-scheduler/bin/python uninstall -y py-scheduler \
 && rm -rf build scheduler *.egg-info
COPY scheduler ./scheduler
RUN pip --python /opt/py-scheduler/bin/python install --no-deps . \
 && /opt/py-scheduler/bin/python -m compileall -q /opt/py-scheduler/lib \
 && /opt/py-scheduler/bin/py-scheduler --help >/dev/null

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="py-scheduler" \
      org.opencontainers.image.description="A Kubernetes scheduler in Python, faithful to kube-scheduler v1.37" \
      org.opencontainers.image.licenses="Apache-2.0"
# The base image's own installer tooling is not needed at run time.
RUN python -m pip uninstall -y pip setuptools wheel >/dev/null 2>&1 || true \
 && groupadd --system --gid 65532 py-scheduler \
 && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin py-scheduler
COPY --from=build /opt/py-scheduler /opt/py-scheduler
ENV PATH=/opt/py-scheduler/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
# Numeric, so the kubelet can verify runAsNonRoot without reading /etc/passwd.
USER 65532:65532
EXPOSE 10259
ENTRYPOINT ["py-scheduler"]
CMD ["run"]
