"""The comparison's one rendering layer: the summary :func:`advaudit.compare.report.compare_records` returns
(the object ``comparison.json`` holds) laid out for people.

- :mod:`.markdown`: ``comparison.md``, every section of the report (verdicts, tables, where, why);
- :mod:`.html`: ``comparison.html``, converted from that Markdown with its figures embedded (and a section alone);
- :mod:`.wandb`: the same summary as W&B tables and figures, the HTML page as a panel, the report as an artifact;
- :mod:`.figures`: the report's PNGs (forest plot, per-class bars, factor histograms, replay heatmap).

No renderer writes a sentence about a finding: each is written once, beside its numbers, by
:mod:`advaudit.compare.verdict`, :mod:`advaudit.compare.where.words` or :mod:`advaudit.compare.why.words`,
and every renderer shows the stored text.
"""
