"""The bottom layer: helpers every other part of advaudit may use and that import nothing above them.

Run records (``records``: results written as JSON and JSONL as they come; ``run_records``: the
config that owns a run dir, the failure record), progress bars (``progress``), image plots
(``plots``), confidence intervals, short checkpoint names (``naming``) and W&B run settings
(``wandb_run``). Modules here import only the standard library, third-party packages and
advaudit's other bottom modules (``errors``, ``confutil``, ``files``, ``runtime``);
``docs/layers.md`` draws the whole order.
"""
