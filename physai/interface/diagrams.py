"""2-D drawings of the book's ideas, made with matplotlib alone (no external tools, no rendering).

``servo_loop_diagram()`` draws chapter 1's flow diagram: the command enters the position actuator, its
force is clamped to ``forcerange``, drives the joint (link inertia + armature, against gravity, damping
and friction loss), and the integrator turns the acceleration into the next velocity and position,
which flow back into the actuator.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from physai.experiments.position_actuators import SO101_FORCERANGE


_BOX = dict(boxstyle='round,pad=0.02,rounding_size=0.08', linewidth=1.4)


def _box(ax, x, y, w, h, title, body, color):
    ax.add_patch(FancyBboxPatch((x, y), w, h, facecolor=color, edgecolor='#333333', **_BOX))
    ax.text(x + w / 2, y + h - 0.17, title, ha='center', va='top', fontsize=10, weight='bold',
            color='#111111')
    ax.text(x + w / 2, y + h / 2 - 0.17, body, ha='center', va='center', fontsize=8.6,
            color='#111111', linespacing=1.5)


def _arrow(ax, start, end, text=None, *, text_offset=(0.0, 0.12), connection='arc3'):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle='-|>', mutation_scale=14, linewidth=1.4,
                                 color='#333333', connectionstyle=connection))
    if text:
        ax.text((start[0] + end[0]) / 2 + text_offset[0], (start[1] + end[1]) / 2 + text_offset[1],
                text, ha='center', va='bottom', fontsize=8.6, color='#222222')


def servo_loop_diagram(figsize: tuple[float, float] = (11.0, 3.6)) -> Figure:
    """Chapter 1's servo loop as a block diagram, with MuJoCo's names in every box.

    Returns:
      A new white-background pyplot figure (a notebook shows it at the end of the cell).
    """
    fig = plt.figure(figsize=figsize, facecolor='white')
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, 11)
    ax.set_ylim(0, 3.6)
    ax.axis('off')

    y, h = 1.55, 1.5
    boxes = [  # x, width, title, body, color
        (0.15, 1.35, 'command', 'ctrl  u\n(rad)', '#eef3fb'),
        (2.05, 2.0, 'position actuator', 'τ = kp (u − q) − kv q̇\ngainprm, biasprm', '#fdf1dc'),
        (4.6, 1.45, 'clamp', f'forcerange\n±{SO101_FORCERANGE[1]:.2f} N·m\n(SO-101)', '#fbe3e3'),
        (6.6, 2.05, 'joint', '(I_link + armature) q̈ =\nτ − τ_g cos q − damping q̇\n− frictionloss',
         '#e5f4e8'),
        (9.2, 1.65, 'integrator', 'timestep h\nq̇ += h q̈,  q += h q̇', '#efe9f7'),
    ]
    for x, w, title, body, color in boxes:
        _box(ax, x, y, w, h, title, body, color)
    mid = y + h / 2
    edges = [(b[0] + b[1], boxes[k + 1][0]) for k, b in enumerate(boxes[:-1])]
    for (x0, x1), text in zip(edges, ['u', 'τ', 'τ', 'q̈']):
        _arrow(ax, (x0, mid), (x1, mid), text)
    # feedback: the new q, q̇ go back into the actuator (and the joint's gravity and damping)
    x_int = boxes[4][0] + boxes[4][1] / 2
    x_act = boxes[1][0] + boxes[1][1] / 2
    ax.plot([x_int, x_int, x_act], [y, 0.45, 0.45], color='#333333', linewidth=1.4)
    _arrow(ax, (x_act, 0.45), (x_act, y))
    ax.text((x_int + x_act) / 2, 0.52, 'next step: q, q̇ fed back (every h seconds)', ha='center',
            va='bottom', fontsize=8.6, color='#222222')
    ax.text(5.5, 3.45, 'one MuJoCo step of a <position> servo', ha='center', va='top', fontsize=10.5,
            color='#222222')
    return fig
