"""A bundle's files: launch.sh, docker-run.sh, compose.yaml, k8s.yaml (Deployment + Service) and kserve.yaml; for a
replica that spans nodes, launch-node-<r>.sh per node and k8s.yaml as a LeaderWorkerSet + Service (TensorRT-LLM's:
mpirun on node 0 / the leader pod over SSH servers on the others), and for vLLM also its Ray-based layout
(launch-ray-node-<r>.sh, k8s-ray.yaml); for vLLM on GPUs, KServe's LLMInferenceService (llminferenceservice.yaml) where
KServe's templates run that layout.

Every value is written quoted (shlex for the shell, JSON strings for YAML, which YAML reads as they are) and every
comment is one line with control characters removed, so nothing a user or a model file supplies can break out of a
value or a comment. The YAML is emitted by hand (a small emitter below) because PyYAML's dumper writes no comments, and
each flag's comment is the point of the file."""
from __future__ import annotations

import json
import re
import shlex

from advisor.deploy.settings import count
from advisor.deploy.types import MODEL, Bundle
from advisor.knowledge.load import Knowledge

_CTRL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff]+")  # NEL (\x85) breaks a YAML line too


def comment(text: str) -> str:
    """One line: control, NEL, line-separator and BOM characters become spaces; < and > (a name written like markup)
    become ‹ ›, so no document that shows a file (the report's appendix) carries a tag from a user's text."""
    return _CTRL.sub(" ", text or "").replace("<", "‹").replace(">", "›").strip()[:400]


SHM_GIB = 16


class C:
    """A YAML value with a comment after it."""

    def __init__(self, value, note: str = "") -> None:
        self.value, self.note = value, comment(note)


def _scalar(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return json.dumps(v)
    return json.dumps(str(v))  # \u escapes: no control, NEL or line-separator character reaches the file raw


def yaml_lines(node, indent: int = 0) -> list[str]:
    """dicts, lists, scalars and C(value, note); keys are plain identifiers of ours (quoted when they need it)."""
    pad = " " * indent
    out: list[str] = []
    if isinstance(node, dict):
        for k, v in node.items():
            note = ""
            if isinstance(v, C):
                v, note = v.value, v.note
            key = k if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.\-/]*", k) else json.dumps(k)
            tail = f"  # {note}" if note else ""
            if isinstance(v, (dict, list)) and v:
                out.append(f"{pad}{key}:{tail}")
                out += yaml_lines(v, indent + 2)
            else:
                out.append(f"{pad}{key}: {_flow(v)}{tail}")
    elif isinstance(node, list):
        for v in node:
            note = ""
            if isinstance(v, C):
                v, note = v.value, v.note
            tail = f"  # {note}" if note else ""
            if isinstance(v, dict) and v:
                sub = yaml_lines(v, indent + 2)
                out.append(f"{pad}- {sub[0].lstrip()}{tail}")
                out += sub[1:]
            else:
                out.append(f"{pad}- {_flow(v)}{tail}")
    return out


def _flow(v) -> str:
    if isinstance(v, dict):
        return "{}" if not v else "{" + ", ".join(f"{k}: {_flow(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_flow(x) for x in v) + "]"
    return "null" if v is None else _scalar(v)


def _t(k: Knowledge, key: str, lang: str, **kw) -> str:
    text = k.deploy.texts[key].get(lang)
    return text.format(**kw) if kw else text


def _gpus_note(b: Bundle, k: Knowledge) -> str:
    """"1 GPU per replica (plan)", "2 GPUs per replica (plan)"."""
    return _t(k, "gpus", b.lang, gpus=count(k, "gpu", b.gpus_per_replica, b.lang))


def _host_notes(args: list[tuple[str, str]], b: Bundle, k: Knowledge, key: str) -> list[tuple[str, str]]:
    """The listen address's note as this file has it (walk-3 L9: launch.sh runs no container, so none of its ports is
    "published below"): host_sh, host_docker, host_k8s; compose.yaml keeps the generic one (its ports follow)."""
    generic = _t(k, "host", b.lang)
    return [(tok, _t(k, key, b.lang) if note == generic else note) for tok, note in args]


def _header(b: Bundle, k: Knowledge) -> list[str]:
    name = k.engines[b.engine].name
    lines = [_t(k, "header", b.lang, engine=name, model=b.model_name[:120], hw=b.target, version=b.version,
                source=b.source, read=b.read),
             _t(k, "version_note", b.lang, version=b.version)]
    lines += b.warnings
    return [comment(x) for x in lines]


def _args_with_notes(b: Bundle, model: str, args: list | None = None) -> list[tuple[str, str]]:
    """(token, comment) for every argument after the program (the bundle's, or `args`), the comment on the token that
    carries the value."""
    out: list[tuple[str, str]] = []
    what = b.model_what
    if b.model_arg == "positional":
        out.append((model, what))
    elif b.model_arg:
        out += [(b.model_arg, ""), (model, what)]
    for a in b.args if args is None else args:
        if a.value is None:
            out.append((a.flag, a.why))
        else:
            out += [(a.flag, ""), (a.value, a.why)]
    return out


_HERE = 'HERE="$(cd "$(dirname "$0")" && pwd)"'


def _options_here(b: Bundle, k: Knowledge) -> list[str]:
    """Shell lines that write the options files the command reads next to the script itself (not into the folder it
    is run from), so the script finds them wherever it is started; none without such files."""
    if not b.extra_files:
        return []
    lines = [f"{_HERE}  # {comment(_t(k, 'sh_here', b.lang))}"]
    for name, body in b.extra_files.items():
        lines += [f"cat > \"$HERE\"/{shlex.quote(name)} <<'OPTIONS_EOF'", *body.rstrip("\n").splitlines(), "OPTIONS_EOF"]
    return lines


def _here_token(tok: str, b: Bundle) -> str | None:
    """The shell word for an options file's name among the arguments: its path next to the script."""
    return f'"$HERE"/{shlex.quote(tok)}' if tok in b.extra_files else None


def _sh_head(b: Bundle, k: Knowledge, note: str, extra: list[str] | None = None) -> list[str]:
    """A launch script's first lines: the header, what it runs, the model path (MODEL overrides it), the lines a script
    needs of its own, the options files beside it, the environment, and an empty argument list."""
    lines = ["#!/bin/sh"] + [f"# {x}" for x in _header(b, k)]
    # no `set -u`: `"$@"` of an empty list is an unbound variable to older shells (bash 3.2, macOS's /bin/sh)
    lines += [f"# {comment(note)}", "set -e",
              f"MODEL=\"${{MODEL:-{b.model_path}}}\"  # {comment(_t(k, 'model_path', b.lang, what=b.model_what))}",
              *(extra or [])]
    lines += _options_here(b, k)
    lines += [f"export {e.name}={shlex.quote(e.value)}  # {comment(e.why)}" for e in b.env]
    return lines + ["set --"]


def _set_args(b: Bundle, toks: list[tuple[str, str]]) -> list[str]:
    """`set -- "$@" TOKEN  # why` per argument: the model as "$MODEL", the leader's address as "${LEADER_ADDR}", an
    options file by its path beside the script, anything else quoted."""
    out = []
    for tok, note in toks:
        if tok in ("\x00MODEL", MODEL):  # (node_args marks the model as types.MODEL)
            q = '"$MODEL"'
        elif "\x00LEADER" in tok:
            q = '"' + tok.replace("\x00LEADER", "${LEADER_ADDR}") + '"'
        else:
            q = _here_token(tok, b) or shlex.quote(tok)
        out.append(f"set -- \"$@\" {q}" + (f"  # {comment(note)}" if note else ""))
    return out


def _exec(b: Bundle) -> str:
    return "exec " + " ".join(shlex.quote(x) for x in b.program) + ' "$@"'


def launch_sh(b: Bundle, k: Knowledge) -> str:
    lines = _sh_head(b, k, _t(k, "sh_run", b.lang))
    lines += _set_args(b, _host_notes(_args_with_notes(b, "\x00MODEL"), b, k, "host_sh")) + [_exec(b)]
    return "\n".join(lines) + "\n"


def _ps_quote(tok: str) -> str:
    """A PowerShell verbatim string: single quotes, each quote inside doubled (PowerShell also closes a single-quoted
    string on the typographic quotes ‘ ’ ‚ ‛, so those are doubled too); control characters become spaces."""
    tok = _CTRL.sub(" ", tok)
    return "'" + re.sub(r"(['\u2018\u2019\u201a\u201b])", r"\1\1", tok) + "'"


def _windows_path(path: str) -> str:
    """The bundle's model path (/models/...) as a Windows user would keep it: C:\\models\\..."""
    return "C:" + path.replace("/", "\\")


def launch_ps1(b: Bundle, k: Knowledge) -> str:
    """launch.sh for a Windows target, in PowerShell: the same program, arguments and comments, the model path from
    $env:MODEL, the environment set for this process only; the program as the engine's Windows build names it
    (llama-server.exe from a llama.cpp release zip or winget, transformers from pip)."""
    lines = [f"# {x}" for x in _header(b, k)]
    lines += [f"# {comment(_t(k, 'ps_run', b.lang))}", "$ErrorActionPreference = 'Stop'",
              f"$Model = if ($env:MODEL) {{ $env:MODEL }} else {{ {_ps_quote(_windows_path(b.model_path))} }}"
              f"  # {comment(_t(k, 'model_path', b.lang, what=b.model_what))}"]
    lines += [f"$env:{e.name} = {_ps_quote(e.value)}  # {comment(e.why)}" for e in b.env]
    lines.append("$Arguments = @(")
    for tok, note in _host_notes(_args_with_notes(b, "\x00MODEL"), b, k, "host_sh"):
        q = "$Model" if tok in ("\x00MODEL", MODEL) else _ps_quote(tok)
        lines.append(f"    {q}" + (f"  # {comment(note)}" if note else ""))
    lines.append(")")
    prog = [_ps_quote(x) for x in b.program]
    lines.append(f"& {prog[0]} {' '.join(prog[1:])} @Arguments".replace("  ", " "))
    return "\n".join(lines) + "\n"


def _container_cmd(b: Bundle) -> tuple[list[str], list[tuple[str, str]]]:
    """(what the container runs, the arguments with notes): the image's own entrypoint where it has one."""
    args = _args_with_notes(b, b.model_path)
    return (list(b.image_entrypoint) or list(b.program)), args


def docker_run(b: Bundle, k: Knowledge) -> str:
    lines = ["#!/bin/sh"] + [f"# {x}" for x in _header(b, k)]
    lines += [f"# {comment(_t(k, 'docker_note', b.lang))} ({b.image_source})", "set -e",
              f"MODEL_DIR=\"${{MODEL_DIR:-$PWD/models}}\"  # "
              f"{comment(_t(k, 'model_path', b.lang, what=b.model_what))}"]
    lines += _options_here(b, k) + ["set --"]
    entry, args = _container_cmd(b)
    args = _host_notes(args, b, k, "host_docker")
    opts = ["--rm", "-p", f"{b.port}:{b.port}", "-v", f"\x00MODEL_DIR:{k.deploy.model_mount}:ro"]
    if b.gpu_resource == "nvidia.com/gpu":
        opts += ["--gpus", str(b.gpus_per_replica)]
    elif b.gpu_resource == "amd.com/gpu":
        opts += ["--device", "/dev/kfd", "--device", "/dev/dri", "--group-add", "video"]
    if b.shm:
        opts.append("--ipc=host")
    for e in b.env:
        opts += ["-e", f"{e.name}={e.value}"]
    for name in b.extra_files:  # the copy the script has just written beside itself
        opts += ["-v", f"\x00HERE/{name}:/{name}:ro"]
    if not b.image_entrypoint:
        opts += ["--entrypoint", b.program[0]]
    for o in opts:
        q = shlex.quote(o)
        if "\x00" in o:
            q = '"' + o.replace("\x00MODEL_DIR", "$MODEL_DIR").replace("\x00HERE", "$HERE") + '"'
        lines.append(f"set -- \"$@\" {q}")
    lines.append(f"set -- \"$@\" {shlex.quote(b.image or '')}  # {comment(_t(k, 'docker_note', b.lang))}")
    rest = [] if b.image_entrypoint else list(b.program[1:])
    for tok in rest:
        lines.append(f"set -- \"$@\" {shlex.quote(tok)}")
    for tok, note in args:
        tok = f"/{tok}" if tok in b.extra_files else tok
        lines.append(f"set -- \"$@\" {shlex.quote(tok)}" + (f"  # {comment(note)}" if note else ""))
    lines.append('exec docker run "$@"')
    return "\n".join(lines) + "\n"


def _yaml_args(args: list[tuple[str, str]], extra: dict[str, str]) -> list:
    return [C(f"/config/{t}" if t in extra else t, n) for t, n in args]


def _no_interpolation(items: list, marker: str, escaped: str) -> list:
    """Compose substitutes ${VAR} / $VAR in every value and Kubernetes $(VAR) in args: a literal $ in a value (a
    model name) is written escaped ($$, $$( ), so it reaches the engine as typed."""
    return [C(c.value.replace(marker, escaped), c.note) if isinstance(c, C) and isinstance(c.value, str) else c
            for c in items]


def compose(b: Bundle, k: Knowledge) -> str:
    entry, args = _container_cmd(b)
    svc: dict = {"image": C(b.image, _t(k, "docker_note", b.lang)), "entrypoint": entry,
                 "command": _no_interpolation(_yaml_args(args, b.extra_files), "$", "$$"),
                 "ports": [f"{b.port}:{b.port}"],
                 "volumes": [C(f"${{MODEL_DIR:-./models}}:{k.deploy.model_mount}:ro",
                               _t(k, "model_path", b.lang, what=b.model_what))]
                 + [f"./{n}:/config/{n}:ro" for n in b.extra_files]}
    if b.env:
        svc["environment"] = {e.name: C(e.value, e.why) for e in b.env}
    if b.shm:
        svc["ipc"] = C("host", _t(k, "shm", b.lang))
    if b.gpu_resource == "nvidia.com/gpu":
        svc["deploy"] = {"resources": {"reservations": {"devices": [
            {"driver": "nvidia", "count": C(b.gpus_per_replica, _gpus_note(b, k)),
             "capabilities": ["gpu"]}]}}}
    elif b.gpu_resource == "amd.com/gpu":
        svc["devices"] = ["/dev/kfd", "/dev/dri"]
        svc["group_add"] = ["video"]
    svc["restart"] = "unless-stopped"
    doc = {"services": {b.name: svc}}
    return "\n".join([f"# {x}" for x in _header(b, k)] + yaml_lines(doc)) + "\n"


def _resources(b: Bundle, k: Knowledge) -> dict:
    req: dict = {"cpu": "2" if b.device == "cpu" else "4", "memory": C(f"{b.memory_gib}Gi", b.memory_why)}
    # a memory-backed /dev/shm counts against the container's memory limit
    lim: dict = {"memory": f"{b.memory_gib + (SHM_GIB if b.shm else 0)}Gi"}
    if b.gpu_resource:
        lim[b.gpu_resource] = C(b.gpus_per_replica, _gpus_note(b, k))
    return {"requests": req, "limits": lim}


def _storage(b: Bundle, k: Knowledge) -> tuple[list, list]:
    """(volumeMounts, volumes) of a server pod: the model read-only, /dev/shm for tensor-parallel workers, the options
    file's ConfigMap."""
    mounts: list = [{"name": "model", "mountPath": k.deploy.model_mount, "readOnly": True}]
    volumes: list = [C({"name": "model", "persistentVolumeClaim": {"claimName": "models"}},
                       _t(k, "model_path", b.lang, what=b.model_what))]
    if b.shm:
        mounts.append({"name": "shm", "mountPath": "/dev/shm"})
        volumes.append(C({"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{SHM_GIB}Gi"}},
                         _t(k, "shm", b.lang)))
    if b.extra_files:
        mounts.append({"name": "config", "mountPath": "/config", "readOnly": True})
        volumes.append({"name": "config", "configMap": {"name": f"{b.name}-options"}})
    return mounts, volumes


def _http(b: Bundle, k: Knowledge, wait_s: int = 0) -> dict:
    """The container's HTTP port and its startup, readiness and liveness probes on the engine's health path; `wait_s`:
    what the container may spend before the server starts (the MPI leader waiting for the workers' SSH servers),
    added to the startup budget, which counts from the container's start."""
    start_s = k.deploy.probe_start_s.get(b.engine, 600)
    probe = {"httpGet": {"path": b.health, "port": "http"}, "timeoutSeconds": 10}  # SGLang's /health generates
    note = (_t(k, "startup_mpi", b.lang, w=wait_s, s=start_s) if wait_s else _t(k, "startup", b.lang, s=start_s))
    return {"ports": [{"name": "http", "containerPort": b.port}],
            "startupProbe": C({**probe, "periodSeconds": 10, "failureThreshold": max(6, (start_s + wait_s) // 10)},
                              note),
            "readinessProbe": {**probe, "periodSeconds": 10, "failureThreshold": 3},
            "livenessProbe": {**probe, "periodSeconds": 30, "failureThreshold": 3}}


def _options_map(b: Bundle) -> list[str]:
    """The ConfigMap of the options file the command reads, and its separator ([] without one)."""
    if not b.extra_files:
        return []
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{b.name}-options"},
          "data": dict(b.extra_files)}
    return yaml_lines(cm) + ["---"]


def kubernetes(b: Bundle, k: Knowledge) -> str:
    entry, args = _container_cmd(b)
    args = _host_notes(args, b, k, "host_k8s")
    mounts, volumes = _storage(b, k)
    container: dict = {"name": "server", "image": C(b.image, _t(k, "docker_note", b.lang)), "command": entry,
                       "args": _no_interpolation(_yaml_args(args, b.extra_files), "$(", "$$(")}
    if b.env:
        container["env"] = [C({"name": e.name, "value": e.value}, e.why) for e in b.env]
    http = _http(b, k)
    container.update({"ports": http.pop("ports"), "resources": _resources(b, k), **http, "volumeMounts": mounts})
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": b.name, "labels": {"app": b.name}},
        "spec": {"replicas": C(b.replicas, b.replicas_why), "selector": {"matchLabels": {"app": b.name}},
                 "template": {"metadata": {"labels": {"app": b.name}},
                              "spec": {"containers": [container], "volumes": volumes}}},
    }
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": b.name, "labels": {"app": b.name}},
               "spec": {"selector": {"app": b.name}, "ports": [{"name": "http", "port": b.port,
                                                                  "targetPort": "http"}]}}
    docs = [f"# {x}" for x in _header(b, k)] + [f"# {comment(_t(k, 'k8s_note', b.lang, path=b.health))}"]
    docs += _options_map(b) + yaml_lines(deployment) + ["---"] + yaml_lines(service)
    return "\n".join(docs) + "\n"


def kserve(b: Bundle, k: Knowledge) -> str | None:
    """KServe's Hugging Face runtime where the engine has one (vLLM as its backend; transformers for PyTorch)."""
    d = k.deploy.engines[b.engine]
    if _no_kserve(b, k) is not None:
        return None
    from advisor.deploy.settings import served_name

    args: list = [C(f"--model_name={served_name(b.model_name)}", _t(k, "served_name", b.lang))]
    if b.engine == "pytorch":
        args.append("--backend=huggingface")
    else:
        args.append("--backend=vllm")
    skip = {"--host", "--port", "--served-model-name"}
    for a in b.args if b.engine == "vllm" else []:  # the runtime passes vLLM's engine arguments through
        if a.flag in skip:
            continue
        args.append(C(a.flag if a.value is None else f"{a.flag}={a.value}", a.why))
    # Knative appends "-predictor-00001-deployment" (27 characters) to a name that must stay within 63
    isvc = {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": b.name[:35].rstrip("-")},
            "spec": {"predictor": {"model": {
                "modelFormat": {"name": "huggingface"}, "args": args,
                "storageUri": C(f"pvc://models/{b.model_path.rsplit('/', 1)[-1]}",
                                _t(k, "model_path", b.lang, what=b.model_what)),
                "resources": _resources(b, k)}}}}
    if b.env:
        isvc["spec"]["predictor"]["model"]["env"] = [C({"name": e.name, "value": e.value}, e.why) for e in b.env]
    head = [f"# {x}" for x in _header(b, k)] + [f"# {comment(_t(k, 'kserve_note', b.lang))} ({d.kserve.source})"]
    if b.engine == "vllm" and b.device != "gpu":
        head.append(f"# {comment(_t(k, 'kserve_cpu', b.lang, read=d.kserve.cpu_read))} ({d.kserve.cpu_source})")
    return "\n".join(head + yaml_lines(isvc)) + "\n"


def _no_llmisvc(b: Bundle, k: Knowledge) -> str | None:
    """Why this bundle gets no llminferenceservice.yaml, or None when it does: KServe's LLMInferenceService templates
    run vLLM on GPUs, on one node or as data-parallel ranks over nodes (the pipeline-parallel worker config they name
    is not in the release)."""
    d = k.deploy.engines[b.engine]
    if d.llmisvc is None:
        return _t(k, "llmisvc_none_engine", b.lang, engine=k.engines[b.engine].name)
    if b.device != "gpu" or not b.image:
        return _t(k, "llmisvc_none_cpu", b.lang)
    if b.nodes > 1 and not any(a.role == "start_rank" for a in b.args):
        return _t(k, "llmisvc_none_pp", b.lang, n=b.nodes, version=d.llmisvc.version, config=d.llmisvc.pp_missing)
    return None


def llm_inference_service(b: Bundle, k: Knowledge) -> str | None:
    """llminferenceservice.yaml: KServe's LLMInferenceService for a GPU vLLM bundle. KServe's own template writes the
    server's command (model path, port, served name, tensor parallelism, and across nodes the data-parallel launch), so
    the main container carries the rest of the bundle's arguments; the parallelism, the model's URI and name, the
    replicas and each pod's GPUs come from the plan."""
    if _no_llmisvc(b, k) is not None:
        return None
    from advisor.deploy.settings import served_name

    L = k.deploy.engines[b.engine].llmisvc
    flags = k.deploy.engines[b.engine].flags
    by = {a.flag: a for a in b.args}
    dp_nodes = b.nodes > 1
    drop = set(L.dp_templated if dp_nodes else L.templated)
    args: list = []
    for a in b.args:
        if a.flag in drop:
            continue
        args += [C(a.flag, a.why)] if a.value is None else [a.flag, C(a.value, a.why)]
    args = _no_interpolation(args, "$(", "$$(")  # Kubernetes expands $(VAR) in args
    per_pod = max(1, b.gpus_per_replica // max(1, b.nodes))
    res = _resources(b, k)
    if b.gpu_resource and dp_nodes:
        res["limits"][b.gpu_resource] = C(per_pod, _t(k, "lws_gpus", b.lang, gpus=count(k, "gpu", per_pod, b.lang)))
    container: dict = {"name": L.container, "image": C(b.image, _t(k, "llmisvc_image", b.lang)),
                       "args": args, "resources": res,
                       "securityContext": {"runAsNonRoot": C(False, _t(k, "llmisvc_root", b.lang, src=L.root_source))}}
    if b.env:
        container["env"] = [C({"name": e.name, "value": e.value}, e.why) for e in b.env]
    tp = by.get(flags["tp"])
    par: dict = {"tensor": C(int(tp.value), tp.why)} if tp is not None else {}
    if dp_nodes:
        dm = k.deploy.engines[b.engine].dp_multi_node
        dp, local, port = by[flags["dp"]], by[dm.size_local], by[dm.port_flag]
        par["data"] = C(int(dp.value), dp.why)
        par["dataLocal"] = C(int(local.value), _t(k, "llmisvc_dp", b.lang, nodes=b.nodes, per=local.value,
                                                  src=L.dp_template_source))
        if flags.get("ep") in by:
            par["expert"] = C(True, by[flags["ep"]].why)
        par["dataRPCPort"] = C(int(port.value), port.why)
    spec: dict = {
        "model": {"uri": C(f"pvc://models/{b.model_path.rsplit('/', 1)[-1]}",
                           _t(k, "llmisvc_uri", b.lang, dir=L.model_dir, what=b.model_what)),
                  "name": C(served_name(b.model_name), _t(k, "llmisvc_name", b.lang))},
        "replicas": C(b.replicas, b.replicas_why)}
    if par:
        spec["parallelism"] = par
    spec["router"] = C({"gateway": {}, "route": {}, "scheduler": {}}, _t(k, "llmisvc_router", b.lang))
    spec["template"] = {"containers": [container]}
    if dp_nodes:
        spec["worker"] = C({"containers": [container]}, _t(k, "llmisvc_worker", b.lang))
    doc = {"apiVersion": L.api_version, "kind": "LLMInferenceService",
           "metadata": {"name": b.name[:L.name_max].rstrip("-")}, "spec": spec}
    head = [f"# {x}" for x in _header(b, k)]
    head += [f"# {comment(_t(k, 'llmisvc_note', b.lang, api=L.api_version, version=L.version, dir=L.model_dir, port=L.port))}"
             f" ({L.source})",
             f"# {comment(_t(k, 'llmisvc_args', b.lang, src=L.template_source))}"]
    return "\n".join(head + yaml_lines(doc)) + "\n"


def _no_kserve(b: Bundle, k: Knowledge) -> str | None:
    """Why this bundle gets no kserve.yaml, or None when it does: KServe's Hugging Face runtime serves vLLM (on a GPU,
    and on a CPU where its docs say so) and transformers."""
    d = k.deploy.engines[b.engine]
    name = k.engines[b.engine].name
    if d.kserve is None:
        return _t(k, "kserve_none", b.lang, engine=name)
    if b.engine == "vllm" and b.device != "gpu" and d.kserve.cpu_source is None:
        return _t(k, "kserve_no_cpu", b.lang, engine=name)
    return None


def _absent(b: Bundle, k: Knowledge, files: dict[str, str]) -> dict[str, str]:
    """The usual files this bundle does not carry, each with the real reason."""
    name = k.engines[b.engine].name
    why: dict[str, str] = {}
    for f in ("launch.sh", "docker-run.sh", "compose.yaml", "k8s.yaml", "kserve.yaml", "llminferenceservice.yaml"):
        if f in files:
            continue
        if f == "llminferenceservice.yaml":  # (said for the engine KServe's LLMInferenceService runs)
            why[f] = _no_llmisvc(b, k) if k.deploy.engines[b.engine].llmisvc is not None else ""
        elif b.nodes > 1:
            why[f] = _t(k, "absent_multinode", b.lang, n=b.nodes)
        elif f == "kserve.yaml":
            why[f] = _no_kserve(b, k) or ""
        elif not b.image:
            why[f] = _t(k, "absent_no_image", b.lang, engine=name)
    return {f: w for f, w in why.items() if w}


def launch_node_sh(b: Bundle, k: Knowledge, rank: int) -> str:
    """Node `rank`'s launch script of a replica that spans b.nodes nodes: the leader's address from LEADER_ADDR."""
    lines = _sh_head(b, k, _t(k, "sh_node", b.lang, r=rank, n=b.nodes),
                     ['LEADER_ADDR="${LEADER_ADDR:?set LEADER_ADDR to the address of node 0}"'])
    lines += _set_args(b, _host_notes(b.node_args(rank, "\x00LEADER"), b, k, "host_sh")) + [_exec(b)]
    return "\n".join(lines) + "\n"


def _fail(text: str) -> str:
    """A shell command that says `text` on stderr and stops the script."""
    return f"echo {shlex.quote(comment(text))} >&2; exit 1"


def _mpi_hosts_lines(b: Bundle, k: Knowledge) -> list[str]:
    """launch-node-0.sh's host list: MPI_HOSTS (comma-separated, node 0 first) checked for names only, for a host
    named twice (Open MPI would make it one host of twice the slots) and for the replica's node count, each host
    given its ranks as `HOST:SLOTS`, the hosts after the first kept in `others`; then the port of the others' SSH
    server."""
    m, t = b.mpi, lambda key, **kw: _t(k, key, b.lang, **kw)
    var = m.hosts_env
    return [f'{var}="${{{var}:-}}"  # {comment(t("mpi_hosts_env"))}',
            f'[ -n "${var}" ] || {{ {_fail(t("mpi_hosts_missing", n=b.nodes))}; }}',
            f'case ${var} in -*|*,-*|*[!A-Za-z0-9.,_-]*) {_fail(t("mpi_hosts_bad"))};; esac',
            "hosts=", "others=", "count=0", "IFS=,", f"for h in ${var}; do", '  [ -n "$h" ] || continue',
            f'  case ",$hosts" in *",$h:"*) {_fail(t("mpi_hosts_dup"))};; esac',
            '  [ -z "$hosts" ] || others="$others $h"',
            f'  hosts="${{hosts:+$hosts,}}$h:{m.per_node}"', "  count=$((count + 1))", "done", "unset IFS",
            f'[ "$count" -eq {b.nodes} ] || {{ {_fail(t("mpi_hosts_count", n=b.nodes))}; }}',
            *_ssh_port_lines(b, k)]


def _ssh_port_lines(b: Bundle, k: Knowledge) -> list[str]:
    """SSH_PORT (the other nodes' SSH server, the bundle's port by default), checked to be 1 to 65535: digits only,
    no leading 0, at most 5 digits (so the shell's number never overflows), then the range."""
    bad = _fail(_t(k, "ssh_port_bad", b.lang))
    return [f'SSH_PORT="${{SSH_PORT:-{b.mpi.ssh_port}}}"  # {comment(_t(k, "ssh_port_sh", b.lang))}',
            f'case $SSH_PORT in ""|0*|*[!0-9]*|??????*) {bad};; esac',
            f'[ "$SSH_PORT" -le 65535 ] || {{ {bad}; }}']


def _fail_naming(text: str, var: str) -> str:
    """_fail with the value of the shell variable `var` after the text (a checked name: nothing in it runs)."""
    return f'echo {shlex.quote(comment(text))}": ${var}" >&2; exit 1'


# the other nodes' SSH host keys, neither checked nor remembered: they are made (ssh-keygen -A) as each fresh
# container or pod starts, so none is known in advance and a remembered one would stop the next run
_NO_HOST_KEYS = ("StrictHostKeyChecking=no", "UserKnownHostsFile=/dev/null")


def _env_loop(m, act: str) -> str:
    """One POSIX-sh line running `act` (with $n) for each variable set here whose name starts with one of
    m.export_prefixes + "_" and is not already in m.exports: names only, from `env`, each matched whole and then
    checked to be set (a value's newline may make a line of `env` look like NAME=…, which names no variable)."""
    pat = "^(" + "|".join(m.export_prefixes) + ")_[A-Za-z0-9_]*$"
    return (f"for n in $(env | cut -d= -f1 | grep -E {shlex.quote(pat)} | sort -u); do "
            f"case $n in {'|'.join(m.exports)}) continue;; esac; "
            f'if eval "[ -n \\"\\${{$n+x}}\\" ]"; then {act}; fi; done')


def _one_word(b: Bundle, k: Knowledge, key: str = "mpi_word") -> str:
    """A shell function that stops the script on a word that would be split or globbed on the way (by
    trtllm-llmapi-launch, which runs its command as one unquoted string; by sshd's AuthorizedKeysFile)."""
    return (f'one_word() {{ case $1 in *[[:space:]]*|*[\\*\\?\\[]*) '
            f'{_fail_naming(_t(k, key, b.lang), "1")};; esac; }}')


def _exports(m) -> str:
    """`-x NAME` for each variable set here (nothing for one that is not: -x of an unset variable is not asked)."""
    return " ".join(f"${{{e}+{m.export_flag}}} ${{{e}+{e}}}" for e in m.exports)


_MPI_PREFIX = '"$(dirname "$(dirname "$(command -v mpirun)")")"'


def launch_mpi_node_sh(b: Bundle, k: Knowledge, rank: int) -> str:
    """Node `rank`'s script of TensorRT-LLM's MPI launch. Node 0: mpirun over the hosts in MPI_HOSTS (this node
    first), one rank per GPU, each through trtllm-llmapi-launch before trtllm-serve with the bundle's arguments. The
    others: the SSH server node 0's mpirun reaches (the user's public key in AUTHORIZED_KEYS; no key is made here)."""
    m, t = b.mpi, lambda key, **kw: _t(k, key, b.lang, **kw)
    if rank > 0:
        return _mpi_sshd_sh(b, k, rank)
    note = t("sh_mpi_node0", n=b.nodes, np=m.ranks, g=m.per_node) + f" ({m.source}; {m.mpirun_source})"
    lines = _sh_head(b, k, note, _mpi_hosts_lines(b, k))
    lines += [_one_word(b, k), 'one_word "$MODEL"'] + (['one_word "$HERE"'] if b.extra_files else [])
    lines.append(f"command -v {shlex.quote(m.program[0])} >/dev/null 2>&1 || {{ {_fail(t('mpi_no_mpirun'))}; }}")
    p, _, o = m.ssh_flags
    no_keys = " ".join(f"{o} {x}" for x in _NO_HOST_KEYS)
    probe = " ".join(shlex.quote(x) for x in (o, "BatchMode=yes", o, "ConnectTimeout=10", p)) + \
        ' "$SSH_PORT" ' + " ".join(shlex.quote(x) for x in no_keys.split())
    lines += [f"command -v ssh >/dev/null 2>&1 || {{ {_fail(t('mpi_no_ssh'))}; }}",
              f"for h in $others; do  # {comment(m.probe_why)}",
              f'  ssh {probe} "$h" true </dev/null || {{ {_fail_naming(t("mpi_no_answer"), "h")}; }}', "done"]
    lines += [f'set -- "$@" {shlex.quote(m.root_flag)}  # {comment(m.root_why)}',
              f'set -- "$@" {shlex.quote(m.prefix_flag)} {_MPI_PREFIX}  # {comment(m.prefix_why)}',
              f'set -- "$@" {shlex.quote(m.np_flag)} {m.ranks}  # {comment(m.np_why)}',
              f'set -- "$@" {shlex.quote(m.hosts_flag)} "$hosts"  # {comment(m.hosts_why)}',
              f'set -- "$@" {shlex.quote(m.mca_flag)} {shlex.quote(m.keep_fqdn_param)} 1  '
              f'# {comment(m.fqdn_why)} ({m.fqdn_source})',
              f'set -- "$@" {shlex.quote(m.mca_flag)} {shlex.quote(m.rsh_param)} '
              f'"{p} $SSH_PORT {no_keys}"  # {comment(m.rsh_why)}',
              f'set -- "$@" {_exports(m)}  # {comment(m.export_why)}',
              _env_loop(m, f'set -- "$@" {shlex.quote(m.export_flag)} "$n"') + f"  # {comment(m.export_prefixes_why)}"]
    lines += [f'set -- "$@" {shlex.quote(x)}' + (f"  # {comment(m.launcher_why)}" if i == 0 else "")
              for i, x in enumerate([*m.launcher, *b.program])]
    lines += _set_args(b, _host_notes(_args_with_notes(b, "\x00MODEL"), b, k, "host_sh"))
    lines.append(f'exec {shlex.quote(m.program[0])} "$@"')
    return "\n".join(lines) + "\n"


def _sshd_args(m, port: str, keys: str) -> list[str]:
    """sshd's arguments: foreground, logging to stderr, on `port`, keys from `keys` only, root by key alone."""
    d, e, p, o = m.sshd_flags
    return [d, e, p, port, o, f"AuthorizedKeysFile={keys}", o, "PasswordAuthentication=no",
            o, "PermitRootLogin=prohibit-password"]


def _mpi_sshd_sh(b: Bundle, k: Knowledge, rank: int) -> str:
    """A node above 0: no server of its own, only the SSH server node 0's mpirun starts this node's ranks through."""
    m, t = b.mpi, lambda key, **kw: _t(k, key, b.lang, **kw)
    sshd = shlex.quote(m.sshd_program[0])
    lines = ["#!/bin/sh"] + [f"# {x}" for x in _header(b, k)]
    lines += [f"# {comment(t('sh_mpi_node', r=rank, n=b.nodes, port=m.ssh_port))} ({m.mpirun_source})", "set -e",
              *_ssh_port_lines(b, k),
              f'AUTHORIZED_KEYS="${{AUTHORIZED_KEYS:-$HOME/.ssh/authorized_keys}}"  # '
              f'{comment(t("ssh_authorized_sh"))}',
              _one_word(b, k, "sshd_keys_word"), 'one_word "$AUTHORIZED_KEYS"',
              # sshd_config(5): a relative AuthorizedKeysFile is taken from the user's home, and %% %h %u… expanded
              f'case $AUTHORIZED_KEYS in ""|[!/]*|*%*) {_fail(t("sshd_keys_path"))};; esac',
              f"command -v {sshd} >/dev/null 2>&1 || {{ {_fail(t('mpi_no_sshd', image=b.image or ''))}; }}",
              f'[ "$(id -u)" -eq 0 ] || {{ {_fail(t("sshd_root"))}; }}',
              f'[ -s "$AUTHORIZED_KEYS" ] || {{ {_fail(t("mpi_no_keys"))}; }}',
              f"mkdir -p /run/sshd  # {comment(t('sshd_privsep'))}",
              f"ssh-keygen -A  # {comment(t('sshd_hostkeys'))}", "set --"]
    args = _sshd_args(m, "\x00PORT", "\x00KEYS")
    for i, tok in enumerate(args):
        q = ('"$SSH_PORT"' if tok == "\x00PORT" else
             '"AuthorizedKeysFile=$AUTHORIZED_KEYS"' if "\x00KEYS" in tok else shlex.quote(tok))
        lines.append(f'set -- "$@" {q}' + (f"  # {comment(t('sshd_run'))}" if i == 0 else ""))
    lines.append(f'exec "$(command -v {sshd})" "$@"')
    return "\n".join(lines) + "\n"


def _k8s_script(parts: list[str]) -> str:
    """One `sh -c` line from shell commands, every $( written $$( (Kubernetes expands $(NAME) in a command)."""
    return " ".join(parts).replace("$(", "$$(")


def _mpi_container(b: Bundle, k: Knowledge, leader: bool, mounts: list) -> dict:
    """A group pod's container in TensorRT-LLM's MPI launch. The leader waits for each worker's SSH server (the
    workers named as LWS names them: the leader's name + -<index>, in its subdomain), then runs mpirun over the group
    (its own name first: rank 0 and the HTTP server here) with trtllm-serve's arguments as the pod's args. A worker
    runs an SSH server with the Secret's public key; the Secret's key is copied where only root reads it."""
    m, t = b.mpi, lambda key, **kw: _t(k, key, b.lang, **kw)
    run = "/run/mpi-ssh"
    if leader:
        key = f"{run}/{m.ssh_key}"
        p, i, o = m.ssh_flags
        ssh = [p, str(m.ssh_port), i, key, o, _NO_HOST_KEYS[0], o, _NO_HOST_KEYS[1]]
        probe = ["ssh", *ssh, o, "BatchMode=yes", o, "ConnectTimeout=5"]
        every, most = m.ssh_retry_s, m.ssh_wait_s
        mpirun = [shlex.quote(x) for x in (m.program[0], m.root_flag, m.prefix_flag)] + [_MPI_PREFIX] + \
            [shlex.quote(x) for x in (m.np_flag, str(m.ranks), m.hosts_flag)] + ['"$hosts"'] + \
            [shlex.quote(x) for x in (m.mca_flag, m.keep_fqdn_param, "1", m.mca_flag, m.rsh_param, " ".join(ssh))] + \
            [_exports(m), "$xs"] + \
            [shlex.quote(x) for x in (*m.launcher, *(b.image_entrypoint or b.program))] + ['"$@"']
        script = _k8s_script([
            "set -e;",
            f'[ "${{LWS_GROUP_SIZE:-}}" = {b.nodes} ] || {{ {_fail(t("lws_mpi_group", n=b.nodes))}; }};',
            f"command -v ssh >/dev/null 2>&1 || {{ {_fail(t('mpi_no_ssh'))}; }};",
            f"install -d -m 700 {run}; install -m 600 {m.ssh_dir}/{m.ssh_key} {key};",
            "xs=;", _env_loop(m, f'xs="$xs {shlex.quote(m.export_flag)} $n"') + ";",
            'leader="$LWS_LEADER_ADDRESS";', f'hosts="$(hostname):{m.per_node}";', "i=1;",
            f'while [ "$i" -lt {b.nodes} ]; do', 'w="${leader%%.*}-$i.${leader#*.}";', "waited=0;",
            f'until {" ".join(shlex.quote(x) for x in probe)} "$w" true; do', f"waited=$((waited + {every}));",
            f'if [ "$waited" -ge {most} ]; then '
            f'{_fail(t("lws_mpi_no_worker", s=most, secret=m.secret))}; fi;',
            f"sleep {every};", "done;", f'hosts="$hosts,$w:{m.per_node}";', "i=$((i + 1));", "done;",
            "exec " + " ".join(mpirun)])
        note = t("lws_mpi_leader", every=every, s=most, np=m.ranks, g=m.per_node) + "; " + t("ssh_copy")
        args = _k8s_args(b, _host_notes(_args_with_notes(b, MODEL), b, k, "host_k8s"))
    else:
        keys = f"{run}/{m.ssh_authorized}"
        sshd = shlex.quote(m.sshd_program[0])
        script = _k8s_script([
            "set -e;", f"command -v {sshd} >/dev/null 2>&1 || {{ {_fail(t('mpi_no_sshd', image=b.image or ''))}; }};",
            f"install -d -m 700 {run}; install -m 600 {m.ssh_dir}/{m.ssh_authorized} {keys};",
            "mkdir -p /run/sshd;", "ssh-keygen -A;", f'exec "$(command -v {sshd})" "$@"'])
        note = t("lws_mpi_worker", port=m.ssh_port) + "; " + t("ssh_copy")
        args = [C(x, t("sshd_run") if j == 0 else "") for j, x in enumerate(_sshd_args(m, str(m.ssh_port), keys))]
    return _lws_pod_container(b, k, leader, mounts, ["/bin/sh", "-c", C(script, note), "sh"], args)


def _ssh_volume(b: Bundle, k: Knowledge, leader: bool) -> tuple[dict, C]:
    """(volumeMount, volume) of the user's key pair on a group pod: the leader gets its private key, a worker the
    public key, from the Secret the user makes (the bundle never holds a key)."""
    m = b.mpi
    item = m.ssh_key if leader else m.ssh_authorized
    why = _t(k, "lws_ssh_leader" if leader else "lws_ssh_worker", b.lang, secret=m.secret)
    return ({"name": "ssh", "mountPath": m.ssh_dir, "readOnly": True},
            C({"name": "ssh", "secret": {"secretName": m.secret, "defaultMode": 0o400,
                                         "items": [{"key": item, "path": item}]}}, why))


def _lws_container(b: Bundle, k: Knowledge, leader: bool, mounts: list) -> dict:
    """One pod's container of the group: the leader's serves HTTP (port, probes), a worker's runs its ranks."""
    args = _k8s_args(b, _host_notes(b.node_args(0 if leader else 1, "$(LWS_LEADER_ADDRESS)",
                                                rank_value=None if leader else "$(LWS_WORKER_INDEX)"), b, k, "host_k8s"))
    command = list(b.image_entrypoint) or list(b.program)
    start = next((a for a in b.args if a.role == "start_rank"), None)
    if not leader and start is not None:
        # a worker's start rank differs per pod (index x ranks per node): Kubernetes expands $(VAR) but computes
        # nothing, so the shell does, and the rest of the arguments reach the program as "$@"
        i = next(j for j, a in enumerate(args) if str(a.value if isinstance(a, C) else a) == start.flag)
        del args[i:i + 2]
        script = ("exec " + " ".join(shlex.quote(x) for x in command) + f' "$@" {shlex.quote(start.flag)} '
                  f'"$((LWS_WORKER_INDEX * {int(start.value)}))"')
        command = ["/bin/sh", "-c", C(script, _t(k, "lws_start_rank", b.lang, n=int(start.value))), "sh"]
    return _lws_pod_container(b, k, leader, mounts, command, args)


def _k8s_args(b: Bundle, notes: list[tuple[str, str]]) -> list:
    """A pod's args from (token, comment): the model's path in the container, an options file from its ConfigMap, and
    every $( escaped but LWS's own two variables (Kubernetes expands $(VAR) in args)."""
    args = []
    for tok, note in notes:
        tok = b.model_path if tok == MODEL else f"/config/{tok}" if tok in b.extra_files else tok
        tok = tok.replace("$(", "$$(")  # Kubernetes expands $(VAR) in args: only LWS's own two are meant
        for var in ("LWS_LEADER_ADDRESS", "LWS_WORKER_INDEX"):
            tok = tok.replace(f"$$({var})", f"$({var})")
        args.append(C(tok, note))
    return args


def _lws_pod_container(b: Bundle, k: Knowledge, leader: bool, mounts: list, command: list, args: list) -> dict:
    """The rest of a group pod's container: the image, one node's GPUs, IPC_LOCK over RDMA, and on the leader alone
    the HTTP port and probes."""
    per_pod = max(1, b.gpus_per_replica // max(1, b.nodes))
    res = _resources(b, k)
    if b.gpu_resource:
        res["limits"][b.gpu_resource] = C(per_pod, _t(k, "lws_gpus", b.lang,
                                                      gpus=count(k, "gpu", per_pod, b.lang)))
    image_note = _t(k, "image_mpi" if b.mpi is not None else "docker_note", b.lang)
    c: dict = {"name": "leader" if leader else "worker", "image": C(b.image, image_note),
               "command": command, "args": args}
    if b.env:
        c["env"] = [C({"name": e.name, "value": e.value}, e.why) for e in b.env]
    c["resources"] = res
    if b.infiniband:
        c["securityContext"] = {"capabilities": {"add": ["IPC_LOCK"]}}
    if leader:  # (the MPI leader first waits for the workers' SSH servers: that time is added to its startup budget)
        c.update(_http(b, k, b.mpi.ssh_wait_s if b.mpi is not None else 0))
    c["volumeMounts"] = mounts
    return c


def _ray_container(b: Bundle, k: Knowledge, leader: bool, mounts: list) -> dict:
    """A group pod's container in vLLM's Ray-based layout: the leader starts the Ray head and then the server (its
    arguments as the pod's args), a worker joins the head at LWS's leader address, tried again until it answers."""
    r = b.ray
    if leader:
        head = " ".join(shlex.quote(x) for x in [*r.program, *(a.flag for a in r.head)])
        prog = " ".join(shlex.quote(x) for x in (b.image_entrypoint or b.program))
        script = f'{head} && exec {prog} "$@"'
        note = _t(k, "lws_ray_leader", b.lang, port=r.port, s=f"{r.placement_wait_s:,}")
        args = _k8s_args(b, _host_notes(_args_with_notes(b, MODEL, r.serve), b, k, "host_k8s"))
    else:
        script = " ".join(_join_loop(b, k))
        note = _t(k, "lws_ray_worker", b.lang, every=r.join_retry_s, s=r.join_timeout_s)
        args = _k8s_args(b, r.worker_args("$(LWS_LEADER_ADDRESS)"))
    return _lws_pod_container(b, k, leader, mounts, ["/bin/sh", "-c", C(script, note), "sh"], args)


def _join_loop(b: Bundle, k: Knowledge) -> list[str]:
    """Shell lines that join the Ray head with the arguments in "$@": tried again every join_retry_s until it answers,
    for join_timeout_s at most (a node may start before the head is up), as vLLM's multi-node-serving.sh does."""
    r = b.ray
    ray = " ".join(shlex.quote(x) for x in r.program)
    every, most = int(r.join_retry_s), int(r.join_timeout_s)
    gone = shlex.quote(_t(k, "ray_no_head", b.lang, s=most))
    return ["waited=0;", f'until {ray} "$@"; do', f"waited=$((waited + {every}));",
            f'if [ "$waited" -ge {most} ]; then echo {gone} >&2; exit 1; fi;', f"sleep {every};", "done"]


def launch_ray_node_sh(b: Bundle, k: Knowledge, rank: int) -> str:
    """Node `rank`'s script of vLLM's Ray-based layout: node 0 starts the Ray head and then the server; the others join
    that head at LEADER_ADDR (no default), tried again until it answers."""
    r = b.ray
    key = "sh_ray_node0" if rank == 0 else "sh_ray_node"
    lines = ["#!/bin/sh"] + [f"# {x}" for x in _header(b, k)]
    lines += [f"# {comment(_t(k, key, b.lang, r=rank, n=b.nodes))} ({r.source})", "set -e"]
    if rank == 0:
        lines.append(f"MODEL=\"${{MODEL:-{b.model_path}}}\"  # "
                     f"{comment(_t(k, 'model_path', b.lang, what=b.model_what))}")
    else:
        lines.append('LEADER_ADDR="${LEADER_ADDR:?set LEADER_ADDR to the address of node 0}"')
    lines += _options_here(b, k) if rank == 0 else []
    for e in b.env:
        lines.append(f"export {e.name}={shlex.quote(e.value)}  # {comment(e.why)}")
    ray = " ".join(shlex.quote(x) for x in r.program)
    lines.append("set --")
    if rank == 0:
        for a in r.head:
            lines.append(f"set -- \"$@\" {shlex.quote(a.flag)}  # {comment(a.why)}")
        lines += [f'{ray} "$@"', "set --"]
        lines += _set_args(b, _host_notes(_args_with_notes(b, "\x00MODEL", r.serve), b, k, "host_sh")) + [_exec(b)]
    else:
        for tok, note in r.worker_args("\x00LEADER"):
            q = ('"' + tok.replace("\x00LEADER", "${LEADER_ADDR}") + '"') if "\x00LEADER" in tok else shlex.quote(tok)
            lines.append(f"set -- \"$@\" {q}  # {comment(note)}")
        lines.append(f"# {comment(_t(k, 'ray_retry', b.lang, every=r.join_retry_s, s=r.join_timeout_s))} "
                     f"({k.deploy.engines[b.engine].ray_multi_node.script_source})")
        loop = _join_loop(b, k)
        lines += [loop[0].rstrip(";"), loop[1], *(f"  {x.rstrip(';')}" for x in loop[2:-1]), loop[-1]]
    return "\n".join(lines) + "\n"


def leader_worker_set(b: Bundle, k: Knowledge, ray: bool = False) -> str:
    """k8s.yaml of a replica that spans nodes: a LeaderWorkerSet (its group = the replica's nodes) and a Service on the
    leaders, whose pods alone serve HTTP. `ray`: k8s-ray.yaml, the same group in vLLM's Ray-based layout."""
    lws = k.deploy.lws
    mounts, volumes = _storage(b, k)
    labels = {"app": b.name}
    container = _ray_container if ray else _mpi_container if b.mpi is not None else _lws_container

    def template(leader: bool) -> dict:
        mnt, vol = mounts, volumes
        if b.mpi is not None and not ray:  # the user's key pair: the leader's private key, the workers' public one
            extra_mount, extra_volume = _ssh_volume(b, k, leader)
            mnt, vol = [*mounts, extra_mount], [*volumes, extra_volume]
        return {"metadata": {"labels": {**labels, "role": "leader" if leader else "worker"}},
                "spec": {"containers": [container(b, k, leader, mnt)], "volumes": vol}}

    doc = {"apiVersion": lws.api_version, "kind": "LeaderWorkerSet",
           "metadata": {"name": b.name, "labels": labels},
           "spec": {"replicas": C(b.replicas, b.replicas_why),
                    "startupPolicy": lws.startup_policy,
                    "leaderWorkerTemplate": {"size": C(b.nodes, _t(k, "lws_size", b.lang) + "; " + b.nodes_why),
                                             "restartPolicy": lws.restart_policy,
                                             "leaderTemplate": template(True), "workerTemplate": template(False)}}}
    # not the set's own name: LWS makes its headless Service (the pods' DNS names) under that name, and none where one
    # of that name exists already
    service = {"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": b.name + lws.service_suffix, "labels": labels},
               "spec": {"selector": {"leaderworkerset.sigs.k8s.io/name": b.name, "role": "leader"},
                        "ports": [{"name": "http", "port": b.port, "targetPort": "http"}]}}
    docs = [f"# {x}" for x in _header(b, k)]
    docs += [f"# {comment(_t(k, 'lws_note', b.lang, version=lws.version, n=b.nodes, path=b.health))} ({lws.source})",
             f"# {comment(_t(k, 'lws_env', b.lang))} ({lws.env_source})",
             f"# {comment(_t(k, 'lws_old_service', b.lang, name=b.name, service=b.name + lws.service_suffix))}"]
    if b.mpi is not None and not ray:
        m = b.mpi
        docs += [f"# {comment(_t(k, 'lws_mpi_note', b.lang))} ({m.mpirun_source})",
                 "# " + comment(_t(k, "lws_mpi_secret", b.lang, secret=m.secret, keyfile=m.ssh_key,
                                   auth=m.ssh_authorized)),
                 f"# {comment(_t(k, 'lws_mpi_example', b.lang))} ({m.lws_example})",
                 f"# {comment(m.fqdn_why)} ({m.fqdn_source})", f"# {comment(m.rsh_why_k8s)}",
                 f"# {comment(m.export_prefixes_why)}"]
    if ray:
        docs.append(f"# {comment(_t(k, 'lws_ray_note', b.lang, version=lws.version))} ({b.ray.lws_example})")
    docs += _options_map(b) + yaml_lines(doc) + ["---"] + yaml_lines(service)
    return "\n".join(docs) + "\n"


def pd_sh(b: Bundle, k: Knowledge, side: str) -> str:
    """pd-prefill.sh / pd-decode.sh: the bundle's own command on the side's port and worker size, with the engine's
    prefill/decode switches (knowledge/deploy.yaml pd), on the GPUs PD_PREFILL_GPUS / PD_DECODE_GPUS name."""
    pd = k.deploy.engines[b.engine].pd
    port = pd.prefill_port if side == "prefill" else pd.decode_port
    tp_flag = k.deploy.engines[b.engine].flags.get("tp")
    first = 0 if side == "prefill" else b.pd_gpus  # one worker of each side on one host, side by side
    gpus = ",".join(str(first + i) for i in range(b.pd_gpus))
    var = "PD_PREFILL_GPUS" if side == "prefill" else "PD_DECODE_GPUS"
    sname = _t(k, f"pd_side_{side}", b.lang)
    extra = [f"export CUDA_VISIBLE_DEVICES=\"${{{var}:-{gpus}}}\""]
    if pd.side_channel_env:  # two instances on one host: each its own side channel (the rank's port is base + rank)
        base = pd.side_channel_port + (0 if side == "prefill" else b.pd_gpus)
        extra.append(f"export {pd.side_channel_env}=\"${{{pd.side_channel_env}:-{base}}}\"  # "
                     f"{comment(_t(k, 'pd_side_channel', b.lang, port=base))}")
    lines = _sh_head(b, k, _t(k, "pd_side", b.lang, side=sname, source=pd.source), extra)
    port_flag = next((a.flag for a in b.args if a.role == "port"), None)
    toks = _args_with_notes(b, "\x00MODEL")
    for i, (tok, note) in enumerate(toks):  # this side's port and worker size in place of the bundle's
        prev = toks[i - 1][0] if i else ""
        if prev == port_flag:
            toks[i] = (str(port), _t(k, "pd_port", b.lang, port=port, side=sname))
        elif tp_flag and prev == tp_flag and b.pd_gpus:
            toks[i] = (str(b.pd_gpus), _t(k, "pd_tp", b.lang, n=b.pd_gpus))
    switches = pd.prefill if side == "prefill" else pd.decode
    toks += [(tok, _t(k, "pd_side", b.lang, side=sname, source=pd.source) if j == len(switches) - 1 else "")
             for j, tok in enumerate(switches)]
    lines += _set_args(b, toks) + [_exec(b)]
    return "\n".join(lines) + "\n"


def pd_router_sh(b: Bundle, k: Knowledge) -> str:
    """pd-router.sh: the engine's router pairing the prefill and decode instances (their addresses from PREFILL_URL
    and DECODE_URL, this host's ports by default), serving the API on the bundle's port."""
    pd = k.deploy.engines[b.engine].pd
    lines = ["#!/bin/sh"] + [f"# {x}" for x in _header(b, k)]
    lines += [f"# {comment(_t(k, 'pd_router_sglang', b.lang))} ({pd.source})", "set -e",
              f'PREFILL_URL="${{PREFILL_URL:-http://127.0.0.1:{pd.prefill_port}}}"',
              f'DECODE_URL="${{DECODE_URL:-http://127.0.0.1:{pd.decode_port}}}"',
              "exec " + " ".join(shlex.quote(x) for x in pd.router)
              + f' {shlex.quote(pd.router_prefill)} "$PREFILL_URL" {shlex.quote(pd.router_decode)} "$DECODE_URL"'
              + f" --host 0.0.0.0 --port {pd.router_port}"]
    return "\n".join(lines) + "\n"


def render(b: Bundle, k: Knowledge) -> Bundle:
    if b.status != "ok":
        return b
    pd_files = {}
    if b.pd_prefill and k.deploy.engines[b.engine].pd is not None:
        pd_files = {"pd-prefill.sh": pd_sh(b, k, "prefill"), "pd-decode.sh": pd_sh(b, k, "decode")}
        if k.deploy.engines[b.engine].pd.router:
            pd_files["pd-router.sh"] = pd_router_sh(b, k)
    if b.nodes > 1:  # one replica over several nodes: a script per node and a LeaderWorkerSet
        node_sh = launch_mpi_node_sh if b.mpi is not None else launch_node_sh
        files = {f"launch-node-{r}.sh": node_sh(b, k, r) for r in range(b.nodes)}
        if b.image:
            files["k8s.yaml"] = leader_worker_set(b, k)
        if b.ray is not None:  # vLLM's Ray-based layout beside it
            files.update({f"launch-ray-node-{r}.sh": launch_ray_node_sh(b, k, r) for r in range(b.nodes)})
            if b.image:
                files["k8s-ray.yaml"] = leader_worker_set(b, k, ray=True)
        isvc = llm_inference_service(b, k)
        if isvc:
            files["llminferenceservice.yaml"] = isvc
        files.update(b.extra_files)
        return b.model_copy(update={"files": files, "absent": _absent(b, k, files)})
    files = {"launch.sh": launch_sh(b, k)}
    if b.windows and not b.extra_files:  # (an options file is written by the shell script beside it)
        files["launch.ps1"] = launch_ps1(b, k)
    if b.image:
        files["docker-run.sh"] = docker_run(b, k)
        files["compose.yaml"] = compose(b, k)
        files["k8s.yaml"] = kubernetes(b, k)
    ks = kserve(b, k)
    if ks:
        files["kserve.yaml"] = ks
    files.update(pd_files)
    isvc = llm_inference_service(b, k)
    if isvc:
        files["llminferenceservice.yaml"] = isvc
    files.update(b.extra_files)
    return b.model_copy(update={"files": files, "absent": _absent(b, k, files)})
