"""Error analysis: read transcripts, note the first thing that went wrong in each failing run
(open coding), group the notes into named failure modes (axial coding), and export the modes
as a taxonomy, scorer skeletons, judge labels and dataset rows (`evals review`).

items.py    the runs to read, from results records and simulated conversations
store.py    the notes, labels and modes: an append-only sidecar file, folded into a state
taxonomy.py counts per mode, Wilson intervals, which scorer already fails a mode's runs
rescore.py  a mode's runs scored by today's suite: coverage by scorers written after the review
grouping.py suggested groups of similar notes (offline), named by a model if one is given
export.py   the taxonomy (Markdown, JSON), scorer skeletons and tests, judge labels, dataset rows
"""
