"""The class hub on Kubernetes (deploy/kubernetes.md, issue 34 item 8): what can be checked without
a cluster. The files parse, the values say what the page promises (the key and the salt from the
labs-class secret, `marimo run` only, ledgers on a volume each pod sees its own folder of, the hub
refusing to start without a real salt), and the image is built the way .ci/run installs and
carries the environment deploy/jupyterhub_config.py gives a student's server."""

import re
from pathlib import Path

import pytest
import yaml  # PyYAML: a dependency of marimo

ROOT = Path(__file__).resolve().parents[1]
K8S = ROOT / "deploy" / "k8s"


def load(name: str):
    return yaml.safe_load((K8S / name).read_text())


def secret(name: str, key: str) -> dict:
    return {"valueFrom": {"secretKeyRef": {"name": name, "key": key}}}


def test_the_values_give_students_marimo_run_with_the_class_secrets():
    values = load("values.yaml")
    single, hub = values["singleuser"], values["hub"]
    assert single["cmd"] == "jupyterhub-singleuser" and single["defaultUrl"] == "/marimo/"
    for env in (single["extraEnv"], hub["extraEnv"]):
        assert env["LABS_SIGNING_KEY"] == secret("labs-class", "signing-key")
        assert env["LABS_CLASS_SALT"] == secret("labs-class", "class-salt")
    assert single["storage"]["type"] == "none" and single["allowPrivilegeEscalation"] is False
    mount = single["storage"]["extraVolumeMounts"][0]
    volume = single["storage"]["extraVolumes"][0]
    assert mount == {"name": "ledgers", "mountPath": "/srv/labs-ledgers", "subPath": "{username}"}
    assert volume["persistentVolumeClaim"]["claimName"] == load("ledgers-pvc.yaml")["metadata"]["name"]
    init = single["initContainers"][0]
    assert init["command"][-1] == "/ledgers/{username}" and "1000" in init["command"] and init["volumeMounts"][0]["name"] == "ledgers"
    assert single["networkPolicy"]["enabled"] is True and single["networkPolicy"]["egressAllowRules"]["nonPrivateIPs"] is False


def test_the_hub_refuses_to_start_without_a_real_salt(monkeypatch):
    code = load("values.yaml")["hub"]["extraConfig"]["00-labs-secrets.py"]
    monkeypatch.setenv("HUB_INSTRUCTOR", "prof")
    monkeypatch.setenv("LABS_SIGNING_KEY", "k" * 32)
    for bad in ("", "short-salt", "<your salt>"):
        monkeypatch.setenv("LABS_CLASS_SALT", bad)
        with pytest.raises(SystemExit, match="LABS_CLASS_SALT"):
            exec(compile(code, "00-labs-secrets.py", "exec"), {})
    monkeypatch.setenv("LABS_CLASS_SALT", "a-class-salt-of-24-chars")
    exec(compile(code, "00-labs-secrets.py", "exec"), {})


def test_only_the_instructor_mounts_every_ledger_read_only(monkeypatch):
    from types import SimpleNamespace

    code = load("values.yaml")["hub"]["extraConfig"]["10-labs-instructor.py"]
    monkeypatch.setenv("HUB_INSTRUCTOR", "prof")
    config = SimpleNamespace(KubeSpawner=SimpleNamespace())
    exec(compile(code, "10-labs-instructor.py", "exec"), {"c": config})
    hook = config.KubeSpawner.pre_spawn_hook
    student_mount = {"name": "ledgers", "mountPath": "/srv/labs-ledgers", "subPath": "stu"}
    for name, mounts, ledgers in (("stu", [student_mount], None), ("prof", [{"name": "ledgers", "mountPath": "/srv/labs-ledgers-class", "readOnly": True}], "/srv/labs-ledgers-class")):
        spawner = SimpleNamespace(user=SimpleNamespace(name=name), volume_mounts=[student_mount], environment={})
        hook(spawner)
        assert spawner.volume_mounts == mounts and spawner.environment.get("HUB_LEDGERS") == ledgers


def test_the_grading_job_reads_the_volume_with_the_class_secrets():
    job = load("grade-job.yaml")["spec"]["template"]["spec"]
    container = job["containers"][0]
    assert container["command"][:3] == ["python", "-m", "labs.grade"]
    env = {e["name"]: {"valueFrom": e["valueFrom"]} for e in container["env"]}
    assert env == {"LABS_SIGNING_KEY": secret("labs-class", "signing-key"), "LABS_CLASS_SALT": secret("labs-class", "class-salt")}
    assert container["volumeMounts"][0]["readOnly"] is True and job["volumes"][0]["persistentVolumeClaim"]["readOnly"] is True


def test_the_image_installs_as_ci_does_and_carries_the_hubs_environment():
    dockerfile = (K8S / "Dockerfile").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert 'pip install -q -e ".[test,hub]"' in ci  # .ci/run's install; the image takes its hub extra
    assert 'pip install --no-cache-dir "/opt/parallelism-labs[hub]"' in dockerfile
    env = dict(re.findall(r"(\w+)=(\S+)", dockerfile.split("\nENV ", 1)[1].split("\n\n", 1)[0]))
    assert env["JUPYTER_CONFIG_DIR"] == env["PYTHONPATH"] == "/opt/parallelism-labs/deploy/singleuser"
    assert env["LABS_NOTEBOOKS"] == "/srv/labs-notebooks" and f"publish_notebooks.py {env['LABS_NOTEBOOKS']}" in dockerfile
    assert env["LABS_LEDGER_DIR"] == load("values.yaml")["singleuser"]["storage"]["extraVolumeMounts"][0]["mountPath"]
    # every variable the one-machine hub gives a student's server is in the image, the values, or
    # is the one-machine hub's own (its lecture, its ledger root for the dashboard)
    config = (ROOT / "deploy" / "jupyterhub_config.py").read_text()
    spawner_env = config.split("c.Spawner.environment = {", 1)[1].split("\n}", 1)[0]
    names = set(re.findall(r'^\s+"(\w+)":', spawner_env, re.MULTILINE)) | ({"LABS_CLASS_SALT"} if re.search(r"^\s+SALT:", spawner_env, re.MULTILINE) else set())
    values_env = set(load("values.yaml")["singleuser"]["extraEnv"])
    assert names - set(env) - values_env == {"LABS_LECTURE_DIR", "HUB_LEDGERS"}, names - set(env) - values_env
    assert "USER 1000" in dockerfile and 'CMD ["jupyterhub-singleuser"]' in dockerfile
    assert ".git" in (K8S / "Dockerfile.dockerignore").read_text().split()
