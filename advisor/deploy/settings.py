"""From a plan to one engine's server arguments, each traced to the plan figure it carries. Pure: the plan, the answers
and knowledge/deploy.yaml in, a Bundle (without its rendered files) out.

The three memory fractions differ in what they are a share of, so each is derived from the plan in its own terms:
vLLM's --gpu-memory-utilization of the whole GPU, SGLang's --mem-fraction-static of the GPU for weights + KV only,
TensorRT-LLM's kv_cache_free_gpu_memory_fraction of what is free after loading."""
from __future__ import annotations

import math
import re

from advisor.deploy.types import Arg, Bundle, EnvVar, MpiLayout, RayLayout
from advisor.inputs.answers import Answers
from advisor.knowledge.load import Knowledge
from advisor.planner.types import EnginePlan, Plan


def count(k: Knowledge, what: str, n: int, lang: str) -> str:
    """"1 GPU", "2 GPUs", "1 replica" (deploy.yaml's count_<what> / count_<what>s; Chinese has one form)."""
    text = k.deploy.texts[f"count_{what}" if n == 1 else f"count_{what}s"].get(lang)
    return text.format(n=n)


class _Refused(Exception):
    pass


def _n(x: float | int) -> str:
    """1,234 for counts; GiB with one decimal, or two significant digits below 1 (0.044, not 0.0)."""
    if isinstance(x, int):
        return f"{x:,}"
    return f"{x:,.1f}" if abs(x) >= 1 or x == 0 else f"{x:.2g}"


def _cc(text: str | None) -> tuple[int, int] | None:
    m = re.fullmatch(r"\s*(\d+)\.(\d+)\s*", text or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def safe_name(text: str, limit: int = 40) -> str:
    """A DNS-1123 label part (lower-case letters, digits, '-'): the Kubernetes/compose name and the model folder."""
    out = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:limit].strip("-")
    return out or "model"


def target_words(plan: Plan) -> str:
    t = plan.target
    if t.gpu_count and t.gpu_name:
        nodes = f" ({t.nodes} nodes)" if t.nodes > 1 else ""
        return f"{t.gpu_count} × {t.gpu_name[:60]}{nodes}"
    cores = f", {t.ram_gib:.0f} GiB RAM" if t.ram_gib else ""
    return f"CPU ({t.cpu_model[:60] if t.cpu_model else t.cpu_arch or 'x86_64'}{cores})"


def model_name(plan: Plan, answers: Answers) -> str:
    """The model's name as the answers give it (for the files' headers)."""
    return (answers.model.name or plan.model.name or "model")[:120]


_SERVED = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,119}")


def served_name(name: str) -> str:
    """The name clients send: a model id as it is ("meta-llama/Llama-3.1-8B-Instruct"); anything else (spaces, quotes,
    markup) as its safe folder name, which a client can type and no document has to escape."""
    return name if _SERVED.fullmatch(name) else safe_name(name)


class _Builder:
    def __init__(self, engine: str, plan: Plan, answers: Answers, knowledge: Knowledge, lang: str,
                 cpu_cores: int | None) -> None:
        self.e, self.plan, self.ans, self.k, self.lang = engine, plan, answers, knowledge, lang
        self.d = knowledge.deploy.engines[engine]
        self.p: EnginePlan = plan.engines[engine]
        self.cores = cpu_cores
        self.name = knowledge.engines[engine].name
        self.args: list[Arg] = []
        self.env: list[EnvVar] = []
        self.warnings: list[str] = []
        self.extra: dict[str, str] = {}
        self.launch_args: list[Arg] = []  # the per-node launch multi_node() wrote (none for data-parallel ranks)

    def t(self, key: str, **kw) -> str:
        text = self.k.deploy.texts[key].get(self.lang)
        return text.format(**kw) if kw else text

    def flag(self, setting: str, value: object | None, why: str, role: str | None = None) -> None:
        """Write the engine's flag for `setting` (none when the engine has no such flag)."""
        name = self.d.flags.get(setting)
        if name is None:
            return
        self.args.append(Arg(flag=name, value=None if value is None else str(value), why=why, role=role))

    # ------------------------------------------------------------------ checks
    def refuse_unless_runnable(self) -> None:
        p = self.p
        if p.device == "none":
            first = (p.assumptions[:1] or [""])[0][:300]
            raise _Refused(first if self.name in first else self.t("refused_none", engine=self.name, why=first or "—"))
        if p.loads is False:
            raise _Refused(self.t("refused_load", engine=self.name, need=_n(p.total_gib),
                                  avail=_n(p.available_gib or 0.0)))
        if self.e in ("sglang", "tensorrt-llm") and p.device != "gpu":
            raise _Refused(self.t("refused_device", engine=self.name, device=p.device))
        t = self.plan.target
        nodes = self.nodes_used()
        if nodes > 1 and self.d.multi_node is None and self.d.mpi_multi_node is None:
            raise _Refused(self.t("refused_nodes", engine=self.name, n=p.gpus_used, nodes=t.nodes))
        if nodes > 1 and self.d.mpi_multi_node is not None and p.gpus_used % nodes:  # the same slots on every host
            raise _Refused(self.t("refused_mpi_uneven", engine=self.name, n=p.gpus_used, nodes=nodes))
        spec, tp = self.plan.model, p.tensor_parallel
        if tp > 1 and p.device == "gpu" and p.attention_dp <= 1:  # (data-parallel attention splits no heads)
            if spec.attention_heads % tp:
                raise _Refused(self.t("refused_heads", tp=tp, heads=spec.attention_heads))
            kv = spec.kv_heads
            if p.kv_attention not in ("mla", "mla-expanded") and kv % tp and tp % kv:
                raise _Refused(self.t("refused_kv_heads", tp=tp, kv=kv))
        have = _cc(self.plan.target.gpu_compute_capability)
        if p.device == "gpu" and self.plan.target.gpu_vendor == "nvidia" and have is not None:
            checks = []
            if p.kv_cache_dtype == "fp8":
                checks.append(("kv_fp8", self.t("what_kv_fp8")))
            if p.precision in ("fp8", "fp4"):
                checks.append((p.precision, self.t("what_weights", label=p.precision_label)))
            for key, what in checks:
                need = self.d.min_compute_capability.get(key)
                if need and have < _cc(need):
                    raise _Refused(self.t("refused_cc", what=what, need=need, gpu=self.plan.target.gpu_name or "?",
                                          cc=self.plan.target.gpu_compute_capability))
        if self.d.kv_dtype and self.d.kv_dtype.get(p.kv_cache_dtype, "") is None:
            raise _Refused(self.t("refused_kv_dtype", engine=self.name, dtype=p.kv_cache_dtype))

    def nodes_used(self) -> int:
        """Nodes one replica of the plan spans: its GPUs over the target's GPUs per node (1 on one node)."""
        p, t = self.p, self.plan.target
        if p.device != "gpu" or t.nodes <= 1:
            return 1
        per = t.gpus_per_node or max(1, t.gpu_count // t.nodes)
        return max(1, -(-p.gpus_used // per))

    def multi_node(self) -> None:
        """The engine's own multi-node launch (knowledge/deploy.yaml multi_node): the node count, each node's rank, the
        leader's address, and the switches of the nodes that serve no HTTP; every value traced to the plan."""
        n, m = self.nodes_used(), self.d.multi_node
        if n <= 1 or m is None:
            return
        per = self.p.gpus_used // n
        dm = self.d.dp_multi_node
        if self.p.attention_dp > 1 and dm is not None:  # data-parallel ranks across nodes: the engine's DP launch
            self.args.append(Arg(flag=dm.size_local, value=str(per), why=self.t("dpm_local", n=per, nodes=n)))
            self.args.append(Arg(flag=dm.address, value="LEADER", why=self.t("mn_leader", port=dm.port),
                                 role="leader_addr"))
            self.args.append(Arg(flag=dm.port_flag, value=str(dm.port), why=self.t("dpm_port")))
            self.args.append(Arg(flag=dm.start_rank, value=str(per), why=self.t("dpm_start", n=per),
                                 role="start_rank"))
            for flag in dm.worker_only:
                self.args.append(Arg(flag=flag, why=self.t("mn_headless"), role="worker_only"))
            return
        start = len(self.args)
        what = (self.t("mn_nnodes_dp", n=n, g=per, tot=self.p.gpus_used) if self.p.attention_dp > 1 else
                self.t("mn_nnodes", n=n, g=per, tp=self.p.tensor_parallel, pp=self.p.pipeline_parallel))
        self.args.append(Arg(flag=m.nnodes, value=str(n), why=what))
        self.args.append(Arg(flag=m.node_rank, value="0", why=self.t("mn_rank"), role="node_rank"))
        addr = "LEADER" if m.leader_port_flag else f"LEADER:{m.leader_port}"
        self.args.append(Arg(flag=m.leader_addr, value=addr, why=self.t("mn_leader", port=m.leader_port),
                             role="leader_addr"))
        if m.leader_port_flag:
            self.args.append(Arg(flag=m.leader_port_flag, value=str(m.leader_port), why=self.t("mn_port")))
        for flag, value in m.leader_only:
            self.args.append(Arg(flag=flag, value=value, why=self.t("mn_backend")))
        for flag in m.worker_only:
            self.args.append(Arg(flag=flag, why=self.t("mn_headless"), role="worker_only"))
        self.launch_args = self.args[start:]

    def ray_layout(self) -> RayLayout | None:
        """vLLM's Ray-based layout of the same replica (knowledge/deploy.yaml ray_multi_node): the server's arguments
        with the Ray executor in place of the per-node launch, a Ray head on node 0 and the others joining it. Only where
        multi_node() wrote that launch (tensor x pipeline parallel): data-parallel ranks across nodes keep their own."""
        r, n = self.d.ray_multi_node, self.nodes_used()
        if r is None or n <= 1 or not self.launch_args:
            return None
        launch = {id(a) for a in self.launch_args}
        per, p = self.p.gpus_used // n, self.p
        serve: list[Arg] = []
        for a in self.args:
            if id(a) not in launch:
                serve.append(a)
            elif a is self.launch_args[0]:  # the Ray executor where the per-node launch stood
                serve.append(Arg(flag=r.backend[0], value=r.backend[1], why=self.t(
                    "ray_backend", n=n, g=per, tp=p.tensor_parallel, pp=p.pipeline_parallel,
                    s=_n(r.placement_wait_s))))
        head = [Arg(flag=f, why=self.t("ray_head")) for f in r.head]
        head.append(Arg(flag=f"{r.port_flag}={r.port}", why=self.t("ray_port", port=r.port)))
        worker = [Arg(flag=f"{r.address_flag}=LEADER:{r.port}", why=self.t("ray_address", port=r.port),
                      role="leader_addr")]
        worker += [Arg(flag=f, why=self.t("ray_block")) for f in r.worker_only]
        self.warnings.append(self.t("warn_ray", ray=r.ray_min, extra=r.ray_extra))
        return RayLayout(program=list(r.program), head=head, worker=worker, serve=serve, port=r.port,
                         join_retry_s=r.join_retry_s, join_timeout_s=r.join_timeout_s,
                         placement_wait_s=r.placement_wait_s, source=r.source, lws_example=r.lws_example)

    def mpi_layout(self, name: str) -> MpiLayout | None:
        """TensorRT-LLM's launch of the replica over nodes (knowledge/deploy.yaml mpi_multi_node): one MPI world of one
        rank per GPU, mpirun on node 0 reaching the other nodes over SSH, every rank through the engine's launcher. The
        server's own arguments are the bundle's (tp_size x pp_size is the world); `name`: the bundle's, which names the
        Secret holding the user's key pair."""
        m, n = self.d.mpi_multi_node, self.nodes_used()
        if m is None or n <= 1:
            return None
        ranks = self.p.gpus_used
        per = ranks // n
        prefixes = ", ".join(f"{x}_*" for x in m.export_prefixes)
        self.warnings += [self.t("warn_mpi_ssh", secret=name + m.secret_suffix), self.t("warn_mpi_image"),
                          self.t("warn_mpi_env", prefixes=prefixes)]
        return MpiLayout(
            program=list(m.program), launcher=list(m.launcher), launcher_why=self.t("mpi_launcher"),
            ranks=ranks, per_node=per,
            root_flag=m.root_flag, root_why=self.t("mpi_root"),
            prefix_flag=m.prefix_flag, prefix_why=self.t("mpi_prefix"),
            np_flag=m.np_flag, np_why=self.t("mpi_np", np=ranks, n=n, g=per),
            hosts_flag=m.hosts_flag, hosts_why=self.t("mpi_hosts", g=per),
            mca_flag=m.mca_flag, rsh_param=m.rsh_param, rsh_why=self.t("mpi_rsh", port=m.ssh_port),
            rsh_why_k8s=self.t("mpi_rsh_k8s", port=m.ssh_port),
            export_flag=m.export_flag, exports=[*m.exports, *(e.name for e in self.env if e.name not in m.exports)],
            export_why=self.t("mpi_export"),
            export_prefixes=list(m.export_prefixes),
            export_prefixes_why=self.t("mpi_export_prefixes", prefixes=prefixes),
            keep_fqdn_param=m.keep_fqdn_param, fqdn_why=self.t("mpi_fqdn"), fqdn_source=m.keep_fqdn_source,
            probe_why=self.t("mpi_probe"),
            sshd_program=list(m.sshd_program), sshd_flags=list(m.sshd_flags), ssh_flags=list(m.ssh_flags),
            hosts_env=m.hosts_env, ssh_port=m.ssh_port,
            ssh_wait_s=m.ssh_wait_s, ssh_retry_s=m.ssh_retry_s, ssh_dir=m.ssh_dir, ssh_key=m.ssh_key,
            ssh_authorized=m.ssh_authorized, secret=name + m.secret_suffix,
            source=m.source, mpirun_source=m.mpirun_source,
            lws_example=m.lws_example)

    # ------------------------------------------------------------------ common figures
    @property
    def gpu_mem(self) -> float | None:
        return self.plan.target.gpu_memory_gib

    @property
    def ctx(self) -> int:
        """The context a request may hold: the checklist's, at most the model's own (an engine refuses more)."""
        return min(self.p.context_tokens, self.plan.model.max_context)

    def per_gpu(self, gib: float) -> str:
        return _n(gib / max(1, self.p.gpus_used))

    def plan_cap(self) -> int | None:
        """The batch cap the plan used: the answers' load.max_batch, else the engine's default on the target."""
        return self.asked_cap() or self.p.batch_cap or self.k.serving.modes[self.e].max_running

    def asked_cap(self) -> int | None:
        return self.ans.load.max_batch if self.ans.load is not None else None

    def cap_text(self, cap: int) -> str:
        return self.t("max_seqs_cap_asked", cap=cap) if self.asked_cap() else \
            self.t("max_seqs_cap", engine=self.name, cap=cap)

    def seqs(self) -> tuple[int, str]:
        """Sequences one step may hold: the plan's (the KV pool at the typical length, at most the engine's cap)."""
        p = self.p
        typ = p.typical_tokens or p.context_tokens
        if p.max_running:
            cap = self.plan_cap()
            pool = p.max_concurrency or p.max_running
            capped = self.cap_text(cap) if cap is not None and pool > cap else ""
            n = p.max_running
            if n < p.concurrency:
                self.warnings.append(self.t("warn_kv_short", n=n, users=p.concurrency))
            ep = self.k.planner.engines[self.e].expert_parallel
            if p.attention_dp > 1 and ep is not None and ep.cap_per_rank:  # the flag is each rank's own cap
                per = -(-n // p.attention_dp)
                return per, self.t("max_seqs_rank", per=per, n=_n(n), dp=p.attention_dp, pool=_n(pool), typ=_n(typ))
            return n, self.t("max_seqs", n=n, pool=_n(pool), typ=_n(typ), cap=capped)
        return max(1, p.concurrency), self.t("max_seqs_users", n=max(1, p.concurrency))

    def common_head(self) -> None:
        self.flag("host", "0.0.0.0", self.t("host"), role="host")
        key = "port_llama" if self.e == "llama.cpp" else "port"
        self.flag("port", self.d.port, self.t(key, port=self.d.port, version=self.d.version), role="port")
        name = model_name(self.plan, self.ans)
        why = self.t("served_name") if served_name(name) == name else self.t("served_name_safe")
        self.flag("served_name", served_name(name), why)

    def parallel(self, dp: bool = False) -> None:
        p = self.p
        if p.device != "gpu":
            return
        if p.attention_dp > 1:
            self.expert_parallel()
            return
        tp, pp = p.tensor_parallel, p.pipeline_parallel
        self.flag("tp", tp, self.t("tp", tp=tp, par=p.parallelism or "—") if tp > 1 else self.t("tp_one"))
        self.flag("pp", pp, self.t("pp", pp=pp) if pp > 1 else self.t("pp_one"))
        if dp:
            self.flag("dp", 1, self.t("dp", replicas=(p.serving.replicas if p.serving and p.serving.replicas else 1)))

    def expert_parallel(self) -> None:
        """Data-parallel attention with expert parallelism over the replica's GPUs, as each engine spells it (the plan
        chose it over tensor parallelism on its prediction: EnginePlan.layout_note)."""
        p, n = self.p, self.p.attention_dp
        why = self.t("dp_ep", n=n, note=p.layout_note or p.parallelism or "—")
        if self.e == "vllm":  # one GPU per data-parallel rank, the experts spread over all of them
            self.flag("tp", 1, self.t("tp_dp"))
            self.flag("dp", n, why)
            self.flag("ep", None, self.t("ep_on", n=n))
        elif self.e == "sglang":  # --tp-size is the world size; attention data-parallel over all of it
            self.flag("tp", n, self.t("tp_world", n=n))
            self.flag("attn_dp", n, why)
            self.flag("ep", n, self.t("ep_on", n=n))
        else:  # TensorRT-LLM: the experts over --ep_size, attention DP in the options file (kv() writes it)
            self.flag("tp", n, self.t("tp_world", n=n))
            self.flag("ep", n, self.t("ep_on", n=n))
        self.flag("pp", 1, self.t("pp_dp") if self.nodes_used() > 1 else self.t("pp_one"))

    def kv(self) -> None:
        p = self.p
        # FP8 KV that the checkpoint itself declares (or TensorRT-LLM's ModelOpt checkpoints carry): the engine's auto
        # takes it, so the bundle keeps auto rather than forcing FP8 on whatever checkpoint is brought
        value = "auto" if p.kv_from_checkpoint else self.d.kv_dtype.get(p.kv_cache_dtype, "auto")
        if self.e == "tensorrt-llm":  # only through the options file: chunked prefill (off by default: a prompt
            # longer than max_num_tokens is refused) and the KV dtype
            body = "enable_chunked_prefill: true\n" if p.prefill_chunk_tokens else ""
            if p.attention_dp > 1:
                body += "enable_attention_dp: true\n"
            if value != "auto":
                body += f"kv_cache_config:\n  dtype: {value}\n"
            if body:
                self.extra["extra-llm-api-options.yaml"] = body
                self.flag("extra_options", "extra-llm-api-options.yaml", self.t(
                    "extra_options", what=", ".join(
                        ([self.t("opt_chunked")] if p.prefill_chunk_tokens else [])
                        + ([self.t("opt_attn_dp", n=p.attention_dp)] if p.attention_dp > 1 else [])
                        + ([self.t("opt_kv", dtype=value)] if value != "auto" else []))))
            return
        shown = (p.kv_cache_dtype.upper() if value != "auto" else
                 self.t("kv_auto_checkpoint", dtype=p.kv_cache_dtype.upper()) if p.kv_from_checkpoint else
                 f"auto ({p.kv_cache_dtype.upper()})")
        self.flag("kv_dtype", value, self.t("kv_dtype", dtype=shown, kv=_n(p.kv_gib)))

    def quant(self) -> None:
        p = self.p
        q = self.d.quantization.get(p.precision)
        if q:
            self.flag("quantization", q, self.t("quant", label=p.precision_label))

    def model_what(self) -> str:
        """What must be at the model path, and for a catalogue model the Hugging Face repo the plan's shapes were
        read from (walk-3 L8: the bundle never named the checkpoint to fetch)."""
        m = re.match(r"^https://huggingface\.co/([\w.-]+/[\w.-]+)/", self.plan.model.source or "")
        repo = self.t("what_repo", repo=m.group(1)) if m and self.plan.model.id else ""
        return self._what() + repo

    def _what(self) -> str:
        p = self.p
        if self.e == "llama.cpp":
            return self.t("what_gguf")
        if p.precision == "int4":
            return self.t("what_int4_any" if self.e in ("vllm", "sglang") else "what_int4")
        if p.precision == "fp4":
            return self.t("what_fp4")
        if self.e == "tensorrt-llm" and p.precision in ("fp8", "int8"):
            return self.t("what_prequant_kv" if p.kv_from_checkpoint else "what_prequant", label=p.precision_label)
        return self.t("what_hf")

    def cpu_kv_space(self) -> int:
        """VLLM_CPU_KVCACHE_SPACE: the plan's KV + headroom, in whole GiB (the variable takes integers)."""
        return max(1, math.ceil(self.p.kv_gib * (1 + self.k.deploy.headroom_share)))

    # ------------------------------------------------------------------ engines
    def vllm(self) -> None:
        p = self.p
        self.common_head()
        self.flag("context", self.ctx, self.t("context", ctx=_n(self.ctx)))
        if p.device == "gpu":
            f = self.k.planner.engines["vllm"].memory_budget_fraction
            self.flag("memory_fraction", f"{f:.2f}", self.t(
                "util_vllm", f=f"{f:.2f}", mem=_n(self.gpu_mem or 0.0), w=self.per_gpu(p.weights_gib),
                o=self.per_gpu(p.overhead_gib), kvg=self.per_gpu(p.kv_gib), kv=_n(p.kv_gib)))
        self.parallel()
        self.multi_node()
        if p.device == "cpu":  # the KV pool is VLLM_CPU_KVCACHE_SPACE (whole GiB): the sequences are what it holds
            g = self.cpu_kv_space()
            typ = p.typical_tokens or p.context_tokens
            per = p.kv_bytes_per_token  # per token held (full attention; a window would hold fewer)
            fits = int(g * 2**30 // (per * typ)) if per else p.concurrency
            cap = self.plan_cap()
            n = max(1, min(fits, cap) if cap else fits)
            capped = self.cap_text(cap) if cap and fits > cap else ""
            self.flag("max_seqs", n, self.t("max_seqs_cpu", n=n, g=g, typ=_n(typ), cap=capped))
        else:
            n, why = self.seqs()
            self.flag("max_seqs", n, why)
        if p.prefill_chunk_tokens:
            self.flag("max_batched_tokens", p.prefill_chunk_tokens, self.t("chunk", n=_n(p.prefill_chunk_tokens)))
        self.kv()
        self.quant()  # (an INT4 / FP4 checkpoint carries its own quantization_config: no flag, said in model_what)
        if p.device == "cpu":
            self.flag("dtype", "bfloat16", self.t("dtype", dtype="bfloat16", why=self.t("dtype_cpu")))
            env = self.d.cpu_env
            g = self.cpu_kv_space()
            self.env.append(EnvVar(name=env["kv_space"], value=str(g), why=self.t(
                "cpu_kv_space", g=g, kv=_n(p.kv_gib), head=round(self.k.deploy.headroom_share * 100))))
            self.env.append(EnvVar(name=env["reserved_cpu"], value="0", why=self.t("cpu_reserved")))
        else:
            self.flag("dtype", "auto", self.t("dtype", dtype="auto", why=self.t("dtype_ckpt")))
        self.flag("prefix_caching", None, self.t("prefix"))

    def sglang(self) -> None:
        p = self.p
        self.common_head()
        self.flag("context", self.ctx, self.t("context", ctx=_n(self.ctx)))
        if p.mem_fraction_static is not None:
            self.flag("memory_fraction", f"{p.mem_fraction_static:.3f}", self.t(
                "util_sglang", f=f"{p.mem_fraction_static:.3f}", mem=_n(self.gpu_mem or 0.0)))
        self.parallel(dp=True)
        self.multi_node()
        n, why = self.seqs()
        self.flag("max_seqs", n, why)
        if p.prefill_chunk_tokens:
            self.flag("max_batched_tokens", p.prefill_chunk_tokens, self.t("chunk", n=_n(p.prefill_chunk_tokens)))
        self.kv()
        self.quant()
        self.flag("dtype", "auto", self.t("dtype", dtype="auto", why=self.t("dtype_ckpt")))

    def trtllm(self) -> None:
        p = self.p
        self.common_head()
        self.flag("backend", self.d.backend, self.t("backend"))
        self.flag("context", self.ctx, self.t("context", ctx=_n(self.ctx)))
        f = self.k.planner.engines["tensorrt-llm"].memory_budget_fraction
        self.flag("memory_fraction", f"{f:.2f}", self.t("util_trt", f=f"{f:.2f}"))
        self.parallel()
        n, why = self.seqs()
        self.flag("max_seqs", n, why)
        if p.prefill_chunk_tokens:
            self.flag("max_batched_tokens", p.prefill_chunk_tokens, self.t("chunk", n=_n(p.prefill_chunk_tokens)))
        self.kv()

    def llama_cpp(self) -> None:
        p = self.p
        self.common_head()
        slots = max(1, p.concurrency)
        typ = min(p.typical_tokens or self.ctx, self.ctx)
        total = max(slots * typ, self.ctx)
        most = self.d.max_context
        if most is not None and total > most:  # llama-server refuses a -c beyond a C int: capped, and said
            fit = max(1, most // typ)
            self.warnings.append(self.t("warn_ctx_int", total=_n(total), most=_n(most), fit=_n(fit), n=_n(slots)))
            self.flag("context", most, self.t("ctx_total_capped", most=_n(most), n=slots, typ=_n(typ),
                                              total=_n(total), fit=_n(fit), ctx=_n(self.ctx)))
        else:
            self.flag("context", total, self.t("ctx_total", total=_n(total), n=slots, typ=_n(typ), ctx=_n(self.ctx)))
        self.flag("parallel", slots, self.t("parallel", n=slots) if slots > 1 else self.t("parallel_one"))
        self.flag("kv_unified", None, self.t("kv_unified"))
        layers = self.plan.model.layers
        if p.device == "gpu":
            self.flag("gpu_layers", 999, self.t("ngl_all"))
        elif p.device == "gpu+cpu":
            on = max(0, layers - (p.offload_layers or 0))
            self.flag("gpu_layers", on, self.t("ngl_part", n=on, layers=layers, ram=p.offload_layers or 0,
                                               par=p.parallelism or "—"))
        else:
            self.flag("gpu_layers", 0, self.t("ngl_cpu"))
        ct = self.d.kv_dtype.get(p.kv_cache_dtype, "f16")
        quantized_v = ct not in ("f16", "bf16", "f32")
        self.flag("flash_attn", "on" if quantized_v else "auto", self.t("fa_on" if quantized_v else "fa_auto"))
        self.flag("cache_k", ct, self.t("cache_type", dtype=ct, kv=_n(p.kv_gib)))
        self.flag("cache_v", ct, self.t("cache_type", dtype=ct, kv=_n(p.kv_gib)))
        if self.cores:
            self.flag("threads", self.cores, self.t("threads", n=self.cores))
        self.flag("cont_batching", None, self.t("cont_batching"))
        n_batch = p.prefill_chunk_tokens or 512
        self.flag("batch", n_batch, self.t("batch", n=_n(n_batch)))
        self.flag("metrics", None, self.t("metrics"))
        self.flag("no_webui", None, self.t("no_webui"))

    def pytorch(self) -> None:
        self.args.append(Arg(flag="--host", value="0.0.0.0", why=self.t("host"), role="host"))
        self.flag("port", self.d.port, self.t("port", port=self.d.port, version=self.d.version), role="port")
        # transformers serve passes --device as from_pretrained's device_map: "cuda" puts every layer on one GPU, "auto"
        # splits them over the plan's GPUs (and RAM, when the plan offloads)
        p = self.p
        dev = "cpu" if p.device == "cpu" else "cuda" if p.device == "gpu" and p.gpus_used <= 1 else "auto"
        self.flag("device", dev, self.t("device", d=dev))
        self.flag("dtype", "auto", self.t("dtype", dtype="auto", why=self.t("dtype_ckpt")))
        self.flag("continuous_batching", None, self.t("continuous_batching"))
        self.flag("no_remote_code", None, self.t("no_remote_code"))


def build_settings(engine: str, plan: Plan, answers: Answers, knowledge: Knowledge, lang: str = "en",
                   cpu_cores: int | None = None) -> Bundle:
    """The bundle's command and settings for `engine` (status "refused" with the reason, or "no_server")."""
    b = _Builder(engine, plan, answers, knowledge, lang, cpu_cores)
    d, p = b.d, b.p
    head = dict(engine=engine, lang=lang, version=d.version, source=d.source, read=d.read,
                model_name=model_name(plan, answers), target=target_words(plan))
    if not d.server:
        return Bundle(status="no_server", reason=d.no_server.get(lang) if d.no_server else None, **head)
    try:
        b.refuse_unless_runnable()
        {"vllm": b.vllm, "sglang": b.sglang, "tensorrt-llm": b.trtllm, "llama.cpp": b.llama_cpp,
         "pytorch": b.pytorch}[engine]()
    except _Refused as why:
        return Bundle(status="refused", reason=str(why), **head)
    vendor = plan.target.gpu_vendor if p.device in ("gpu", "gpu+cpu") else "cpu"
    kind = "cpu" if vendor == "cpu" else ("amd" if vendor == "amd" else "gpu")
    image = d.image.get(kind) or (d.image.get("gpu") if kind == "amd" else None)
    if image is None and d.image:
        image = d.image.get("gpu") or next(iter(d.image.values()))
        b.warnings.append(b.t("warn_gpu_vendor", engine=b.name, vendor=vendor, which=image.ref))
    elif kind == "amd" and "amd" not in d.image and image is not None:
        b.warnings.append(b.t("warn_gpu_vendor", engine=b.name, vendor=vendor, which=image.ref))
    sv = p.serving
    if sv is not None and sv.replicas:
        replicas = sv.replicas
        g = max(sv.gpus_per_replica, p.gpus_used)
        # the fleet is sized on TTFT (each replica's capacity within the target), so its comment quotes the TTFT
        # band and label the capacity carries, and the replicas at that band's slow end
        high = sv.replicas_high if sv.replicas_high and sv.replicas_high > sv.replicas else None
        band = sv.own_band if sv.own_band is not None else sv.band
        # the band's slow end may meet the target with no number of replicas (a capacity of 0 there): said so
        key = "replicas_range" if high else ("replicas_slow_none" if sv.capacity_low == 0 else "replicas")
        why_r = b.t(key, replicas=count(knowledge, "replica", sv.replicas, lang),
                    gpus=count(knowledge, "gpu", g, lang), users=count(knowledge, "user", p.concurrency, lang),
                    label=knowledge.s(f"val_plan_label_{sv.own_label or sv.label}", lang), band=round(band * 100),
                    high=high or 0)
    else:
        replicas, why_r = 1, b.t("replicas_one")
    if p.device == "cpu":
        # vLLM on a CPU allocates VLLM_CPU_KVCACHE_SPACE whole, beside the weights and its processes
        need = p.weights_gib + p.overhead_gib + (b.cpu_kv_space() if engine == "vllm" else p.kv_gib)
        mem = max(1, math.ceil(need + 1))
        why_m = b.t("memory", g=mem, need=_n(need))
    else:
        # the weights pass through host memory as they load; the API server, the engine core and one worker per
        # tensor-parallel rank each hold a few GiB of their own
        w = p.weights_gib / max(1, p.gpus_used)
        mem = max(8, math.ceil(w + 3 * (p.tensor_parallel + 1)))
        why_m = b.t("memory_gpu", g=mem, w=_n(w), procs=p.tensor_parallel + 1)
    pd = sv.disaggregation if sv is not None else None
    pd_fields = {}
    if pd is not None and pd.recommended and d.pd is not None and b.nodes_used() == 1 and pd.gpus:
        pd_fields = dict(pd_prefill=pd.prefill_workers, pd_decode=pd.decode_workers, pd_gpus=pd.gpus_per_worker)
        router = b.t("pd_router_sglang") if d.pd.router else b.t("pd_router_none")
        agg = f"{pd.aggregated_gpus:,}" if pd.aggregated_gpus is not None else "—"
        b.warnings.append(b.t("pd_note", p=pd.prefill_workers, d=pd.decode_workers, g=pd.gpus_per_worker,
                              why=b.t("pd_why", gpus=f"{pd.gpus:,}", agpus=agg), router=router))
    nodes = b.nodes_used()
    ray = None
    if nodes > 1:
        ic = plan.target.interconnect or "ethernet"
        why_n = b.t("mn_nodes", n=nodes, g=max(1, p.gpus_used) // nodes, ic=ic)
        if d.mpi_multi_node is not None:
            b.warnings.append(b.t("warn_mpi_hosts", var=d.mpi_multi_node.hosts_env,
                                  version=knowledge.deploy.lws.version))
        else:
            b.warnings.append(b.t("warn_mn_single_host"))
        if ic in ("infiniband", "roce"):
            b.warnings.append(b.t("warn_mn_rdma"))
        ray = b.ray_layout()
    else:
        why_n = ""
    folder = safe_name(model_name(plan, answers))
    name = safe_name(f"{engine}-{folder}", 50)
    mpi = b.mpi_layout(name)
    is_file = engine == "llama.cpp"
    model_path = f"{knowledge.deploy.model_mount}/{folder}" + (".gguf" if is_file else "")
    if d.note is not None:
        b.warnings.append(d.note.get(lang))
    latest = str(knowledge.engines[engine].release.version)
    if d.version and latest and str(d.version) != latest:  # walk-3 L8: say why the pin is not the latest release
        b.warnings.append(b.t("warn_pin", engine=b.name, pinned=d.version, latest=latest))
    if p.context_tokens > plan.model.max_context and engine != "onnxruntime":
        b.warnings.append(b.t("warn_ctx_capped", ctx=_n(p.context_tokens), max=_n(plan.model.max_context)))
    if "served_name" not in d.flags:  # trtllm-serve, transformers serve: the model is named by its path
        b.warnings.append(b.t("warn_model_name", engine=b.name, path=model_path))
    windows = answers.hardware is not None and answers.hardware.os == "windows" and nodes == 1
    return Bundle(status="ok", warnings=b.warnings, program=list(d.program), model_arg=d.model, model_path=model_path,
                  windows=windows,
                  **pd_fields,
                  model_what=b.model_what(), args=b.args, env=b.env, port=d.port, health=d.health,
                  image=image.ref if image else None, image_source=image.source if image else None,
                  image_entrypoint=list(image.entrypoint) if image else [],
                  device="gpu" if p.device in ("gpu", "gpu+cpu") else "cpu",
                  gpu_resource=("amd.com/gpu" if vendor == "amd" else "nvidia.com/gpu")
                  if p.device in ("gpu", "gpu+cpu") else None,
                  gpus_per_replica=max(1, p.gpus_used) if p.device in ("gpu", "gpu+cpu") else 0,
                  replicas=replicas, replicas_why=why_r, memory_gib=mem, memory_why=why_m, nodes=nodes,
                  nodes_why=why_n, infiniband=nodes > 1 and (plan.target.interconnect or "") in ("infiniband", "roce"),
                  shm=d.shm == "ipc_host" and p.device == "gpu", name=name,
                  extra_files=b.extra, ray=ray, mpi=mpi, **head)
