"""Mutation testing of an agent's prompt and settings (`evals mutate`, docs/mutate.md): which
plausible one-change edits would the dataset and scorers not notice?

    protocol.py   what a target exposes to be mutated (Mutable), and how a mutant is built
    operators.py  the edits: delete a sentence, weaken or negate a rule word, change a number or
                  unit, drop an item of a list, flip a switch, nudge the temperature
    edits.py      hand-made edits (--edits FILE.toml); propose.py: a model's edits (--propose N)
    classify.py   a mutant's gate run against the baseline's on the same seeds: killed,
                  survived, equivalent or error
    runner.py     the baseline and every mutant through the gate (turngate.run_gate), in budget, in
                  this process or on the gate's executors (--workers N, --executor ray)
    journal.py    each result as it comes, for --resume
    report.py     the terminal table, --json and the Markdown section; page.py the HTML page (--report)
"""
from turngate.mutate.protocol import Mutable, is_mutable

__all__ = ["Mutable", "is_mutable"]
