"""The safety audit of issue 27, repeated: every case gives a clear error, a correct result or a flagged result, never
silent nonsense and never a crash.

Three kinds of input, as the issue's audit had: the public API (the entry points the issue names, each argument given
values a careful user or an attacker would try), corrupted recordings through the loader, and ``python -m physai
fit-servo`` with its files. :func:`classify` puts each outcome in one class:

- ``clear error``: a ValueError, TypeError or FileNotFoundError (the command: exit 2 with one printable ``error:``
  line) whose message says what must hold, nothing written;
- ``correct``: a result whose numbers pass the case's own check (a run's record finite and MuJoCo silent, a loaded
  recording equal to what was written, a written model that compiles as Menagerie's arm);
- ``flagged``: a result that says it is not a normal one (a run flagged diverged, a Ctrl-C ended with status 130);
- ``silent nonsense``: a result that fails its check without a flag (NaN from None, a run MuJoCo reset reported calm,
  a corrupted recording loaded, a file written where it must not be);
- ``crash``: any other exception, or an exit status other than 0, 2 and 130.

``python tests/test_safety_audit.py`` prints the counts per kind and class (the closing note's numbers); the test
asserts that no case is silent nonsense or a crash.
"""

import collections
import dataclasses
import functools
import io
import json
import math
import pathlib
import shutil
import sys
import tempfile

import mujoco
import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # tests/recordings.py when run as a script
import recordings  # noqa: E402
from physai.__main__ import main  # noqa: E402
from physai.engine import arm_replay, datasets, mj, pd_controller, pendulum, so101  # noqa: E402
from physai.cli import fit_request, identify  # noqa: E402
from physai.experiments.registry import format_table  # noqa: E402
from physai.interface import servo_sysid_panels  # noqa: E402
from physai.laws import drives, loop, sim  # noqa: E402

CLASSES = ('clear error', 'correct', 'flagged', 'silent nonsense', 'crash')
CLEAR = (ValueError, TypeError, FileNotFoundError)
BAD = {'None': None, 'nan': math.nan, 'inf': math.inf, '-inf': -math.inf, '1e308': 1e308, '-1': -1.0, '0': 0.0,
       '10**30': 10**30, "'abc'": 'abc', 'True': True, '[]': [], '[None]': [None], '1e-300': 1e-300}
"""The values every argument is given in turn."""


class Nonsense(AssertionError):
    """A result that fails its case's check."""


def _must(condition: bool, what: str) -> None:
    if not condition:
        raise Nonsense(what)


# --- the public API -------------------------------------------------------------------------------------------------

def _runs_honest(runs) -> str:
    """A pendulum run not flagged diverged must have a finite record and MuJoCo must have warned of nothing."""
    flagged = False
    for run in runs:
        if run.diverged:
            flagged = True
            continue
        _must(np.all(np.isfinite(run.q)) and np.all(np.isfinite(run.v)) and np.all(np.isfinite(run.torque)),
              'a run not flagged diverged holds non-finite numbers')
    _must(flagged or not any('Nan, Inf or huge' in w for w in mj.WARNINGS), 'MuJoCo warned, the run is called calm')
    return 'flagged' if flagged else 'correct'


def _simulate(**kwargs):
    del mj.WARNINGS[:]
    kwargs.setdefault('actuators', [drives.IdealPD(kp=10.0, kv=1.0)])
    kwargs.setdefault('duration', 0.3)
    return _runs_honest(pendulum.simulate(**kwargs))


def _config_run(make):
    def case():
        return _simulate(actuators=[make()])
    return case


def _finite_where_inputs_are(out, *inputs, exact=None) -> str:
    """A non-finite result only from a non-finite input, or where the exact value (``exact``, in long double)
    lies beyond the largest float: then inf is IEEE's answer, not nonsense."""
    good = np.all([np.all(np.isfinite(np.asarray(x, dtype=float))) for x in inputs])
    beyond = exact is not None and np.any(np.abs(exact) > np.finfo(float).max)
    _must(not good or beyond or np.all(np.isfinite(out)), 'finite inputs gave a non-finite result')
    return 'correct'


def _envelope(v=1.0, saturation_effort=2.0, forcerange=1.5, velocity_limit=3.0):
    low, high = drives.dc_motor_envelope(v, saturation_effort=saturation_effort, forcerange=forcerange,
                                         velocity_limit=velocity_limit)
    _must(not np.any(low > high), 'an envelope upside down')
    return _finite_where_inputs_are(np.stack([low, high]), v)


def _delay(commands=(0.0, 1.0, 2.0), delay=1):
    out = drives.delay_commands(commands, delay)
    _must(len(out) == len(commands), 'delayed commands of another length')
    return _finite_where_inputs_are(out, commands)


def _force(ctrl=0.3, length=0.1, velocity=0.2, gainprm=(10.0,), biasprm=(0.0, -10.0, -1.0), forcerange=None):
    out = sim.actuator_force(ctrl, length, velocity, gainprm, biasprm, forcerange)
    ld = np.longdouble
    expected = (ld(10) * np.asarray(ctrl, ld) - ld(10) * np.asarray(length, ld) - np.asarray(velocity, ld))
    _must(np.allclose(out, expected.astype(float), equal_nan=True), 'not the affine force')
    return _finite_where_inputs_are(out, ctrl, length, velocity, exact=expected)


def _mit(q=0.1, qd=0.0, **command):
    fields = dict(position=0.3, stiffness=10.0, damping=1.0, max_effort=2.0) | command
    tau = loop.mit_torque(loop.JointCommand(**fields), q, qd)
    _must(np.all(np.isnan(tau) | (np.abs(tau) <= fields['max_effort'])), 'a torque past the clamp')
    return _finite_where_inputs_are(tau, q, qd)


def _table(rows=({'kp': 1.0, 'name': 'a'},), columns=(('kp', '.1f'), ('name', 's'))):
    text = format_table(rows, columns)
    _must(text.splitlines()[0].split() == [k for k, _ in columns], 'a table without its header')
    return 'correct'


_PD_XML = ('<mujoco><worldbody><body><joint name="hinge" axis="0 1 0"/><geom size="0.05" mass="1"/></body>'
           '</worldbody><actuator><motor joint="hinge"/></actuator></mujoco>')


def _controller(joints=('hinge',), data='own', commands='one'):
    m = mujoco.MjModel.from_xml_string(_PD_XML)
    pd_ = pd_controller.PDController(m, joints)
    d = {'own': lambda: mujoco.MjData(m), 'twin': lambda: mujoco.MjData(mujoco.MjModel.from_xml_string(_PD_XML)),
         'empty': lambda: mujoco.MjData(mujoco.MjModel.from_xml_string('<mujoco/>'))}[data]() \
        if isinstance(data, str) else data
    cmds = [loop.JointCommand(position=0.2, stiffness=5.0)] * len(pd_.joints) if commands == 'one' else commands
    pd_.write(d, cmds)
    _must(np.all(np.isfinite(d.qfrc_applied)) and np.all(np.isfinite(d.ctrl)), 'a write of non-finite numbers')
    for _ in range(20):
        mujoco.mj_step(m, d)
    _must(np.all(np.isfinite(d.qpos)) and not mj.warned(d), 'a controller that blew up its model')
    return 'correct'


@functools.cache
def _episode():
    return arm_replay.synthetic_dataset(nepisode=1, seconds=1.0)[0]


def _panel(episode='ok', base='ok', joints=servo_sysid_panels.PANEL_JOINTS):
    episode = _episode() if episode == 'ok' else episode
    base = arm_replay.MENAGERIE if base == 'ok' else base
    servo_sysid_panels.sysid_widget(episode, base, joints=joints)
    return 'correct'


def _select(episodes=None, heldout=None):
    data = arm_replay.synthetic_dataset(nepisode=4, seconds=2.5)
    fit, held = fit_request.select_episodes(data, episodes, heldout)
    fit_request.check_lengths(fit, held)
    _must(not {e.index for e in fit} & {e.index for e in held} and len(fit) >= 2 and held, 'a split that overlaps')
    return 'correct'


def _cost(max_iter=50, cut=None):
    data = arm_replay.synthetic_dataset(nepisode=3, seconds=2.5)
    fit, held = fit_request.select_episodes(data)
    if cut is not None:
        fit, held = fit_request.first_frames(fit, cut), fit_request.first_frames(held, cut)
    cost = fit_request.fit_cost(fit, held, max_iter=max_iter)
    _must(cost['frame_replays'] > 0 and cost['batch_bytes'] > 0, 'a cost of nothing')
    return 'correct'


def api_cases() -> dict:
    """``{name: case}``: each case returns the class of a result, or raises."""
    cases = {}
    for label, value in BAD.items():
        cases[f'simulate(actuators=[{label}])'] = functools.partial(_simulate, actuators=[value])
        cases[f'simulate(actuators={label})'] = functools.partial(_simulate, actuators=value)
        cases[f'simulate(command=lambda t: {label})'] = functools.partial(
            _simulate, command=lambda t, v=value: np.full(np.shape(t), v) if not isinstance(v, (list, str)) else v)
        cases[f'simulate(command={label})'] = functools.partial(_simulate, command=value)
        cases[f'simulate(implicit, command=lambda t: {label})'] = functools.partial(
            _simulate, actuators=[drives.ImplicitPD(kp=10.0, kv=1.0)],
            command=lambda t, v=value: np.full(np.shape(t), v) if not isinstance(v, (list, str)) else v)
        for arg in ('q0', 'v0', 'duration'):
            cases[f'simulate({arg}={label})'] = functools.partial(_simulate, **{arg: value})
        cases[f'simulate(implicit, v0={label})'] = functools.partial(
            _simulate, actuators=[drives.ImplicitPD(kp=10.0, kv=1.0)], v0=value)
        for cls, extra in ((drives.ImplicitPD, {}), (drives.IdealPD, {})):
            for arg in ('kp', 'kv', 'forcerange'):
                cases[f'{cls.__name__}({arg}={label})'] = _config_run(
                    lambda cls=cls, arg=arg, v=value: cls(**({'kp': 10.0} | {arg: v})))
        cases[f'DelayedPD(delay={label})'] = _config_run(lambda v=value: drives.DelayedPD(kp=10.0, delay=v))
        for arg in ('saturation_effort', 'velocity_limit'):
            cases[f'DCMotor({arg}={label})'] = _config_run(lambda arg=arg, v=value: drives.DCMotor(
                **({'kp': 10.0, 'forcerange': 2.0, 'saturation_effort': 3.0, 'velocity_limit': 5.0} | {arg: v})))
        for arg in ('armature', 'damping', 'timestep', 'control_rate'):
            cases[f'PendulumParams({arg}={label})'] = functools.partial(
                lambda arg, v: _simulate(pendulum=pendulum.PendulumParams(**{arg: v})), arg, value)
        for arg in ('v', 'saturation_effort', 'forcerange', 'velocity_limit'):
            cases[f'dc_motor_envelope({arg}={label})'] = functools.partial(_envelope, **{arg: value})
        cases[f'delay_commands(commands=[0, {label}])'] = functools.partial(_delay, commands=[0.0, value])
        cases[f'delay_commands(delay={label})'] = functools.partial(_delay, delay=value)
        for arg in ('ctrl', 'length', 'velocity'):
            cases[f'actuator_force({arg}={label})'] = functools.partial(_force, **{arg: value})
        for arg in ('q', 'qd'):
            cases[f'mit_torque({arg}={label})'] = functools.partial(_mit, **{arg: value})
        cases[f'format_table(rows=[{{kp: {label}}}])'] = functools.partial(_table, rows=[{'kp': value, 'name': 'a'}])
        cases[f'PDController.write(commands={label})'] = functools.partial(_controller, commands=value)
    cases.update({
        'simulate([ideal PD, implicit PD], kp=1e308 at a step)': functools.partial(
            _simulate, actuators=[drives.IdealPD(kp=1e308), drives.ImplicitPD(kp=1e308)], duration=1.0),
        'format_table with a missing key': functools.partial(_table, rows=[{'kp': 1.0}]),
        'format_table with a row that is no dict': functools.partial(_table, rows=[[1.0, 'a']]),
        'format_table with a bad format': functools.partial(_table, columns=(('kp', '.1q'), ('name', 's'))),
        'PDController(joints=[hinge, hinge])': functools.partial(_controller, joints=['hinge', 'hinge']),
        'PDController(joints=[hinge, 0])': functools.partial(_controller, joints=['hinge', 0]),
        'PDController.write(data of a twin model)': functools.partial(_controller, data='twin'),
        'PDController.write(data of another model)': functools.partial(_controller, data='empty'),
        'PDController.write(data=None)': functools.partial(_controller, data=None),
        'sysid_widget(base=x)': functools.partial(_panel, base='x'),
        'sysid_widget(episode=x)': functools.partial(_panel, episode='x'),
        'sysid_widget(base=None)': functools.partial(_panel, base=None),
        'sysid_widget(joints=(gripper,))': functools.partial(_panel, joints=('gripper',)),
        'sysid_widget(joints=(elbow_flex, elbow_flex))': functools.partial(_panel, joints=('elbow_flex',) * 2),
        'load_lerobot(joints=[elbow_flex, elbow_flex])': lambda: datasets.load_lerobot(
            datasets.shipped_recording(), joints=['elbow_flex', 'elbow_flex']),
        'load_lerobot(episodes=[0, 0])': lambda: datasets.load_lerobot(datasets.shipped_recording(), episodes=[0, 0]),
        'load_lerobot(episodes=[9])': lambda: datasets.load_lerobot(datasets.shipped_recording(), episodes=[9]),
        'load_lerobot(episodes=0)': lambda: datasets.load_lerobot(datasets.shipped_recording(), episodes=0),
        'select_episodes(heldout=[3, 3])': functools.partial(_select, heldout=[3, 3]),
        'select_episodes(episodes=[0, 1])': functools.partial(_select, episodes=[0, 1]),
        'select_episodes(episodes=[0, True, 2])': functools.partial(_select, episodes=[0, True, 2]),
        'select_episodes()': _select,
        'fit_cost(max_iter=50)': _cost,
        'first_frames(max_frames=1)': functools.partial(_cost, cut=1),
        'first_frames(max_frames=10**30)': functools.partial(_cost, cut=10**30),
        'first_frames(max_frames=2.5)': functools.partial(_cost, cut=2.5),
    })
    return cases


# --- corrupted recordings -------------------------------------------------------------------------------------------

def _loads_as_written(root, written: pd.DataFrame) -> str:
    data = datasets.load_lerobot(root)
    for e in data:
        rows = written[written['episode_index'] == e.index].sort_values('frame_index')
        _must(np.array_equal(e.state, np.stack(rows['observation.state'].to_numpy()).astype(float)),
              f'episode {e.index} loaded other than written')
        datasets.check_episode(e)
    return 'correct'


def _recording(corrupt=None, folder='data'):
    def case():
        frames, meta = recordings.table(), recordings.info()
        if corrupt is not None:
            frames, meta = corrupt(frames, meta)
        with tempfile.TemporaryDirectory() as tmp:
            root = recordings.write(pathlib.Path(tmp) / folder, frames, meta)
            return _loads_as_written(root, frames)
    return case


def _structural(name, k):
    """One of test_properties' structural corruptions (info.json, parquet files, indices)."""
    import test_properties
    where, corrupt = test_properties.CORRUPTIONS[name]

    def case():
        with tempfile.TemporaryDirectory() as tmp:
            root = shutil.copytree(datasets.shipped_recording(), pathlib.Path(tmp) / 'copy')
            corrupt(root, k)
            return _loads_as_written(root, recordings.table())
    return case


def recording_cases() -> dict:
    cases = {name: _recording(corrupt) for name, corrupt in recordings.CORRUPTIONS.items()}
    cases.update({
        'the shipped recording as it is': _recording(),
        'a spike of 10 degrees (under the glitch threshold)': _recording(recordings.spike(10.0)),
        'fps 30.0001 in info.json (within tolerance)': _recording(recordings.wrong_fps(30.0001)),
        'fps 29.97 in info.json, data at 30': _recording(recordings.wrong_fps(29.97)),
        'fps 31 in info.json, data at 30': _recording(recordings.wrong_fps(31)),
        'timestamps at 25 fps, info.json 30': _recording(recordings.stamped_at(25)),
        'one frame +720 degrees': _recording(recordings.glitch(720.0)),
        'one frame -361 degrees': _recording(recordings.glitch(-361.0, feature='action')),
        'one gripper frame of 1e30': _recording(recordings.glitch(1e30, joint=5)),
        'a +360 wrap in the action': _recording(recordings.wrap(feature='action', episode=1)),
        'a +360 wrap from frame 300 to the end': _recording(recordings.wrap(frames_=slice(300, 373))),
        'a wrap over the whole episode but its first frame': _recording(recordings.wrap(frames_=slice(1, 373))),
        'a spike of 25 degrees in the state': _recording(recordings.spike(25.0, feature='observation.state')),
        'two dropped frames': _recording(lambda f, m: recordings.dropped_frame(*recordings.dropped_frame(f, m),
                                                                               frame=200)),
        'robot_type with terminal escapes': _recording(recordings.renamed('so101\x1b[2J\x1b[31m')),
        'robot_type closing a comment': _recording(recordings.renamed('x--->/<option gravity="0 0 9.81"/>')),
        'robot_type None': _recording(recordings.renamed(None)),
        'a folder name with escapes and a newline': _recording(folder='rec\x1b[2J\nline'),
        'a folder name closing a comment': _recording(folder='x--->'),
    })
    import test_properties
    for name in sorted(test_properties.CORRUPTIONS):
        cases[f'structural: {name}'] = _structural(name, 7)
    return cases


# --- the command line and its files -------------------------------------------------------------------------------

@functools.cache
def _tiny():
    data = arm_replay.synthetic_dataset(nepisode=3, seconds=3.0)
    fit, held = fit_request.select_episodes(data)
    return identify.identify(data, fit, held, progress=False, max_iter=10)


def _command(place='new', options=(), dataset='shipped', corrupt=None, interrupt=False, refuse=None):
    """``fit-servo`` with the fit itself replaced by the tiny one (what is audited is everything around it); a
    corrupted recording must be refused unless ``refuse`` is False."""
    refuse = corrupt is not None if refuse is None else refuse

    def case():
        with tempfile.TemporaryDirectory() as tmp:
            tmp = pathlib.Path(tmp)
            if dataset in ('synthetic', '/no/such/folder'):
                root = dataset
            else:
                root = str(recordings.write(tmp / (dataset if dataset != 'shipped' else 'data'),
                                            *(corrupt(recordings.table(), recordings.info()) if corrupt else
                                              (None, None))))
            out = {'new': tmp / 'arm.xml', 'menagerie': so101.menagerie_xml(),
                   'in dataset': pathlib.Path(root) / 'meta' / 'arm.xml', 'missing folder': tmp / 'no' / 'arm.xml',
                   'folder': tmp / 'dir.xml', 'link': tmp / 'link.xml', 'existing': tmp / 'old.xml',
                   'read-only': tmp / 'ro.xml', 'urdf': tmp / 'arm.urdf'}[place]
            (tmp / 'dir.xml').mkdir()
            (tmp / 'victim.txt').write_text('not yours')
            (tmp / 'link.xml').symlink_to(tmp / 'victim.txt')
            (tmp / 'old.xml').write_text('old model')
            (tmp / 'ro.xml').write_text('old model')
            (tmp / 'ro.xml').chmod(0o444)
            watched = [p for p in tmp.rglob('*') if p.is_file() and not p.is_symlink()] + [so101.menagerie_xml()]
            before = {p: p.read_bytes() for p in watched}
            argv = ['fit-servo', root, '--out', str(out), *[o.replace('{tmp}', str(tmp)) for o in options]]

            tiny = _tiny()  # before identify.identify is replaced below

            def fake(data, fit, held, *, source='', **kwargs):
                if interrupt:
                    raise KeyboardInterrupt
                return dataclasses.replace(tiny, dataset=data, source=source)

            stdout, stderr = io.StringIO(), io.StringIO()
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(identify, 'identify', fake)
                mp.setattr(sys, 'stdout', stdout)
                mp.setattr(sys, 'stderr', stderr)
                status = main(argv)
            after = {p: p.read_bytes() for p in watched if p.exists()}
            err = stderr.getvalue().splitlines()
            if status in (2, 130):
                _must(after == before and not list(tmp.rglob('*.part')), 'a refused or stopped run changed a file')
                _must(len(err) == 1 and err[0].isprintable(), f'not one printable line: {err}')
                if status == 130:
                    return 'flagged'
                raise ValueError(err[0])
            if status != 0:
                raise RuntimeError(f'exit status {status}: {err}')
            _must((tmp / 'victim.txt').read_text() == 'not yours', 'written through a symbolic link')
            _must(so101.menagerie_xml().read_bytes() == before[so101.menagerie_xml()], "Menagerie's model changed")
            text = out.read_text(encoding='utf-8')
            _must(text.count('-->') == 1 and '\x1b' not in text, 'a comment closed early, or an escape written')
            m = mujoco.MjModel.from_xml_path(str(out))
            _must(np.allclose(m.opt.gravity, [0, 0, -9.81]) and m.nu == 6, 'a model other than Menagerie\'s arm')
            _must(all(line.isprintable() for line in stdout.getvalue().splitlines()), 'a control character printed')
            if refuse:
                raise Nonsense('a corrupted recording was fitted')
            return 'correct'
    return case


def command_cases() -> dict:
    cases = {f'--out {place}': _command(place) for place in (
        'new', 'menagerie', 'in dataset', 'missing folder', 'folder', 'link', 'existing', 'read-only', 'urdf')}
    cases.update({f'--out {place} --force': _command(place, ['--force']) for place in (
        'menagerie', 'in dataset', 'link', 'existing', 'read-only', 'folder')})
    cases.update({
        '--report in a missing folder': _command(options=['--report', '{tmp}/no/fit.png']),
        '--report fit.svg': _command(options=['--report', '{tmp}/fit.svg']),
        '--report a link': _command(options=['--report', '{tmp}/link.png']),
        '--report new, --json': _command(options=['--report', '{tmp}/fit.png', '--json']),
        '--report an existing file': _command(options=['--report', '{tmp}/old.xml']),
        '--max-frames 0': _command(options=['--max-frames', '0']),
        '--max-frames x': _command(options=['--max-frames', 'x']),
        '--max-frames 90': _command(options=['--max-frames', '90']),
        '--max-frames 30 (held-out too short)': _command(options=['--max-frames', '30']),
        '--episodes 0 1 7': _command(options=['--episodes', '0', '1', '7']),
        '--episodes 0 1 (too few)': _command(options=['--episodes', '0', '1']),
        '--episodes 0 0 1': _command(options=['--episodes', '0', '0', '1']),
        '--heldout 0 1 2': _command(options=['--heldout', '0', '1', '2']),
        '--episodes ²': _command(options=['--episodes', '²']),
        '--robot so100': _command(options=['--robot', 'so100']),
        '--frobnicate': _command(options=['--frobnicate']),
        'synthetic': _command(dataset='synthetic'),
        'a folder named x--->/<option gravity/>': _command(dataset='x--->/<option gravity="0 0 9.81"'),
        'a folder named with escapes': _command(dataset='rec\x1b[2J\x1b]0;t\x07'),
        'a hostile robot_type': _command(corrupt=recordings.renamed('so101\x1b[2J-->\u202e'), refuse=False),
        'a hostile robot_type, --json': _command(corrupt=recordings.renamed('so101\x1b[2J-->'), refuse=False,
                                                 options=['--json']),
        'Ctrl-C during the fit': _command(interrupt=True),
        'Ctrl-C during the fit, over an old file': _command('existing', ['--force'], interrupt=True),
        'a held-out episode of 2 frames': _command(corrupt=lambda f, m: (
            f[(f['episode_index'] != 3) | (f['frame_index'] < 2)],
            {**m, 'total_frames': int(((f['episode_index'] != 3) | (f['frame_index'] < 2)).sum())})),
        'a 100,000-frame held-out episode': _command(corrupt=_huge_heldout),
        'the dataset is not a folder': _command(dataset='/no/such/folder'),
    })
    for name in ('fps 15 in info.json, data at 30', 'one state frame of 1e30', 'one +360 degree encoder wrap',
                 'every frame stored twice, restamped', 'timestamps reversed in an episode'):
        cases[f'a recording with {name}'] = _command(corrupt=recordings.CORRUPTIONS[name])
    cases['a recording with a glitch in episode 1, --episodes 0 2 3 (left out)'] = _command(
        corrupt=recordings.glitch(1e30, episode=1), options=['--episodes', '0', '2', '3'], refuse=False)
    return cases


def _huge_heldout(frames, meta):
    long = frames[frames['episode_index'] == 3]
    n = 100_000
    repeat = long.iloc[np.resize(np.arange(len(long)), n)].reset_index(drop=True)
    repeat['frame_index'] = np.arange(n)
    repeat['timestamp'] = (np.arange(n) / 30).astype(np.float32)
    frames = pd.concat([frames[frames['episode_index'] != 3], repeat], ignore_index=True)
    return frames, {**meta, 'total_frames': len(frames)}


# --- the audit ------------------------------------------------------------------------------------------------------

def classify(case) -> tuple[str, str]:
    """(class, detail) of one case's outcome."""
    try:
        with np.errstate(all='ignore'):
            return case(), ''
    except Nonsense as err:
        return 'silent nonsense', str(err)
    except CLEAR as err:
        message = str(err)
        if (' must ' in message or ' no ' in f' {message}' or 'unrecognized' in message or 'required' in message
                or 'expected' in message):
            return 'clear error', message
        return 'crash', f'{type(err).__name__} without saying what must hold: {message}'
    except Exception as err:  # noqa: BLE001 - any other exception is the finding
        return 'crash', f'{type(err).__name__}: {err}'


KINDS = {'public API': api_cases, 'corrupted recordings': recording_cases, 'command line and files': command_cases}
ALL = [(kind, name) for kind, make in KINDS.items() for name in make()]


@functools.cache
def _cases(kind):
    return KINDS[kind]()


@pytest.mark.parametrize('kind, name', ALL, ids=[f'{k}: {n}' for k, n in ALL])
def test_every_audited_input_gives_a_clear_error_or_an_honest_result(kind, name):
    outcome, detail = classify(_cases(kind)[name])
    assert outcome in ('clear error', 'correct', 'flagged'), f'{outcome}: {detail}'


def counts() -> dict:
    table = {}
    for kind in KINDS:
        table[kind] = collections.Counter(classify(case)[0] for case in _cases(kind).values())
    return table


if __name__ == '__main__':
    totals = counts()
    print(f"{'kind':24s} {'cases':>5s} " + ' '.join(f'{c:>15s}' for c in CLASSES))
    for kind, counter in totals.items():
        print(f'{kind:24s} {sum(counter.values()):5d} ' + ' '.join(f'{counter[c]:15d}' for c in CLASSES))
    print(json.dumps({k: dict(v) for k, v in totals.items()}))
