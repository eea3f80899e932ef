"""``make demo`` (``python -m advaudit.demo``): what advaudit is for, on the built-in data, in minutes.

1. Two ShapeWorld checkpoints that differ in one way: the control saw every camera roll in
   training, the other only 0-240 degrees (a weakness planted where plain test accuracy hardly
   shows it). Both ship with advaudit (:mod:`advaudit.demo.shipped`); ``--train`` trains them again
   in one Hydra multirun.
2. One multirun examines both with the RL and the BO examiner on the same instances (paired); at
   its end the sweep's callback compares the checkpoints (:mod:`advaudit.compare`): the primary
   verdict per examiner, then where one checkpoint is weaker (a region proposed from the worst
   cases and checked on held-out instances, and the per-fifth sensitivity of every factor).
3. The demo reads that comparison and says, next to what test accuracy said, which checkpoint is
   weaker, where, whether that is the planted weakness, and where the files are; when the
   comparison does not separate the checkpoints it says that instead.

Every step that runs is a command a user would type, printed before it runs
(:mod:`advaudit.demo.plan`); the findings are read from the comparison's files
(:mod:`advaudit.demo.findings`).
"""
