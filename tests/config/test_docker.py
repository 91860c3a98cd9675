"""The Dockerfile and compose.yaml, checked without a Docker engine (none on this machine; the image is
not built here): compose.yaml is rendered by docker-compose when it is installed, and read with PyYAML."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

PROJECT = Path(__file__).resolve().parents[2]
COMPOSE = PROJECT / "compose.yaml"
DOCKERFILE = (PROJECT / "Dockerfile").read_text()
REQUIRED = ("POSTGRES_PASSWORD", "SECRET_KEY", "KEY_ENCRYPTION_KEY", "TOKEN_SIGNING_KEY", "LOG_SIGNING_KEY",
            "PUBLIC_BASE_URL", "ALLOWED_HOSTS", "SIGNER_SECRET", "SECRET_ENCRYPTION_KEY")
# Only the signer holds these (the web processes and the sequencer refuse to start given them).
SIGNER_ONLY = ("KEY_ENCRYPTION_KEY", "LOG_SIGNING_KEY")
SET = {name: f"value-of-{name.lower()}" for name in REQUIRED}


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def _settings_variables() -> set[str]:
    source = (PROJECT / "config" / "settings.py").read_text()
    return set(re.findall(r'env_(?:str|bool|int|float|list)\("([A-Z0-9_]+)"', source))


def test_compose_runs_the_service_its_signer_its_sequencer_a_proxy_postgres_15_and_redis_7(compose):
    services = compose["services"]
    assert set(services) == {"web", "web2", "signer", "log-sequencer", "worker", "worker-beat", "proxy", "postgres",
                             "redis"}
    for name in ("worker", "worker-beat"):
        assert services[name]["image"] == services["web"]["image"], name
        assert services[name]["environment"] == services["web"]["environment"], name
    assert services["worker"]["command"][:4] == ["celery", "-A", "config", "worker"]
    assert "--beat" not in services["worker"]["command"] and services["worker"]["deploy"] == {"replicas": 2}
    assert services["worker-beat"]["command"][:4] == ["celery", "-A", "config", "beat"]
    for name in ("web", "web2", "worker"):  # every process that reads or writes the jobs' files
        assert "job-files:/srv/job-files" in services[name]["volumes"], name
    assert services["signer"]["command"] == ["python", "manage.py", "signer"]
    assert services["signer"]["image"] == services["web"]["image"]
    assert services["postgres"]["image"] == "postgres:15" and services["redis"]["image"] == "redis:7"
    assert services["log-sequencer"]["command"] == ["python", "manage.py", "log_sequencer"]
    assert services["log-sequencer"]["image"] == services["web"]["image"]
    assert services["web"]["depends_on"] == {"postgres": {"condition": "service_healthy"},
                                             "redis": {"condition": "service_healthy"},
                                             "signer": {"condition": "service_healthy"}}
    for name in ("postgres", "redis", "proxy"):
        assert services[name]["healthcheck"]["test"][0] == "CMD"
    assert "postgres-data:/var/lib/postgresql/data" in services["postgres"]["volumes"]
    assert "ports" not in services["web"]  # only the proxy is published


def test_compose_runs_two_app_instances_behind_the_proxy_and_two_sequencers(compose):
    services = compose["services"]
    web, web2 = services["web"], services["web2"]
    assert web2["image"] == web["image"] and "ports" not in web2
    assert web2["environment"] == {**web["environment"], "MIGRATE_ON_START": "false"}
    assert web2["depends_on"]["web"] == {"condition": "service_healthy"}  # web has migrated by then
    assert set(services["proxy"]["depends_on"]) == {"web", "web2"}
    site = (PROJECT / "deploy" / "nginx.compose.conf").read_text()
    upstream = re.search(r"upstream provenance_app \{([^}]*)\}", site)
    assert re.findall(r"server (\S+);", upstream.group(1)) == ["web:8000", "web2:8000"]
    assert services["log-sequencer"]["deploy"]["replicas"] == 2


def test_compose_requires_every_secret_and_sets_only_variables_the_service_reads(compose):
    services = compose["services"]
    env, signer_env = services["web"]["environment"], services["signer"]["environment"]
    for name in REQUIRED[1:]:
        held_by = signer_env if name in SIGNER_ONLY else env
        assert held_by[name].startswith(f"${{{name}:?"), name
    assert "${POSTGRES_PASSWORD:?" in env["DATABASE_URL"]
    assert "DEBUG" not in env and "DEBUG" not in signer_env
    assert set(env) - _settings_variables() == {"FORWARDED_ALLOW_IPS"}  # read by gunicorn itself
    assert set(signer_env) <= _settings_variables()


def test_only_the_signer_holds_the_keys_and_shares_its_socket_with_web_and_sequencer(compose):
    services = compose["services"]
    for name in ("web", "web2", "log-sequencer", "worker", "worker-beat"):
        env = services[name]["environment"]
        assert not set(SIGNER_ONLY) & set(env) and "SIGNER_SERVICE" not in env, name
        assert env["SIGNER_SOCKET"] == services["signer"]["environment"]["SIGNER_SOCKET"], name
        if name != "worker-beat":  # the schedule sends tasks to the workers and signs nothing
            assert "signer-socket:/run/signer" in services[name]["volumes"], name
    assert services["signer"]["environment"]["SIGNER_SERVICE"] == "true"
    assert "signer-socket:/run/signer" in services["signer"]["volumes"]
    assert "ports" not in services["signer"] and "expose" not in services["signer"]
    assert "mkdir -p /run/signer && chown app:app /run/signer" in DOCKERFILE


@pytest.mark.skipif(shutil.which("docker-compose") is None, reason="docker-compose is not installed")
def test_docker_compose_renders_the_file_and_refuses_it_without_the_secrets(tmp_path):
    def config(env: dict) -> subprocess.CompletedProcess:
        return subprocess.run(["docker-compose", "-f", str(COMPOSE), "config"], cwd=tmp_path, timeout=600,
                              env={"PATH": "/usr/bin:/bin", **env}, capture_output=True, text=True)

    rendered = config(SET)
    assert rendered.returncode == 0, rendered.stderr
    assert yaml.safe_load(rendered.stdout)["services"]["web"]["environment"]["SECRET_KEY"] == SET["SECRET_KEY"]
    for name in REQUIRED:
        refused = config({key: value for key, value in SET.items() if key != name})
        assert refused.returncode != 0 and f"set {name}" in refused.stderr


def test_the_image_is_slim_non_root_without_build_tools_and_probes_healthz():
    stages = re.findall(r"^FROM (\S+) AS (\w+)$", DOCKERFILE, re.M)
    assert stages == [("python:3.11-slim", "build"), ("nginx:1.27-alpine", "proxy"), ("python:3.11-slim", "app")]
    app = DOCKERFILE.split("AS app", 1)[1]
    assert re.search(r"^USER app$", app, re.M) and "useradd --system --uid 10001" in app
    assert "apt-get" not in DOCKERFILE and "gcc" not in DOCKERFILE and "build-essential" not in DOCKERFILE
    assert "pip install ." in DOCKERFILE and "manage.py collectstatic" in DOCKERFILE
    assert "GUNICORN_BIND=0.0.0.0:8000" in app and "http://127.0.0.1:8000/healthz" in app
    assert 'ENTRYPOINT ["/app/deploy/docker-entrypoint.sh"]' in app and 'CMD ["serve"]' in app


def test_the_build_context_leaves_out_local_state():
    ignored = (PROJECT / ".dockerignore").read_text().split()
    assert {".git", ".venv", "db.sqlite3*", "staticfiles", "tests"} <= set(ignored)


def test_the_compose_proxy_enforces_the_same_body_limits_as_the_documented_one():
    def limits(name: str) -> list[str]:
        return re.findall(r"client_max_body_size (\w+);", (PROJECT / "deploy" / name).read_text())

    assert limits("nginx.compose.conf") == limits("nginx.conf") and limits("nginx.conf")
