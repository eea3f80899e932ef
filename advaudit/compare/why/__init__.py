"""Why one checkpoint is weaker: the gap between two checkpoints attributed to factors by paired intervention.

An experimenter asks "is it the augmentation we changed?" by holding everything else fixed and taking the
suspected cause away. On held-out instances under random conditions of S, rendered once and scored by every
checkpoint, the *gap* is their difference in accuracy. Each **intervention** renders the same conditions
again with one factor, or a group of factors, set to its reference value (:mod:`advaudit.worlds.references`:
the identity of an image transform, an upright camera at eye level, ...): what is left of the gap is the gap
that factor did not cause. The difference is the part of the gap the factor **explains**; when taking it away
*widens* the gap, the factor **hides** that much of it (both checkpoints fail at large rotations, say, and
the one that is weaker elsewhere is weaker only away from them). Modules:

- :mod:`.plan`: the interventions of a world (its factors with a reference, its groups and the user's, all);
- :mod:`.measure`: rendering and scoring them (every render scored by every checkpoint file);
- :mod:`.attribution`: the statistics for one pair of checkpoint files (over instances) or of recipes (over
  their files, the training seeds);
- :mod:`.words`: the sentences; :mod:`.section`: the comparison's why section; :mod:`.plot`: its figure.

It draws held-out instances and scores renders with the where section's checks (:mod:`advaudit.compare.where.confirm`,
:mod:`advaudit.compare.where.units`); :mod:`advaudit.compare.render` lays it out as Markdown, HTML and W&B tables.
"""
