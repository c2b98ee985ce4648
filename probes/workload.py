"""A fixed, seeded synthetic prompt set with a prompt-length mix.

Prompts differ from each other (identical prompts hit prompt caches and make TTFT lie) but are the
same for every engine and every run with the same seed.
"""
from __future__ import annotations

import random

_TOPICS = ["why the sky is blue", "how a bicycle stays upright", "what a hash table is", "how tides work",
           "why bread rises", "how vaccines train the immune system", "what inflation means",
           "how a compiler works", "why leaves change colour", "how GPS finds a position",
           "what photosynthesis does", "how a refrigerator cools", "why the moon has phases",
           "how noise-cancelling headphones work", "what a neural network learns", "how rainbows form"]
_FILLER = ("The following notes are background for the question. They describe the setting, the people "
           "involved, the constraints of the project, and the earlier attempts that did not work. ")


def build_prompts(n: int, mix: str = "mixed", seed: int = 1234) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        topic = _TOPICS[(i + rng.randrange(len(_TOPICS))) % len(_TOPICS)]
        long = mix == "long" or (mix == "mixed" and i % 3 == 2)
        if long:
            reps = 6 + rng.randrange(4)
            body = f"Request {i}. " + _FILLER * reps + f"Now explain in a few sentences {topic}."
        else:
            body = f"Request {i}. Explain in a few sentences {topic}."
        out.append(body)
    return out


def messages(prompt: str) -> list[dict]:
    return [{"role": "user", "content": prompt}]
