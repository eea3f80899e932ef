"""``make demo`` (``python -m advaudit.demo``): what advaudit is for, on the built-in data, in ~10 minutes.

1. One Hydra multirun trains two ShapeWorld checkpoints that differ in one way: the control sees
   every camera roll in training, the other only 0-300 degrees (a weakness planted where plain
   test accuracy hardly shows it).
2. One multirun examines both with the RL and the BO examiner on the same instances (paired); at
   its end the sweep's callback compares the checkpoints (:mod:`advaudit.compare`).
3. The demo reads that comparison and says, next to what test accuracy said, which checkpoint is
   weaker (interval, p-value), in which factor its worst cases lie, and where the files are; when
   the comparison does not separate the checkpoints it says that instead.

Every step is a command a user would type, printed before it runs (:mod:`advaudit.demo.plan`);
the findings are computed from the comparison's files (:mod:`advaudit.demo.findings`).
"""
