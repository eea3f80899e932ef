"""Where one checkpoint is weaker than another: the steps that locate a difference in a world's conditions.

For a group whose audit searches a world (its card's ``searches_world``), the comparison locates where the
checkpoints differ from their worst cases and from new renders of held-out instances. Modules:

- :mod:`.breakdowns`: per class, and per factor where each checkpoint's worst cases lie against random conditions;
- :mod:`.replay`: each checkpoint's worst conditions re-rendered and scored by the others;
- :mod:`.regions`: the worst cases tested between two checkpoints per factor, and the region proposed;
- :mod:`.confirm`: a region (or cell) checked on held-out instances under new random conditions, and the
  settings of every held-out check (:class:`.confirm.Settings`);
- :mod:`.cells`, :mod:`.sensitivity`, :mod:`.interaction`, :mod:`.sensitivity_recipes`: accuracy per fifth of each
  factor and per band of distance from its reference, and the checkpoint x cell differences (two files over
  instances; two recipes in every pair of their files);
- :mod:`.units`: the checkpoint files every held-out render is scored by;
- :mod:`.words`: the sentences; :mod:`.section`: the comparison's where section; :mod:`.plot`: its figure.

The why section (:mod:`advaudit.compare.why`) builds on these held-out checks (it renders and scores with
:mod:`.confirm` and :mod:`.units`); nothing here imports it.
"""
