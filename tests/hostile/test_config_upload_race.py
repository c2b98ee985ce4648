"""Sessions uploading config.json files at the same time all succeed (audit, low: two sessions uploading the same
config.json at once failed 11 of 300 uploads: every save of one file wrote the same temp name, and one save's rename
took away the temp file another was about to rename). Each save writes its own temp file beside the kept one and
renames it into place; pruning the oldest tolerates a file another session removed first."""
from __future__ import annotations

import json
import threading

_CFG = {"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32,
        "num_key_value_heads": 8, "head_dim": 64, "intermediate_size": 8192, "vocab_size": 128256,
        "max_position_embeddings": 131072, "tie_word_embeddings": True}


def _at_once(n: int, save) -> list:
    """`save(i)` from n threads released together; each one's result or exception."""
    gate = threading.Barrier(n)
    out: list = [None] * n

    def one(i: int) -> None:
        gate.wait()
        try:
            out[i] = save(i)
        except Exception as err:  # noqa: BLE001 (what the test counts)
            out[i] = err

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return out


def test_300_sessions_saving_the_same_config_all_succeed(tmp_path):
    """Five rounds, each into an empty folder: only the saves that find no file yet race."""
    from advisor.planner.spec import keep_config

    raw = json.dumps(_CFG, indent=2).encode()
    for r in range(5):
        folder = tmp_path / f"round-{r}"
        got = _at_once(300, lambda i: keep_config(raw, folder, "config.json"))
        failed = [g for g in got if not hasattr(g, "read_bytes")]
        assert failed == [], f"round {r}: {len(failed)} of 300 failed: {failed[:3]}"
        assert len({str(g) for g in got}) == 1 and got[0].read_bytes() == raw
        assert sorted(p.name for p in folder.iterdir()) == [got[0].name]  # no temp file left


def test_sessions_saving_many_configs_at_once_all_succeed_and_stay_bounded(tmp_path):
    from advisor.planner.spec import MAX_KEPT_CONFIGS, keep_config

    raws = [json.dumps({**_CFG, "num_hidden_layers": 2 + i % 80}).encode() for i in range(240)]
    got = _at_once(240, lambda i: keep_config(raws[i], tmp_path, "config.json"))
    failed = [g for g in got if not hasattr(g, "read_bytes")]
    assert failed == [], f"{len(failed)} of 240 failed: {failed[:3]}"
    assert all(p.name.startswith("config-") and p.suffix == ".json" for p in tmp_path.iterdir())  # no temp file
    keep_config(raws[0], tmp_path)  # the next save prunes to the bound whatever the race left
    assert len(list(tmp_path.iterdir())) <= MAX_KEPT_CONFIGS
