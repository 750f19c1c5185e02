"""Build it, for real: the learner writes the Build-it functions of every chapter, each checked against MuJoCo.

Every "Build it" step names one or two functions of physai (chapter 1 :mod:`physai.laws.sim`, chapter 2
:mod:`physai.laws.drives`, chapter 3 :mod:`physai.laws.loop` and :mod:`physai.engine.pd_controller`, chapter 4
:mod:`physai.engine.arm_replay` and :mod:`physai.engine.sysid`, chapter 5 :mod:`physai.laws.grip`, chapter 6
:mod:`physai.laws.sts3215`; see
:data:`CHAPTERS`). Their cases and what each is
checked against are :mod:`physai.book.buildit_cases`.
For each, this module gives

- :func:`stub`: the source of a cell to complete, the reference's signature and docstring (the equation is in it)
  with a body that raises ``NotImplementedError``;
- :func:`check`: runs the learner's function on a fixed set of inputs and compares it with MuJoCo (or, where MuJoCo
  has no single field for it, with physai's reference, itself tested against MuJoCo in ``tests/``), and prints
  either that it passes or the first input where it differs, every argument named, with what was expected and
  what it gave. The cases include the regimes where a plausible bug shows (a servo softer than gravity for
  ``servo_sag``, a constant bias term, a command and joint damping, a narrower actuator clamp); a function that
  returns nothing is told so; one that changes an input array in place is told which (the message shows the inputs
  as they were passed); a near miss (rounding, float32) is told the check's tolerance; a case's function argument is
  shown as what it computes (``lambda q, v: -400*q - 3*v``), never by a name the learner has not seen; a learner's
  function that calls another Build-it function of the learner's that is unwritten or wrong gets that one named
  instead of being blamed;
- :func:`solution`: the worked solution, with its imports and physai's private helpers it calls, so that it runs as
  pasted into an empty cell.

A check of a function that still raises ``NotImplementedError`` says so and passes nothing, without raising, so a
notebook that has not been completed still runs top to bottom (its stored output is that message). With
``strict=True`` a failure raises :class:`BuildItError`.

    from physai.book import buildit
    print(buildit.stub('actuator_force'))      # the cell to complete
    buildit.check(actuator_force)              # after writing it
"""

from __future__ import annotations

import ast
import builtins
import copy
import dataclasses
import dis
import inspect
import math
import sys
import textwrap
import types
from collections.abc import Callable

import numpy as np

from physai.engine import arm_replay, pd_controller, sysid
from physai.laws import drives, grip, loop, sim, sts3215
from physai.book import buildit_cases
from physai.book.buildit_cases import Case


CHAPTERS = {
    1: ('actuator_force', 'kv_from_dampratio', 'semi_implicit_euler', 'servo_loop', 'servo_sag', 'step_growth'),
    2: ('pd_torque', 'dc_motor_envelope', 'remotized_limit', 'delay_commands'),
    3: ('mit_torque', 'write', 'zoh_step'),
    4: ('to_radians', 'residuals'),
    5: ('squeeze_force', 'hold_load'),
    6: ('register_kp', 'slew_limited'),
}
"""chapter -> the functions its Build it has the reader write, in the order of its steps.

``write`` is the method ``PDController.write``: the learner writes it as a plain ``def write(self, data, commands)``
and the check runs it on a subclass of ``PDController``. Chapter 2's runner ``pendulum._run_explicit`` stays a worked
solution: it is the book's plumbing around ``mj_step`` (buffers, warnings), not a law to write."""

FUNCTIONS = tuple(name for names in CHAPTERS.values() for name in names)
"""Every function a Build it has the reader write, chapter by chapter."""

_MODULES = {**dict.fromkeys(CHAPTERS[1], sim), **dict.fromkeys(CHAPTERS[2], drives), **dict.fromkeys(CHAPTERS[3], loop),
            'write': pd_controller.PDController, 'to_radians': arm_replay, 'residuals': sysid,
            **dict.fromkeys(CHAPTERS[5], grip),
            **dict.fromkeys(CHAPTERS[6], sts3215)}


class BuildItError(AssertionError):
    """A learner's function disagrees with MuJoCo (raised by :func:`check` with ``strict=True``)."""


@dataclasses.dataclass(frozen=True)
class Result:
    """What :func:`check` found."""

    name: str
    """The function checked."""
    passed: bool
    """True when every case agreed."""
    cases: int
    """How many cases ran (up to the first that failed)."""
    message: str
    """The sentence :func:`check` printed."""


STUB_IMPORTS = 'import math\nfrom collections.abc import Callable, Sequence\n\nimport numpy as np\n\n\n'
"""What a stub's signature and a body may use, imported at the top of the cell."""

_STUB_EXTRA = {
    'mit_torque': "from physai.laws.drives import pd_torque  # chapter 2's PD law\n"
                  'from physai.laws.loop import JointCommand\n',
    'zoh_step': "from physai.laws.sim import semi_implicit_euler  # chapter 1's step\n",
    'write': 'from physai.engine.pd_controller import PDController\nfrom physai.laws.loop import JointCommand\n'
             '# mit_torque is yours, from Step 1 above\n',
    'to_radians': "from physai.engine.so101 import ARM_JOINTS, JOINTS, load_so101  # joint order; the model's ranges\n",
    'residuals': ('from physai.engine.datasets import Episode\n'
                  'from physai.engine.arm_replay import PARAMS, ReplayConfig, replay\n'
                  'from physai.engine.sysid import from_log\n'),
}
"""Names a stub's signature or docstring uses beyond ``STUB_IMPORTS`` (physai's own, from earlier chapters)."""

_STUB_NOTES = {
    'write': """\
self is a PDController (the check makes one with your write): its __init__ has set self.model, self.joints,
self.dofs, self.qposadr (addresses of joint k), self.in_step (bool per joint), self.actuators and
self.forcerange (the actuator's own clamp, N·m).
In-loop joint k:  data.qfrc_applied[dof] = mit_torque(cmd, q, qd), from the state now, held until the next tick.
In-step joint k, actuator a (the chapter's table):  gainprm[a, 0] = kp, biasprm[a, :3] = (kv*qd* + tau_ff, -kp, -kv),
  ctrl[a] = q*, qfrc_applied[dof] = 0, and the clamp in actuator_forcerange: the narrower of self.forcerange[k]
  and ±max_effort (actuator_forcelimited on when either end is finite).
The check runs actuators of gear 1 (physai's own write also divides by a gear g, and can leave the feed-forward
outside the clamp: Break it B).""",
}
"""Extra guidance a stub carries as comments above its body (what ``self`` holds, for a method)."""


def stub(name: str) -> str:
    """The source of a cell to complete: ``name``'s signature and docstring, and a body to write.

    Raises:
        ValueError: ``name`` is not one of ``FUNCTIONS``.
    """
    function = reference(name)
    source = _source(function)
    header = source[:source.index('"""')]  # the def line(s), up to the docstring
    doc = textwrap.indent('"""' + (inspect.getdoc(function) or '') + '\n"""', '    ')
    imports = STUB_IMPORTS if name not in _STUB_EXTRA else f"{STUB_IMPORTS.rstrip()}\n\n{_STUB_EXTRA[name]}\n\n"
    if name == 'write':  # the method's annotations name mujoco.MjData
        imports = imports.replace('import numpy as np', 'import mujoco\nimport numpy as np')
    notes = textwrap.indent(_STUB_NOTES[name], '    # ') + '\n' if name in _STUB_NOTES else ''
    if 'Raises:' in (inspect.getdoc(function) or ''):  # the checks never pass bad input: say so
        notes += '    # The check compares results only: the input checks under Raises are optional here.\n'
    return (f'{imports}{header.rstrip()}\n{doc}\n{notes}'
            f'    # Your code here: replace the next line by the body, then run the check below.\n'
            f'    raise NotImplementedError(\'{name}: not written yet\')\n')


def compared_with(name: str) -> str:
    """What :func:`check` compares ``name`` with, in a few words: ``'MuJoCo'`` or ``"physai's reference"``."""
    return "physai's reference" if _known(name) in buildit_cases.AGAINST_REFERENCE else 'MuJoCo'


def solution(name: str) -> str:
    """The worked solution, ready to paste into an empty cell: physai's ``name`` with all it needs.

    That is the imports of every name it uses (physai's public ones from their modules), the source of the
    private helpers it calls (``_numbers``, ``_check_loop``...), then its own source: pasted into a fresh
    namespace it defines ``name`` and passes :func:`check` (``tests/test_edition.py`` pastes every one). Another
    Build-it function it calls (``servo_loop`` calls ``semi_implicit_euler``) is physai's, imported under a private
    name (``semi_implicit_euler as _semi_implicit_euler``): pasted into the learner's notebook, the solution does
    not overwrite the learner's own.
    """
    function = reference(name)
    imports, helpers = _needs(function)
    private = {}  # another Build-it function it calls: imported as _name, so the learner's own is not overwritten
    for names in imports.values():
        for other in sorted(names or ()):
            if other in FUNCTIONS and other != name:
                names.discard(other)
                names.add(f'{other} as _{other}')
                private[other] = f'_{other}'
    parts = [_import_block(imports)] if imports else []
    parts += [_rename(_source(helper), private).rstrip('\n') for helper in helpers]
    parts.append(_rename(_source(function), private).rstrip('\n'))
    return '\n\n\n'.join(parts) + '\n'


def _rename(source: str, names: dict[str, str]) -> str:
    """``source`` with each name of ``names`` (an identifier, not inside a string or comment) replaced."""
    if not names:
        return source
    import io
    import tokenize
    lines = source.splitlines(keepends=True)
    edits = [(token.start, token.end, names[token.string])
             for token in tokenize.generate_tokens(io.StringIO(source).readline)
             if token.type == tokenize.NAME and token.string in names]
    for (row, start), (_, end), new in reversed(edits):
        line = lines[row - 1]
        lines[row - 1] = line[:start] + new + line[end:]
    return ''.join(lines)


def _global_names(function: Callable) -> list[str]:
    """The global names ``function`` reads (its body and nested functions, its annotations and defaults), in order."""
    names = _global_names_of_code(function.__code__)
    definition = ast.parse(_source(function)).body[0]  # the def line runs where it is pasted: annotations, defaults
    arguments = definition.args
    signature = [a.annotation for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                                        arguments.vararg, arguments.kwarg) if a is not None and a.annotation]
    signature += [definition.returns, *arguments.defaults, *(d for d in arguments.kw_defaults if d is not None)]
    for node in signature:
        for sub in ast.walk(node) if node is not None else ():
            if isinstance(sub, ast.Name) and sub.id not in names:
                names.append(sub.id)
    return names


def _needs(function: Callable) -> tuple[dict[str, set[str] | None], list[Callable]]:
    """What pasting ``function`` needs: imports (module -> names, or None for ``import module [as x]``, keyed by the
    import line) and the private helpers of its own module it calls (sources to paste before it, in order)."""
    imports: dict[str, set[str] | None] = {}
    helpers: list[Callable] = []
    home = function.__module__

    def visit(f):
        namespace = f.__globals__
        for name in _global_names(f):
            if name not in namespace:
                if not hasattr(builtins, name):
                    raise NameError(f'{f.__qualname__} reads the global {name!r}, which its module does not define')
                continue
            value = namespace[name]
            if isinstance(value, types.ModuleType):
                module = value.__name__
                if module == name:
                    imports.setdefault(f'import {module}', None)
                elif module.rsplit('.', 1)[-1] == name:
                    imports.setdefault(module.rsplit('.', 1)[0], set()).add(name)
                else:
                    imports.setdefault(f'import {module} as {name}', None)
            elif name.startswith('_') and isinstance(value, types.FunctionType) and value.__module__ == home:
                if value not in helpers:
                    helpers.append(value)
                    visit(value)
            else:
                module = getattr(value, '__module__', None)
                if not (module and getattr(sys.modules.get(module), name, None) is value):
                    module = f.__module__  # a constant: from the module that defines the function
                imports.setdefault(module, set()).add(name)
    visit(function)
    helpers.sort(key=lambda helper: helper.__code__.co_firstlineno)  # as the module orders them
    return imports, helpers


def _import_block(imports: dict[str, set[str] | None]) -> str:
    """Import lines in three groups (standard library, other packages, physai), each sorted."""
    groups: dict[int, list[str]] = {0: [], 1: [], 2: []}
    for key, names in imports.items():
        line = key if names is None else f'from {key} import {", ".join(sorted(names))}'
        top = line.split()[1].split('.')[0]
        groups[0 if top in sys.stdlib_module_names else 2 if top == 'physai' else 1].append(line)
    return '\n\n'.join('\n'.join(sorted(lines, key=lambda line: (line.startswith('from'), line)))
                         for lines in groups.values() if lines)


def _source(function: Callable) -> str:
    source = inspect.getsource(function)
    return textwrap.dedent(source) if source[:1].isspace() else source  # a method, written at the top level


def check(function: Callable, name: str | None = None, *, strict: bool = False, say=print) -> Result:
    """Check a learner's ``function`` against MuJoCo; print one sentence saying what was found.

    A Build-it function the learner's one calls by name (``servo_loop`` calls ``semi_implicit_euler``) is checked
    first, when it is the learner's own: if that one is not written yet or wrong, the sentence says so and names it,
    instead of blaming ``function``.

    Args:
        function: the learner's function (same signature as ``reference(name)``); for ``write``, the learner's
            ``def write(self, data, commands)`` (run on a subclass of ``PDController``) or such a subclass.
        name: which function of ``FUNCTIONS`` it is; default ``function.__name__``.
        strict: raise :class:`BuildItError` on a disagreement instead of only printing it.
        say: prints the sentence.
    """
    name = name or function.__name__
    cases, compare = buildit_cases.CHECKS[_known(name)]()
    for dependency, theirs in _learners_dependencies(function, name):
        found = check(theirs, dependency, say=lambda line: None)
        if found.cases == 0 and not found.passed:
            return _report(Result(name, False, 0, f'{name} calls {dependency}, which is not written yet: complete '
                                  f'{dependency} above and run its check, then run this check again.'),
                           say, strict=False, mark='… ')
        if not found.passed:
            return _report(Result(name, False, 0, f'{name} calls your {dependency}, which does not pass its own check '
                                  f'yet ({found.message}) Fix {dependency} first, run its cell, then this check '
                                  'again.'), say, strict)
    call = buildit_cases.CALLS.get(name, lambda f, case: f(*case.args, **case.kwargs))
    for k, case in enumerate(cases, 1):
        shown = _shown(name, case)
        before = copy.deepcopy((case.args, case.kwargs))  # what the check passed, to see that it is left unchanged
        try:
            got = call(function, case)
        except NotImplementedError as error:
            other = str(error).split(':', 1)[0]
            if other != name and other in FUNCTIONS:  # a stub it calls under another route
                return _report(Result(name, False, k - 1, f'{name} calls {other}, which is not written yet: complete '
                                      f'{other} above and run its check, then run this check again.'),
                               say, strict=False, mark='… ')
            return _report(Result(name, False, k - 1, f'{name} is not written yet: complete its cell above, run '
                                  'it, then run this check again.'), say, strict=False, mark='… ')
        except Exception as error:  # the learner's code failed: say on which input
            hint = ''
            if isinstance(error, TypeError) and any(isinstance(v, np.ndarray) and v.ndim
                                                    for v in (*case.args, *case.kwargs.values())):
                hint = (' (this case passes arrays, as the docstring allows: math.sqrt, math.cos and float() take one '
                        'number, NumPy\'s np.sqrt, np.cos take arrays)')
            return _report(Result(name, False, k, f'{name}{shown} raised {type(error).__name__}: {error}{hint}'),
                           say, strict)
        changed = _changed_input(name, before, case)
        if changed:
            problem = changed
        elif got is None:
            problem = 'got None: does the function end without returning its result (a missing return)?'
        else:
            problem = compare(case, got)
        if problem:
            return _report(Result(name, False, k, f'{name}{shown}: {problem}'), say, strict)
    return _report(Result(name, True, len(cases), f'{name} passes: all {len(cases)} cases agree with '
                          f'{buildit_cases.ORACLE[name]}.'), say, strict)


def _changed_input(name: str, before: tuple[tuple, dict], case: Case) -> str | None:
    """The sentence when the call changed one of its inputs (an array modified in place), else None. The message
    shows the inputs as the check passed them (``shown`` was made before the call)."""
    names = _ARGUMENTS.get(name) or [p for p in inspect.signature(reference(name)).parameters if p != 'self']
    pairs = list(zip(names, before[0], case.args)) + [(k, before[1][k], v) for k, v in case.kwargs.items()]
    for argument, old, new in pairs:
        if not _same(old, new):
            return (f'your function changed its input {argument} (it held {_fmt(old)}, after the call '
                    f'{_fmt(new)}). The caller may use that array again: compute into a new array '
                    f'({argument} - x makes one, {argument} -= x changes the caller\'s)')
    return None


def _same(a, b) -> bool:
    """Whether two inputs are equal, entry for entry (NaN equal to NaN), through lists, tuples and dataclasses."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in 'fc'))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if dataclasses.is_dataclass(a) and not isinstance(a, type) and type(a) is type(b):
        return all(_same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    try:
        return bool(a == b)
    except Exception:
        return a is b


def _learners_dependencies(function, name: str) -> list[tuple[str, Callable]]:
    """The other Build-it functions ``function`` calls by a global name that are not physai's own (the learner's)."""
    function = getattr(function, name, function) if isinstance(function, type) else function
    namespace = getattr(function, '__globals__', None)
    if namespace is None or not hasattr(function, '__code__'):
        return []
    found = []
    for other in _global_names_of_code(function.__code__):
        theirs = namespace.get(other)
        if other in FUNCTIONS and other != name and callable(theirs) and theirs is not reference(other):
            found.append((other, theirs))
    return found


def _global_names_of_code(code: types.CodeType) -> list[str]:
    """The global names a code object and the functions nested in it read, in order."""
    names = []
    for instruction in dis.get_instructions(code):
        if instruction.opname in ('LOAD_GLOBAL', 'LOAD_NAME') and instruction.argval not in names:
            names.append(instruction.argval)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names += [n for n in _global_names_of_code(const) if n not in names]
    return names


def _report(result: Result, say, strict: bool, mark: str | None = None) -> Result:
    say((mark or ('✓ ' if result.passed else '✗ ')) + result.message)
    if strict and not result.passed:
        raise BuildItError(result.message)
    return result


def _known(name: str) -> str:
    if name not in FUNCTIONS:
        raise ValueError(f'name must be one of {", ".join(FUNCTIONS)}, got {name!r}')
    return name


def reference(name: str) -> Callable:
    """physai's own ``name``, the worked solution (``physai.laws.sim.servo_sag``, ``physai.laws.loop.mit_torque``...)."""
    return getattr(_MODULES[_known(name)], name)


_ARGUMENTS = {'write': ('backend', 'integrator', 'gear', 'feedforward', 'command')}
"""The names a case's positional arguments are shown with, where they are not the reference's parameters (``write``
runs on a controller built from these)."""


def _shown(name: str, case: Case) -> str:
    """A case's inputs as the message shows them, each with its name: ``(kp=0.05, tau_g=0.2943)``."""
    names = _ARGUMENTS.get(name) or [p for p in inspect.signature(reference(name)).parameters if p != 'self']
    shown = [f'{n}={_fmt(v)}' for n, v in zip(names, case.args)] + [f'{k}={_fmt(v)}' for k, v in case.kwargs.items()]
    return f'({", ".join(shown)})'


def _fmt(value) -> str:
    if callable(value):
        return getattr(value, 'shown', None) or getattr(value, '__name__', 'a function')
    if isinstance(value, np.ndarray):
        if value.ndim > 1:  # on one line, rows as nested lists
            return np.array2string(value, precision=4, separator=', ', threshold=24).replace('\n', '')
        return np.array2string(value, precision=4, threshold=24)
    if isinstance(value, float):
        return f'{value:.6g}'
    if isinstance(value, (list, tuple)) and value and all(hasattr(v, 'nframe') for v in value):  # episodes
        return '[' + ', '.join(f'episode {v.index} ({v.nframe} frames)' for v in value) + ']'
    return repr(value)
