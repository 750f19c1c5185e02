"""The SO-101 arm from MuJoCo Menagerie, loaded offline when a local copy is at hand.

``load_so101()`` asks the ``mujoco_menagerie`` package for ``robotstudio_so101`` / ``so101``. The package
reads ``MENAGERIE_ROOT`` when it is set; otherwise, if a ``shared/menagerie`` folder sits beside this
repository (as on the book's development machines), it is used; otherwise the package downloads the model
(Colab).
"""

from __future__ import annotations

import functools
import os
import pathlib

import mujoco

ARM_JOINTS = ('shoulder_pan', 'shoulder_lift', 'elbow_flex', 'wrist_flex', 'wrist_roll')
JOINTS = ARM_JOINTS + ('gripper',)

_SHARED_MENAGERIE = pathlib.Path(__file__).resolve().parents[2] / 'shared' / 'menagerie'


def menagerie_root() -> str | None:
    """The local Menagerie folder to use, or None to let ``mujoco_menagerie`` download."""
    root = os.environ.get('MENAGERIE_ROOT')
    if root:
        return root
    if (_SHARED_MENAGERIE / 'robotstudio_so101').is_dir():
        return str(_SHARED_MENAGERIE)
    return None


@functools.cache
def _load(entry: str) -> mujoco.MjModel:
    import mujoco_menagerie

    root = menagerie_root()
    if root is not None and not os.environ.get('MENAGERIE_ROOT'):
        os.environ['MENAGERIE_ROOT'] = root
    return mujoco_menagerie.load('robotstudio_so101', entry)


def load_so101(entry: str = 'so101') -> mujoco.MjModel:
    """A fresh copy of the SO-101 model (``entry`` 'so101' is the arm alone, 'scene' adds a floor)."""
    import copy

    return copy.copy(_load(entry))
