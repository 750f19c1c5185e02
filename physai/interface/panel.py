"""A live panel described once: its controls, its plots and its words, which the page's code draws everywhere.

Every chapter's live panel is one :class:`PanelSpec`, written in the chapter's ``*_panels`` module:

- **controls**: :class:`Slider`, :class:`LogSlider` and :class:`Choice`, each with its name (the keyword its value
  reaches the physics under), label, range, unit, the scale from the displayed unit to SI, the readout's format,
  the default and the key it takes in the page's address. :func:`common_controls` gives the book's common four (kp,
  armature, timestep, integrator).
- **plots**: :class:`Plot`, each with its title, axis labels (with units), limits, log scales and legend
  (:class:`Entry`: label, colour and the mark drawn beside it).
- **words**: templates of what the panel writes (its readout, its notes), in Python's format syntax
  (``'sag {sag:.3f}°'``); :meth:`PanelSpec.say` fills one in.

The description goes as JSON (:meth:`PanelSpec.to_json`) to one renderer, ``book/_static/panels/ui.js``, which
builds the controls, ``figures.js`` the plots, and ``spec.js`` fills in the words (``format``, a mirror of
``str.format`` for the specs used here, tested against it). It draws the panel in two places, so that adding a
control is one line here plus the physics it feeds:

- the page panel (the published book, no kernel): :mod:`physai.interface.web` writes the description and a
  precomputed first view into the page, and MuJoCo's WebAssembly build runs each setting in the reader's browser;
- the notebook's panel (Jupyter, JupyterLab, Colab): :class:`physai.interface.widget.PanelWidget`, an anywidget
  whose front end is the same modules bundled, sends each setting to the kernel, where the book's Python MuJoCo runs
  it (:meth:`PanelSpec.check` refuses a value no control can give, naming it).

This is the pattern of anywidget (state declared once, in Python, and a module that only draws it).
"""

from __future__ import annotations

import dataclasses
import math
import re
import string
from collections.abc import Mapping, Sequence
from typing import Any

from physai.laws.checks import INTEGRATORS

_NAME = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')
_KEY = re.compile(r'^[a-z][a-z0-9-]*$')

FORMAT_SPEC = re.compile(r'^(?:\.(\d+))?([fge])?$')
"""The format specs a panel's words and readouts may use: ``.Nf``, ``.Ng``, ``.Ne``, ``g`` or none (the JavaScript
mirror, ``format`` in ``spec.js``, implements exactly these)."""


def check_format(spec: str, where: str) -> None:
    """ValueError unless ``spec`` is one of :data:`FORMAT_SPEC`'s, naming ``where`` it was found."""
    if not FORMAT_SPEC.match(spec) or spec.startswith('.') and not spec[-1] in 'fge':
        raise ValueError(f'{where}: format spec must be .Nf, .Ng, .Ne, g or empty, got {spec!r}')


# ---------------------------------------------------------------------------------------------------------------
# Controls


def _check_range(name: str, low: float, high: float, default: float) -> None:
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ValueError(f'{name}: min must be < max (finite), got ({low}, {high})')
    if not low <= default <= high:
        raise ValueError(f'{name}: default must be in [{low}, {high}], got {default}')


@dataclasses.dataclass(frozen=True, kw_only=True)
class Slider:
    """A linear slider. It shows ``value / scale`` in ``unit``; the physics receives ``value`` (SI).

    Example: ``Slider('timestep', 'timestep', 0.5, 20, 5, unit='ms', scale=1e-3)`` shows milliseconds and passes
    seconds.
    """

    name: str
    """Keyword under which the value reaches the physics, e.g. ``kp``."""
    label: str
    """Text beside the control, without the unit, e.g. ``kp``."""
    min: float
    """Lowest position, in the displayed unit."""
    max: float
    """Highest position, in the displayed unit."""
    default: float
    """Start and reset position, in the displayed unit."""
    step: float | None = None
    """Slider increment, displayed unit (None: 1/200 of the range)."""
    unit: str = ''
    """Displayed unit."""
    scale: float = 1.0
    """Value passed on = displayed value × scale (1e-3 turns ms into s)."""
    format: str = '.3g'
    """How the readout beside the slider writes the displayed value (:data:`FORMAT_SPEC`)."""
    url: str = ''
    """The control's key in the page's address (``?servo-kp=3000``); empty: its name."""
    continuous_update: bool = True
    """Update while dragging (False: on release, for a control whose change costs a long recompute)."""

    kind = 'linear'

    def __init__(self, name: str, label: str, min: float, max: float, default: float, *,
                 step: float | None = None, unit: str = '', scale: float = 1.0, format: str = '.3g',
                 url: str = '', continuous_update: bool = True):
        for field, value in (('name', name), ('label', label), ('min', float(min)), ('max', float(max)),
                             ('default', float(default)), ('step', step), ('unit', unit), ('scale', float(scale)),
                             ('format', format), ('url', url or name), ('continuous_update', continuous_update)):
            object.__setattr__(self, field, value)
        self.__post_init__()

    def __post_init__(self):
        if not _NAME.match(self.name):
            raise ValueError(f'control name must be a Python identifier, got {self.name!r}')
        _check_range(self.name, self.min, self.max, self.default)
        if not (math.isfinite(self.scale) and self.scale > 0):
            raise ValueError(f'{self.name}: scale must be a finite number > 0, got {self.scale}')
        if self.step is not None and not (math.isfinite(self.step) and 0 < self.step <= self.max - self.min):
            raise ValueError(f'{self.name}: step must be in (0, max - min], got {self.step}')
        check_format(self.format, f'{self.name}: format')

    @property
    def default_value(self) -> float:
        """The default in the unit the physics receives."""
        return self.default * self.scale

    @property
    def increment(self) -> float:
        """The slider's increment, displayed unit."""
        return self.step if self.step is not None else (self.max - self.min) / 200

    def clamp(self, value: Any) -> float:
        """A value the physics may receive: clipped to the slider's range, NaN replaced by the default."""
        value = float(value)
        if math.isnan(value):
            return self.default_value
        return min(max(value, self.min * self.scale), self.max * self.scale)

    def check(self, value: Any) -> float:
        """``value`` (SI) if the slider can show it; ValueError naming the control, the value and its range."""
        if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
                and self.min * self.scale <= value <= self.max * self.scale):
            unit = f' {self.unit}' if self.unit else ''
            raise ValueError(f'{self.name} must be in [{self.min:g}, {self.max:g}]{unit} (the slider), got '
                             f'{value!r}' + (' (SI units)' if self.scale != 1.0 else ''))
        return float(value)

    def with_default(self, value: float) -> 'Slider':
        """The same control starting at ``value`` (SI), which must be in range."""
        return dataclasses.replace(self, default=self.check(value) / self.scale)

    def to_json(self) -> dict:
        return {'name': self.name, 'label': self.label, 'kind': self.kind, 'min': self.min, 'max': self.max,
                'default': self.default, 'step': self.increment, 'unit': self.unit, 'scale': self.scale,
                'format': self.format, 'url': self.url}


class LogSlider(Slider):
    """A slider whose position is log10 of the value, for quantities spanning decades (kp).

    ``min``, ``max`` and ``default`` are values (not exponents), in the displayed unit; all > 0. On the page it has
    :data:`LOG_POSITIONS` positions.
    """

    kind = 'log'

    def __post_init__(self):
        super().__post_init__()
        if self.min <= 0:
            raise ValueError(f'{self.name}: a log slider needs min > 0, got {self.min}')

    @property
    def increment(self) -> float:
        """The slider's increment in log10 of the displayed value."""
        return self.step if self.step is not None else math.log10(self.max / self.min) / 200


LOG_POSITIONS = 1000
"""Positions of a log slider on the page (the kernel's ipywidgets slider has its own, 200 by default)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Choice:
    """A dropdown over a few options; the physics receives the chosen option (a string or a number)."""

    name: str
    label: str
    options: tuple
    default: Any
    labels: tuple[str, ...] = ()
    """Text shown for each option (empty: the options themselves)."""
    url: str = ''

    kind = 'choice'

    def __init__(self, name: str, label: str, options: Sequence, default: Any = None, *,
                 labels: Sequence[str] = (), url: str = ''):
        options = tuple(options)
        if not options:
            raise ValueError(f'{name}: options must not be empty')
        default = options[0] if default is None else default
        if default not in options:
            raise ValueError(f'{name}: default must be one of {", ".join(map(str, options))}, got {default!r}')
        labels = tuple(labels) or tuple(str(o) for o in options)
        if len(labels) != len(options):
            raise ValueError(f'{name}: labels must match options, got {len(labels)} for {len(options)}')
        if not _NAME.match(name):
            raise ValueError(f'control name must be a Python identifier, got {name!r}')
        for field, value in (('name', name), ('label', label), ('options', options), ('default', default),
                             ('labels', labels), ('url', url or name)):
            object.__setattr__(self, field, value)

    @property
    def default_value(self) -> Any:
        return self.default

    def clamp(self, value: Any) -> Any:
        """The option itself; an unknown option raises ValueError listing the valid ones."""
        if value not in self.options:
            raise ValueError(f'{self.name} must be one of {", ".join(map(str, self.options))}, got {value!r}')
        return value

    check = clamp

    def with_default(self, value: Any) -> 'Choice':
        return dataclasses.replace(self, default=self.clamp(value))

    def to_json(self) -> dict:
        return {'name': self.name, 'label': self.label, 'kind': self.kind, 'options': list(self.options),
                'labels': list(self.labels), 'default': self.default, 'url': self.url}


Control = Slider | LogSlider | Choice


def common_controls(*, kp: float = 100.0, armature: float = 0.028, timestep: float = 0.005,
                    integrator: str = 'implicitfast') -> list[Control]:
    """The book's common four controls, with these defaults (SI units).

    Args:
      kp: stiffness, N·m/rad; log slider 1 … 30000.
      armature: kg·m²; slider 0 … 0.1.
      timestep: s; slider shown in ms, 0.5 … 20 ms, passed on in s (address key ``h``).
      integrator: one of :data:`physai.laws.checks.INTEGRATORS`.

    Returns:
      ``[LogSlider kp, Slider armature, Slider timestep, Choice integrator]``.
    """
    return [
        LogSlider('kp', 'kp', 1.0, 30000.0, kp, unit='N·m/rad', format='.5g'),
        Slider('armature', 'armature', 0.0, 0.1, armature, step=0.0005, unit='kg·m²', format='.4f'),
        Slider('timestep', 'timestep', 0.5, 20.0, timestep * 1e3, step=0.1, unit='ms', scale=1e-3, format='.1f',
               url='h', continuous_update=False),
        Choice('integrator', 'integrator', INTEGRATORS, integrator),
    ]


# ---------------------------------------------------------------------------------------------------------------
# Plots

MARKS = ('line', 'dash', 'dot', 'box', 'x', 'o', 's')
"""What a legend entry draws beside its label: a solid, dashed or dotted line, a filled box, a cross, a hollow
circle or a filled square."""


@dataclasses.dataclass(frozen=True)
class Entry:
    """One line of a legend: its label, its colour and its mark (one of :data:`MARKS`)."""

    label: str
    color: str
    mark: str = 'line'

    def __post_init__(self):
        if self.mark not in MARKS:
            raise ValueError(f'legend entry {self.label!r}: mark must be one of {", ".join(MARKS)}, got {self.mark!r}')


@dataclasses.dataclass(frozen=True, kw_only=True)
class Axis2:
    """A second y axis on the right (e.g. rise time beside sag)."""

    label: str
    lim: tuple[float, float]
    log: bool = False
    color: str = '#222222'


@dataclasses.dataclass(frozen=True, kw_only=True)
class Plot:
    """One plot of a panel: what it shows and how its axes read, the same in both renderers."""

    key: str
    """The plot's name in the chapter's drawing code (``'step'``, ``'curve'``)."""
    title: str = ''
    xlabel: str = ''
    """With the unit, e.g. ``'time (s)'``."""
    ylabel: str = ''
    xlim: tuple[float, float] = (0.0, 1.0)
    ylim: tuple[float, float] = (0.0, 1.0)
    xlog: bool = False
    ylog: bool = False
    legend: tuple[Entry, ...] = ()
    corner: str = 'ur'
    """Where the legend sits: ``ur``, ``ul``, ``lr``, ``ll`` (upper/lower, right/left, inside the box), or in a row
    ``above`` or ``below`` the box, clear of the data. The page never puts a legend on the data: it sets it outside
    the box, in rows above it aligned to the corner's side (below it for ``below``), each entry measured."""
    y2: Axis2 | None = None
    xticks: tuple[tuple[float, str], ...] = ()
    """Categorical x ticks (value, label), instead of numbers."""
    notes: int = 0
    """Lines of text the page keeps between the title and the plot box (so a note never covers data)."""
    width: int = 340
    """Width on the page, in the SVG's units (the kernel's figure gives the plots these widths' ratios)."""
    height: int = 260

    def __post_init__(self):
        if not _NAME.match(self.key):
            raise ValueError(f'plot key must be an identifier, got {self.key!r}')
        if self.corner not in ('ur', 'ul', 'lr', 'll', 'above', 'below'):
            raise ValueError(f'plot {self.key}: corner must be one of ur, ul, lr, ll, above, below, got {self.corner!r}')
        for axis, lim, log in (('x', self.xlim, self.xlog), ('y', self.ylim, self.ylog)):
            if not (len(lim) == 2 and all(math.isfinite(v) for v in lim) and lim[0] < lim[1]):
                raise ValueError(f'plot {self.key}: {axis}lim must be two finite numbers low < high, got {lim}')
            if log and lim[0] <= 0:
                raise ValueError(f'plot {self.key}: a log {axis} axis needs {axis}lim > 0, got {lim}')

    def to_json(self) -> dict:
        out = {'key': self.key, 'title': self.title, 'xlabel': self.xlabel, 'ylabel': self.ylabel,
               'xlim': list(self.xlim), 'ylim': list(self.ylim), 'xlog': self.xlog, 'ylog': self.ylog,
               'legend': [[e.label, e.color, e.mark] for e in self.legend], 'corner': self.corner,
               'notes': self.notes, 'width': self.width, 'height': self.height}
        if self.y2 is not None:
            out['y2'] = {'label': self.y2.label, 'lim': list(self.y2.lim), 'log': self.y2.log, 'color': self.y2.color}
        if self.xticks:
            out['xticks'] = [[v, label] for v, label in self.xticks]
        return out


# ---------------------------------------------------------------------------------------------------------------
# The panel


def template_fields(template: str) -> list[tuple[str, str]]:
    """The (name, format spec) of every field of a word template (ValueError for a spec the page cannot write)."""
    fields = []
    for _, name, spec, conversion in string.Formatter().parse(template):
        if name is None:
            continue
        if not _NAME.match(name) or conversion:
            raise ValueError(f'template {template!r}: fields must be plain names, got {name!r}')
        check_format(spec or '', f'template {template!r}')
        fields.append((name, spec or ''))
    return fields


@dataclasses.dataclass(frozen=True, kw_only=True)
class PanelSpec:
    """A chapter's live panel, described once (see the module's docstring)."""

    key: str
    """Lowercase name (``servo``): the page's element ids (``physai-panel-servo``) and address keys
    (``servo-kp``)."""
    title: str
    """The panel's heading."""
    controls: tuple[Control, ...]
    plots: tuple[Plot, ...]
    words: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Templates of what the panel writes, by name (:meth:`say`)."""
    note: str = ''
    """The caption under the plots (a template: :meth:`say` with the name ``'note'`` fills it in)."""

    def __post_init__(self):
        if not _KEY.match(self.key):
            raise ValueError(f'panel key must be lowercase letters, digits and hyphens, got {self.key!r}')
        object.__setattr__(self, 'controls', tuple(self.controls))
        object.__setattr__(self, 'plots', tuple(self.plots))
        object.__setattr__(self, 'words', dict(self.words))
        for kind, names in (('control', [c.name for c in self.controls]), ('plot', [p.key for p in self.plots]),
                            ('address key', [c.url for c in self.controls])):
            if len(set(names)) != len(names):
                raise ValueError(f'panel {self.key}: {kind} names must be unique, got {names}')
        for template in [*self.words.values(), self.note]:
            template_fields(template)

    def control(self, name: str) -> Control:
        """The control called ``name``."""
        for c in self.controls:
            if c.name == name:
                return c
        raise ValueError(f'panel {self.key} has no control {name!r}; controls: '
                         f'{", ".join(c.name for c in self.controls)}')

    def plot(self, key: str) -> Plot:
        for p in self.plots:
            if p.key == key:
                return p
        raise ValueError(f'panel {self.key} has no plot {key!r}; plots: {", ".join(p.key for p in self.plots)}')

    @property
    def defaults(self) -> dict:
        """Every control's default, SI units, by name."""
        return {c.name: c.default_value for c in self.controls}

    def with_defaults(self, **values) -> 'PanelSpec':
        """The same panel starting at ``values`` (SI units); each must be within its control's range."""
        controls = tuple(c.with_default(values.pop(c.name)) if c.name in values else c for c in self.controls)
        if values:
            raise ValueError(f'panel {self.key} has no control {", ".join(values)}')
        return dataclasses.replace(self, controls=controls)

    def check(self, values: Mapping) -> dict:
        """``values`` (SI) checked against the controls: a complete dict, or ValueError naming the first wrong one (a
        name no control has is wrong too)."""
        missing = [c.name for c in self.controls if c.name not in values]
        if missing:
            raise ValueError(f'panel {self.key}: values must name every control, missing {", ".join(missing)}')
        unknown = [name for name in values if name not in {c.name for c in self.controls}]
        if unknown:
            raise ValueError(f'panel {self.key} has no control {", ".join(map(repr, unknown))}; controls: '
                             f'{", ".join(c.name for c in self.controls)}')
        return {c.name: c.check(values[c.name]) for c in self.controls}

    def say(self, word: str, **values) -> str:
        """The words template ``word`` (or ``'note'``) filled in with ``values``."""
        template = self.note if word == 'note' else self.words[word]
        return template.format(**values)

    def to_json(self) -> dict:
        """The description as the page reads it (``book/_static/panels/spec.js``)."""
        return {'key': self.key, 'title': self.title, 'controls': [c.to_json() for c in self.controls],
                'plots': [p.to_json() for p in self.plots], 'words': dict(self.words), 'note': self.note,
                'logPositions': LOG_POSITIONS}
