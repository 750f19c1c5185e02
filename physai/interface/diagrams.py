"""2-D drawings of the book's ideas, made with matplotlib alone (no external tools, no rendering).

``servo_loop_diagram()`` draws chapter 1's flow diagram, in two rows read clockwise: the command enters the position actuator, its
force is clamped to ``forcerange``, drives the joint (link inertia + armature, against gravity, damping
and friction loss), and the integrator turns the acceleration into the next velocity and position,
which flow back into the actuator.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from physai.experiments.position_actuators import SO101_FORCERANGE
from physai.interface.plots import COLORS, PALETTE


_BOX = dict(boxstyle='round,pad=0.02,rounding_size=0.08', linewidth=1.4)
TITLE_PT, BODY_PT = 11.0, 10.0
"""Font sizes of the diagram (points): at its width, 8.4 in, they show at 11 px or more in the book's column."""


def _box(ax, x, y, w, h, title, body, color):
    ax.add_patch(FancyBboxPatch((x, y), w, h, facecolor=color, edgecolor=COLORS['axes'], **_BOX))
    ax.text(x + w / 2, y + h - 0.15, title, ha='center', va='top', fontsize=TITLE_PT, weight='bold',
            color=COLORS['ink'])
    ax.text(x + w / 2, y + h / 2 - 0.2, body, ha='center', va='center', fontsize=BODY_PT,
            color=COLORS['ink'], linespacing=1.45)


def _arrow(ax, start, end, text=None, *, text_offset=(0.0, 0.1), ha='center', va='bottom'):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle='-|>', mutation_scale=14, linewidth=1.4,
                                 color=COLORS['axes']))
    if text:
        ax.text((start[0] + end[0]) / 2 + text_offset[0], (start[1] + end[1]) / 2 + text_offset[1],
                text, ha=ha, va=va, fontsize=BODY_PT, color=COLORS['ink'])


def servo_loop_diagram(figsize: tuple[float, float] = (8.4, 4.6)) -> Figure:
    """Chapter 1's servo loop as a block diagram, with MuJoCo's names in every box.

    Two rows, read clockwise: the command enters the actuator, its force is clamped, drives the joint, and the
    integrator's new q, q̇ go back into the actuator.

    Returns:
      A new white-background pyplot figure (a notebook shows it at the end of the cell).
    """
    fig = plt.figure(figsize=figsize, facecolor='white')
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, 8.4)
    ax.set_ylim(0, 4.6)
    ax.axis('off')

    top, bottom, h = 2.55, 0.35, 1.55
    command = (0.1, top, 1.45, 'command', 'ctrl  u\n(rad)', PALETTE['pale_blue'])
    actuator = (2.15, top, 2.95, 'position actuator', 'τ = kp (u − q) − kv q̇\ngainprm, biasprm',
                PALETTE['pale_orange'])
    clamp = (5.75, top, 2.55, 'clamp', f'forcerange\n±{SO101_FORCERANGE[1]:.2f} N·m (SO-101)', PALETTE['pale_red'])
    joint = (4.45, bottom, 3.85, 'joint', '(I_link + armature) q̈ =\nτ − τ_g cos q − damping q̇\n− frictionloss',
             PALETTE['pale_green'])
    integrator = (0.1, bottom, 3.0, 'integrator', 'timestep h\nq̇ += h q̈,  q += h q̇', PALETTE['pale_purple'])
    for x, y, w, title, body, color in (command, actuator, clamp, joint, integrator):
        _box(ax, x, y, w, h, title, body, color)
    mid_top = top + h / 2
    _arrow(ax, (command[0] + command[2], mid_top), (actuator[0], mid_top), 'u')
    _arrow(ax, (actuator[0] + actuator[2], mid_top), (clamp[0], mid_top), 'τ')
    x_down = clamp[0] + clamp[2] * 0.6
    _arrow(ax, (x_down, top), (x_down, bottom + h), 'τ', text_offset=(0.1, 0.0), ha='left', va='center')
    mid_bottom = bottom + h / 2
    _arrow(ax, (joint[0], mid_bottom), (integrator[0] + integrator[2], mid_bottom), 'q̈')
    # feedback: the new q, q̇ go back into the actuator (and the joint's gravity and damping)
    x_up = actuator[0] + 0.5
    _arrow(ax, (x_up, bottom + h), (x_up, top), 'next step: q, q̇ fed back\n(every h seconds)',
           text_offset=(0.12, 0.0), ha='left', va='center')
    ax.text(4.2, 4.55, 'one MuJoCo step of a <position> servo', ha='center', va='top', fontsize=TITLE_PT,
            color=COLORS['ink'])
    return fig
