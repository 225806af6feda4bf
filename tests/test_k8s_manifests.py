"""infra/k8s: schema-valid, and consistent with the code it deploys.

Core resources are checked against the Kubernetes OpenAPI schemas that `kubernetes-validate`
ships (strict: unknown fields fail), KEDA resources against tests/data/keda-crds.schema.json.
The cross-checks tie the manifests to shared/settings.py: KEDA must watch the stream and group
each service really reads, and the grace periods must cover the longest solve.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from jsonschema.validators import Draft202012Validator

from shared.names import Names
from shared.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
K8S = ROOT / "infra" / "k8s"
KUBERNETES_VERSION = "1.30"
SERVICES = ("intake", "solver", "fallback", "triage", "notifier")
Doc = dict[str, Any]
TLS_DIR = Path(tempfile.mkdtemp(prefix="shiftstream-k8s-tls-"))


@cache
def built() -> tuple[Doc, ...]:
    """The kustomization as the cluster would receive it (`kubectl kustomize`, offline)."""
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl (Debian package) is needed to build the kustomization"
    out = subprocess.run(
        [kubectl, "kustomize", str(K8S)], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    return tuple(d for d in yaml.safe_load_all(out) if d)


def of_kind(kind: str) -> dict[str, Doc]:
    return {d["metadata"]["name"]: d for d in built() if d["kind"] == kind}


@cache
def tls_secrets() -> dict[str, Doc]:
    """The TLS Secrets infra/k8s/tls-secrets.sh makes (they hold keys, so are not in git)."""
    out = subprocess.run(
        ["sh", str(K8S / "tls-secrets.sh"), str(TLS_DIR), "--print"],
        capture_output=True, text=True, check=True, timeout=120, cwd=ROOT,
    ).stdout  # fmt: skip
    docs = [d for d in yaml.safe_load_all(out) if d]
    return {d["metadata"]["name"]: d for d in docs}


def all_secrets() -> dict[str, Doc]:
    return of_kind("Secret") | tls_secrets()


@cache
def keda_validator(kind: str) -> Draft202012Validator:
    schema = json.loads((ROOT / "tests" / "data" / "keda-crds.schema.json").read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator({**schema, "$ref": f"#/$defs/{kind}"})


def validate(doc: Doc) -> None:
    if doc["apiVersion"].startswith("keda.sh/"):
        keda_validator(doc["kind"]).validate(doc)
    else:
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def container(deployment: Doc) -> Doc:
    (c,) = deployment["spec"]["template"]["spec"]["containers"]
    return c


def env_of(deployment: Doc) -> dict[str, Any]:
    c = container(deployment)
    env: dict[str, Any] = {}
    config = of_kind("ConfigMap")
    for source in c.get("envFrom", []):
        env |= config[source["configMapRef"]["name"]]["data"]
    env |= {e["name"]: e.get("value", e.get("valueFrom")) for e in c.get("env", [])}
    return env


def test_every_resource_is_schema_valid() -> None:
    kinds = [d["kind"] for d in built()]
    assert kinds.count("Deployment") == 7  # five services, the BullMQ bridge and the console
    assert kinds.count("ScaledObject") == 5
    for doc in built():
        validate(doc)


@pytest.mark.parametrize(
    ("doc", "error"),
    [
        (
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "x"},
                "spec": {"replicas": "one", "selector": {}, "template": {}},
            },
            kubernetes_validate.ValidationError,
        ),
        (
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "x"},
                "data": {"A": "1"},
                "dataa": {},
            },
            kubernetes_validate.ValidationError,
        ),
    ],
)
def test_validation_can_fail(doc: Doc, error: type[Exception]) -> None:
    with pytest.raises(error):
        validate(doc)


def test_keda_validation_can_fail() -> None:
    good = of_kind("ScaledObject")["solver"]
    assert not list(keda_validator("ScaledObject").iter_errors(good))
    typo = json.loads(json.dumps(good))
    trig = typo["spec"]["triggers"][0]["metadata"]
    trig["lagcount"] = trig.pop("lagCount")
    no_group = json.loads(json.dumps(good))
    del no_group["spec"]["triggers"][0]["metadata"]["consumerGroup"]
    not_a_string = json.loads(json.dumps(good))
    not_a_string["spec"]["triggers"][0]["metadata"]["lagCount"] = 5
    no_address = json.loads(json.dumps(good))
    del no_address["spec"]["triggers"][0]["metadata"]["addressFromEnv"]
    for bad in (typo, no_group, not_a_string, no_address):
        assert list(keda_validator("ScaledObject").iter_errors(bad)), bad


def test_scalers_watch_the_streams_the_services_read() -> None:
    names = Names.from_settings(Settings(shiftstream_prefix=""))
    deployments = of_kind("Deployment")
    scaled = of_kind("ScaledObject")
    auths = of_kind("TriggerAuthentication")
    secrets = all_secrets()
    assert set(scaled) == set(SERVICES)
    for service in SERVICES:
        so = scaled[service]
        assert so["spec"]["scaleTargetRef"]["name"] == service
        assert service in deployments
        triggers = so["spec"]["triggers"]
        # One per stream the service reads (a prioritized hop reads one per priority).
        watched = [(t["metadata"]["stream"], t["metadata"]["consumerGroup"]) for t in triggers]
        assert sorted(watched) == sorted(names.inputs(service))
        for trigger in triggers:
            assert trigger["type"] == "redis-streams"
            meta = trigger["metadata"]
            assert "lagCount" in meta, "scale on the group's lag (entries not yet delivered)"
            assert meta["enableTLS"] == "true", "Redis speaks TLS only"
            # KEDA resolves *FromEnv from the target's container env.
            assert meta["addressFromEnv"] in env_of(deployments[service])
            assert ":" in env_of(deployments[service])[meta["addressFromEnv"]]
            auth = auths[trigger["authenticationRef"]["name"]]
            for ref in auth["spec"]["secretTargetRef"]:
                secret = secrets[ref["name"]]
                assert ref["key"] in secret.get("stringData", {}) | secret.get("data", {})
    # Triage promotes the delay schedule and intake is the front door: never scaled to zero.
    assert scaled["triage"]["spec"]["minReplicaCount"] >= 1
    assert scaled["intake"]["spec"]["minReplicaCount"] >= 1


def test_deployments_drain_and_probe() -> None:
    settings_default = Settings()
    secrets = of_kind("Secret")
    for name, dep in of_kind("Deployment").items():
        c = container(dep)
        env = env_of(dep)
        assert c["command"] == ["python", "-m", f"services.{name}"]
        if name == "console":
            continue  # a web page, not a stream consumer: test_console_deployment
        graceful = float(env.get("GRACEFUL_TIMEOUT", settings_default.graceful_timeout))
        grace = dep["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        assert grace > graceful + 5, f"{name}: SIGKILL before the drain can finish"
        if name in ("solver", "fallback"):
            limit = float(env["SOLVER_MAX_TIME_LIMIT"])
            assert graceful > limit, f"{name}: a maximal solve cannot finish within the drain"
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            cmd = c[probe]["exec"]["command"]
            assert cmd[:3] == ["python", "-m", "shared.observability.health"], (name, probe)
            assert cmd[cmd.index("--service") + 1] == name
        live = c["livenessProbe"]["exec"]["command"]
        max_idle = float(live[live.index("--max-idle") + 1])
        if name in ("solver", "fallback"):
            assert max_idle > float(env["SOLVER_MAX_TIME_LIMIT"])
        assert c["resources"]["requests"] and c["resources"]["limits"]
        assert "$(REDIS_PASSWORD)" in env["REDIS_URL"]
        assert env["REDIS_USERNAME"] == name, "each service logs in as its own ACL user"
        key = env["REDIS_PASSWORD"]["secretKeyRef"]
        assert key["key"] in secrets[key["name"]]["stringData"]
        assert "CONSUMER_NAME" in env


def test_redis_is_persistent_and_never_evicts() -> None:
    (sts,) = of_kind("StatefulSet").values()
    assert sts["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == "data"
    mounts = {m["name"]: m["mountPath"] for m in container(sts)["volumeMounts"]}
    assert mounts["data"] == "/data"
    conf_map = next(v for k, v in of_kind("ConfigMap").items() if k.startswith("redis-conf"))
    conf = dict(
        line.split(None, 1)
        for line in conf_map["data"]["redis.conf"].splitlines()
        if line.strip() and not line.startswith("#")
    )
    assert conf["maxmemory-policy"] == "noeviction"
    assert conf["appendonly"] == "yes"
    assert conf["appendfsync"] == "everysec"
    assert conf["dir"] == "/data"
    assert conf["aclfile"] == mounts["acl"] + "/users.acl"
    # Every ${VAR} of the ACL template is provided to the init container that renders it.
    (init,) = sts["spec"]["template"]["spec"]["initContainers"]
    provided = {e["name"] for e in init["env"]}
    template = "\n".join(
        line
        for line in (K8S / "redis" / "users.acl").read_text().splitlines()
        if not line.startswith("#")
    )
    assert set(re.findall(r"\$\{([A-Z_]+)\}", template)) == provided


def test_acl_template_copy_is_identical() -> None:
    assert (K8S / "redis" / "users.acl").read_bytes() == (
        ROOT / "infra" / "redis" / "users.acl"
    ).read_bytes(), "cp infra/redis/users.acl infra/k8s/redis/users.acl"


def test_init_container_renders_like_the_script(tmp_path: Path) -> None:
    """The pod's awk and infra/redis/render-acl.sh must produce the same ACL file."""
    (sts,) = of_kind("StatefulSet").values()
    (init,) = sts["spec"]["template"]["spec"]["initContainers"]
    script = init["command"][-1]
    (tmp_path / "template").mkdir()
    (tmp_path / "acl").mkdir()
    shutil.copy(K8S / "redis" / "users.acl", tmp_path / "template" / "users.acl")
    script = script.replace("/etc/redis/template", str(tmp_path / "template"))
    script = script.replace("/etc/redis/acl", str(tmp_path / "acl"))
    env = {e["name"]: f"pw{i}" for i, e in enumerate(init["env"])}
    env["SHIFTSTREAM_PREFIX"] = "staging:"
    env["PATH"] = "/usr/bin:/bin"
    subprocess.run(["sh", "-c", script], env=env, check=True, timeout=30)
    rendered = subprocess.run(
        ["sh", str(ROOT / "infra" / "redis" / "render-acl.sh")],
        env=env, capture_output=True, text=True, check=True, timeout=30,
    ).stdout  # fmt: skip
    pod = (tmp_path / "acl" / "users.acl").read_text()
    assert pod == rendered
    assert "${" not in pod
    assert all(line.startswith("user ") for line in pod.splitlines()), "aclfile: user lines only"
    assert pod.startswith("user default off")
    assert "~staging:solver.jobs" in pod


def test_console_deployment() -> None:
    """The console: its own ACL user, probed over HTTP, reached through a ClusterIP only."""
    dep = of_kind("Deployment")["console"]
    c = container(dep)
    env = env_of(dep)
    assert dep["spec"]["replicas"] == 1
    assert env["REDIS_USERNAME"] == "console" and "$(REDIS_PASSWORD)" in env["REDIS_URL"]
    assert env["CONSOLE_TOKEN"]["secretKeyRef"]["optional"] is True  # read-only without it
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"  # Redis answers
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"  # the process serves
    service = of_kind("Service")["console"]
    assert service["spec"]["type"] == "ClusterIP"
    secret = next(iter(of_kind("Secret").values()))
    assert "console-password" in secret["stringData"]


def test_redis_speaks_tls_only_and_every_client_shows_a_certificate() -> None:
    """TLS on by default: Redis has no plain port and asks clients for a certificate; every
    service connects with rediss:// and the client certificate the Secret mounts; the Secrets
    the script makes are valid, hold the keys the pods read, and chain to one CA."""
    conf_map = next(v for k, v in of_kind("ConfigMap").items() if k.startswith("redis-conf"))
    conf = dict(
        line.split(None, 1)
        for line in conf_map["data"]["redis.conf"].splitlines()
        if line.strip() and not line.startswith("#")
    )
    assert conf["port"] == "0" and conf["tls-port"] == "6379"
    assert conf["tls-auth-clients"] == "yes"
    secrets = tls_secrets()
    for secret in secrets.values():
        validate(secret)
        assert set(secret["data"]) == {"ca.crt", "tls.crt", "tls.key"}
    (sts,) = of_kind("StatefulSet").values()
    volumes = {v["name"]: v for v in sts["spec"]["template"]["spec"]["volumes"]}
    mounts = {m["name"]: m["mountPath"] for m in container(sts)["volumeMounts"]}
    server = next(n for n, v in volumes.items() if v.get("secret", {}).get("secretName")
                  == "shiftstream-redis-tls")  # fmt: skip
    for key in ("tls-cert-file", "tls-key-file", "tls-ca-cert-file"):
        folder, _, name = conf[key].rpartition("/")
        assert mounts[server] == folder and name in secrets["shiftstream-redis-tls"]["data"]
    probe = " ".join(container(sts)["readinessProbe"]["exec"]["command"])
    assert "--tls" in probe and "--cert" in probe
    config = of_kind("ConfigMap")["shiftstream-config"]["data"]
    client = secrets["shiftstream-redis-client-tls"]["data"]
    for name, dep in of_kind("Deployment").items():
        env = env_of(dep)
        assert env["REDIS_URL"].startswith("rediss://"), name
        spec = dep["spec"]["template"]["spec"]
        vols = {v["name"]: v for v in spec["volumes"]}
        mounted = {m["mountPath"]: m["name"] for m in container(dep)["volumeMounts"]}
        for var in ("REDIS_TLS_CA_FILE", "REDIS_TLS_CERT_FILE", "REDIS_TLS_KEY_FILE"):
            folder, _, key = config[var].rpartition("/")
            volume = vols[mounted[folder]]
            assert volume["secret"]["secretName"] == "shiftstream-redis-client-tls", (name, var)
            assert key in client, (name, var)
    # Both certificates chain to the CA both Secrets carry, and the server's names the Service.
    files = {n: TLS_DIR / n for n in ("ca.crt", "server.crt", "client.crt")}
    for cert in ("server.crt", "client.crt"):
        subprocess.run(["openssl", "verify", "-CAfile", str(files["ca.crt"]), str(files[cert])],
                       check=True, capture_output=True)  # fmt: skip
    names = subprocess.run(
        ["openssl", "x509", "-in", str(files["server.crt"]), "-noout", "-ext", "subjectAltName"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    address = config["REDIS_ADDRESS"].split(":")[0]
    assert f"DNS:{address}" in names and "DNS:redis.shiftstream.svc" in names
