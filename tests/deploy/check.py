"""Render and validate deploy/kustomize/base offline.

Usage: check.py BASE_DIR

- every resource kustomization.yaml lists exists, and every manifest in the
  directory is listed;
- each passes `kubernetes-validate --strict` (the Kubernetes API schemas,
  bundled: no cluster, no network);
- prints, as one JSON object, what the e2e test then runs the real binary
  with: the toolhost container's args and the ConfigMap's toolhost.toml.

Run by the e2e test `deploy::the_manifests_validate_and_their_args_start_toolhost`.
Exits non-zero, saying why, on the first failure.
"""

import glob
import json
import os
import subprocess
import sys

import yaml


def fail(message):
    print(f"FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def main():
    base = sys.argv[1]
    with open(os.path.join(base, "kustomization.yaml")) as f:
        kustomization = yaml.safe_load(f)
    listed = kustomization.get("resources", [])
    present = sorted(
        os.path.basename(p) for p in glob.glob(os.path.join(base, "*.yaml"))
        if os.path.basename(p) != "kustomization.yaml"
    )
    if sorted(listed) != present:
        fail(f"kustomization.yaml lists {sorted(listed)}, the directory holds {present}")
    paths = [os.path.join(base, name) for name in listed]
    validator = os.path.join(os.path.dirname(sys.executable), "kubernetes-validate")
    checked = subprocess.run([validator, "--strict", "--quiet", *paths], capture_output=True, text=True)
    if checked.returncode != 0:
        fail(f"kubernetes-validate: {checked.stdout}{checked.stderr}")
    kinds = {}
    for path in paths:
        with open(path) as f:
            for doc in yaml.safe_load_all(f):
                kinds[doc["kind"]] = doc
    wanted = {"Deployment", "Service", "ConfigMap", "PodDisruptionBudget", "HorizontalPodAutoscaler"}
    if not wanted <= set(kinds):
        fail(f"missing kinds: {wanted - set(kinds)}")
    pod = kinds["Deployment"]["spec"]["template"]["spec"]
    container = next(c for c in pod["containers"] if c["name"] == "toolhost")
    probes = (container["livenessProbe"]["httpGet"]["path"], container["readinessProbe"]["httpGet"]["path"])
    if probes != ("/healthz", "/readyz"):
        fail(f"probes: {probes}")
    print(json.dumps({
        "args": container["args"],
        "env": {e["name"]: e.get("value") for e in container.get("env", [])},
        "config": kinds["ConfigMap"]["data"]["toolhost.toml"],
    }))


if __name__ == "__main__":
    main()
