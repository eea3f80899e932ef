"""Rules and choices several parts' settings share: image sides, instances per class, data splits.

A rule one field has sits next to that field (:func:`advaudit.config.ranges.ranged`); a rule several
parts' fields share is one named :class:`~advaudit.config.ranges.Rule` here.
"""

from __future__ import annotations

from enum import Enum

from advaudit.config.ranges import Rule


class Split(str, Enum):
    train = "train"
    val = "val"
    test = "test"


# -- rules shared by several parts' fields -------------------------------------------------------


SPLITS = ("train", "val", "test")


#: image side of a world or an image dataset
IMAGE_SIZE = Rule(low=8, high=512, integer=True, message="{path}={value}; use 8..512 pixels")


#: instances per class: one count for every split or {split: count} (null: all, where the world allows it)
PER_CLASS = Rule(low=1, integer=True, each=True, message="{path}={value} must be >= 1")


#: share of the training data held out for validation
VAL_FRACTION = Rule(low=0, high=1, high_open=True, message="{path}={value} must be in [0, 1)")


#: share of the data held out for testing, where the data has no test split of its own
TEST_FRACTION = Rule(low=0, high=1, low_open=True, high_open=True, message="{path}={value} must be in (0, 1)")


CHANNELS = Rule(choices=(1, 3), message="{path}={value}; use 1 (grayscale) or 3 (RGB)")
