"""One YAML loader for everything the advisor reads (knowledge files, answers files): libyaml's safe loader,
~10x faster than the pure-Python one, that refuses a key given twice in one mapping (plain YAML silently keeps
the last one, so a typo'd file would lose an answer or a fact without a word)."""
from __future__ import annotations

import yaml


class UniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                if key_node.value in seen:
                    shown = key_node.value if len(key_node.value) <= 40 else key_node.value[:39] + "…"
                    raise yaml.constructor.ConstructorError(None, None, f"duplicate key {shown!r}",
                                                            key_node.start_mark)
                seen.add(key_node.value)
        return super().construct_mapping(node, deep=deep)

    def get_single_data(self):
        """A document nested past Python's recursion limit (merge keys inside merge keys, a thousand deep) is a YAML
        error like any other, so every reader says it in its one line rather than with a RecursionError."""
        try:
            return super().get_single_data()
        except RecursionError:
            raise yaml.MarkedYAMLError(problem="nested too deeply") from None
