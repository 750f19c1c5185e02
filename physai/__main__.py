"""The book's experiments on the command line.

    python -m physai list              every experiment, one line each
    python -m physai NAME [ARG]        its table, fixed precision
    python -m physai NAME [ARG] --json the same rows as a JSON list of objects
    python -m physai fit-servo DATASET  chapter 4's fit on your own LeRobot recording, written as an MJCF file
                                        (python -m physai fit-servo --help for its options)
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import pathlib
import sys

from physai.experiments import registry
from physai.engine.so101 import ModelUnavailable


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ['fit-servo']:
        return fit_servo(argv[1:])
    parser = argparse.ArgumentParser(
        prog='python -m physai', description='Run one of the book\'s experiments and print its table.',
        epilog='python -m physai fit-servo DATASET fits chapter 4\'s servo to your own LeRobot recording '
               '(python -m physai fit-servo --help).')
    parser.add_argument('name', nargs='?', help='an experiment name, or "list" to see them all')
    parser.add_argument('arg', nargs='?', default=None, help='the argument some experiments take')
    parser.add_argument('--json', action='store_true', help='print the rows as a JSON list of objects')
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # before argparse's own "required: name", which would hide what was wrong
        parser.error(f'unrecognized arguments: {" ".join(unknown)}')
    if args.name is None:
        parser.error('the following arguments are required: name (an experiment, or "list")')

    if args.name == 'list':
        if args.arg is not None:
            parser.error(f'list takes no argument, got {args.arg!r}')
        if args.json:
            print(registry.to_json([{'name': name, 'summary': registry.get(name).summary,
                                     'choices': list(registry.get(name).choices)}
                                    for name in registry.names()]))
            return 0
        for name in registry.names():
            exp = registry.get(name)
            usage, summary = name, exp.summary
            if exp.choices:
                usage += ' PARAM'
                summary += f' (PARAM: {", ".join(exp.choices)})'
            print(f'{usage:22s} {summary}')
        return 0
    try:
        exp = registry.get(args.name)
    except ValueError as err:
        print(f'error: {err}', file=sys.stderr)
        print('run "python -m physai list" to see them with what they compute', file=sys.stderr)
        return 2
    try:
        rows = exp.run(args.arg)
    except (ValueError, OSError, ModelUnavailable) as err:  # bad input, data or files: one line, not a traceback
        print(f'error: {err}', file=sys.stderr)
        return 2
    print(registry.to_json(rows) if args.json else exp.table(rows, args.arg))
    return 0


FIT_SERVO_HELP = """Fit chapter 4's servo model to a LeRobot recording of your SO-101 and write it into Menagerie's arm.

DATASET is a LeRobot dataset folder (v2.1 or v3.0), a Hugging Face Hub id owner/name with --download (needs
pip install "physai[hub]"), or 'synthetic' for a stand-in recorded by the simulated arm itself."""


class _OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad argument is a ValueError (one ``error:`` line, exit 2) instead of usage and exit."""

    def error(self, message: str):
        raise ValueError(f'{message} (python -m physai fit-servo --help lists the options)')


def _fit_servo_parser() -> argparse.ArgumentParser:
    from physai.cli import fit_request

    parser = _OneLineParser(prog='python -m physai fit-servo', description=FIT_SERVO_HELP,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('dataset', metavar='DATASET', help='a LeRobot dataset folder, owner/name with --download, '
                        'or synthetic')
    parser.add_argument('--robot', default='so101', help='the arm (so101; default so101)')
    parser.add_argument('--episodes', nargs='+', metavar='N', help='episode indices to use (default all)')
    parser.add_argument('--heldout', nargs='+', metavar='N',
                        help='episode indices kept out of the fit (default the last of --episodes)')
    parser.add_argument('--per-joint', action='store_true', help="also fit each arm joint's kp and kv")
    parser.add_argument('--delay', action='store_true',
                        help="write the spring + delay structure (MuJoCo's actuator delay) instead of the spring")
    parser.add_argument('--offsets', action='store_true',
                        help='take the held-pose offsets to be calibration: fit without them, write them into the '
                             'actuators')
    firmware = parser.add_argument_group(
        'STS3215 firmware elements (chapter 6), written on top of the fitted spring; all off by default, as the '
        'chapter\'s ablation could tell none of them from the spring on its recording')
    firmware.add_argument('--p-register', default=None, metavar='P',
                          help='kp and forcerange from the P_Coefficient register (and --supply-voltage, default 7.4 V) '
                               'by BAM\'s duty-gain law; kv keeps the fitted lag')
    firmware.add_argument('--supply-voltage', default=None, metavar='V',
                          help='the servos\' supply, V (default 7.4 with --p-register; P 16 when only this is given)')
    firmware.add_argument('--goal-speed', default=None, metavar='STEPS_PER_S',
                          help='the Goal_Speed register: actuators written as MuJoCo pid actuators with its slew limit')
    firmware.add_argument('--dead-zone', default=None, metavar='STEPS',
                          help='the dead zone registers: the joints\' friction grows by kp times the band')
    firmware.add_argument('--play', default=None, metavar='DEG',
                          help='backlash: a play hinge of this many degrees (total) on each arm joint')
    parser.add_argument('--out', default=None, metavar='FILE',
                        help=f'the MJCF file to write (default {fit_request.OUT_DEFAULT}); an existing file is kept '
                             f'unless --force is given')
    parser.add_argument('--json', action='store_true', help='print the report as JSON')
    parser.add_argument('--report', default=None, metavar='FILE.png',
                        help='draw the replay against the recording per joint into this PNG')
    parser.add_argument('--force', action='store_true', help='replace --out and --report if they exist')
    parser.add_argument('--max-frames', default=None, metavar='N',
                        help='use only the first N frames of each episode (when the fit would exceed its budget)')
    parser.add_argument('--download', action='store_true', help='allow downloading DATASET from the Hugging Face Hub')
    parser.add_argument('--calibration', default=None, metavar='FILE.json',
                        help="the follower's LeRobot calibration file, to convert a recording in LeRobot's -100..100 "
                             "normalisation to degrees (default: the ranges read off the recording itself, with a "
                             "warning); see the page Identify your own arm")
    return parser


def _indices(name: str, values: list[str] | None) -> list[int] | None:
    if values is None:
        return None
    out = []
    for v in (x for value in values for x in value.split(',') if x):
        if not (v.isascii() and v.isdigit()):
            raise ValueError(f'{name} must be whole episode indices >= 0, got {v!r}')
        out.append(int(v))
    return out


def _number(name: str, text: str | None, kind: type):
    """An option's value as ``kind`` (int or float), or None when not given; a ValueError naming the option."""
    if text is None:
        return None
    try:
        return kind(text)
    except ValueError:
        what = 'a whole number' if kind is int else 'a number'
        raise ValueError(f'{name} must be {what}, got {text!r}') from None


def _firmware(args):
    """The firmware elements the options ask for (``fit_report.Firmware``), each register checked by its name."""
    from physai.cli import fit_report

    return fit_report.Firmware(p_register=_number('--p-register', args.p_register, int),
                               supply_voltage=_number('--supply-voltage', args.supply_voltage, float),
                               goal_speed=_number('--goal-speed', args.goal_speed, int) or 0,
                               dead_zone=_number('--dead-zone', args.dead_zone, int) or 0,
                               play_deg=_number('--play', args.play, float) or 0.0)


def fit_servo(argv: list[str]) -> int:
    """``python -m physai fit-servo``: 0 on success; 2 with one line on stderr for bad arguments or data; 130 with one
    line when interrupted (Ctrl-C) saying what was written, if anything (a file is written whole or not at all).

    Everything that can be checked is checked before the fit starts: the arguments, where the files go
    (``fit_request.check_outputs``: an existing file only with ``--force``, never through a symbolic link or into
    Menagerie's or the dataset's folder), the recording (the loader's checks on the episodes asked for), its units
    (``fit_request.check_units``: a recording in LeRobot's -100..100 normalisation is converted to degrees, with its
    follower's calibration file when ``--calibration`` gives one, else with the ranges its own values show, and a
    warning), the episodes' lengths, the follower against its leader joint by joint and Menagerie's model
    (``fit_request.check_leader_follower``) and the fit's estimated cost (``fit_request.check_cost``). The files are
    written atomically.
    """
    from physai.cli import fit_report, fit_request, identify  # here: `list` and the tables need neither
    from physai.experiments import servo_sysid
    from physai.engine.datasets import load_lerobot

    written = []
    try:
        args, unknown = _fit_servo_parser().parse_known_args(argv)
        if unknown:
            raise ValueError(f'unrecognized arguments: {" ".join(unknown)}')
        fit_request.check_robot(args.robot)
        episodes, heldout = _indices('--episodes', args.episodes), _indices('--heldout', args.heldout)
        max_frames = args.max_frames
        if max_frames is not None:
            if not (max_frames.isascii() and max_frames.isdigit() and int(max_frames) >= 2):
                raise ValueError(f'--max-frames must be a whole number of frames >= 2, got {max_frames!r}')
            max_frames = int(max_frames)
        local = args.dataset != 'synthetic' and pathlib.Path(args.dataset).is_dir()
        if args.dataset != 'synthetic' and not local and not args.download:
            raise ValueError(f'DATASET must be a LeRobot dataset folder, got {args.dataset!r}, which is none; '
                             f'for a Hugging Face Hub id (owner/name) add --download')
        out, png = fit_request.check_outputs(args.out or fit_request.OUT_DEFAULT, args.report, force=args.force,
                                          dataset=args.dataset if local else None)
        if args.dataset == 'synthetic':
            data, origin = servo_sysid.find_dataset('synthetic')
        else:
            try:
                data = load_lerobot(args.dataset, download=args.download, episodes=episodes)
            except ImportError:
                raise ValueError('--download needs the huggingface_hub package: pip install "physai[hub]"') from None
            origin = f'recording {args.dataset}'
            if not local:  # downloaded: its folder is known only now
                out, png = fit_request.check_outputs(out, png, force=args.force, dataset=data.root)
        units, unit_warnings = None, []
        if args.dataset != 'synthetic':  # before any fit: a recording in -100..100 is never fitted as degrees
            data, _, units, unit_warnings = fit_request.check_units(data, args.calibration)
        elif args.calibration is not None:
            raise ValueError('--calibration converts a recording of yours, got DATASET synthetic, which is in degrees; '
                             'leave --calibration out')
        if max_frames is not None:
            data = dataclasses.replace(data, episodes=tuple(fit_request.first_frames(data.episodes, max_frames)))
        elements = _firmware(args)
        if elements.any and (args.per_joint or args.offsets or args.delay):
            raise ValueError('the firmware elements (--p-register, --supply-voltage, --goal-speed, --dead-zone, '
                             '--play) go with the shared spring only, not with --per-joint, --offsets or --delay')
        fit, held = fit_request.select_episodes(data, episodes, heldout)
        fit_request.check_lengths(fit, held)
        fit_request.check_leader_follower(fit + held)  # loads Menagerie's arm: a model with other joints stops here
        fit_request.check_cost(fit, held, per_joint=args.per_joint, offsets=args.offsets)
        ident = identify.identify(data, fit, held, source=origin, per_joint=args.per_joint, offsets=args.offsets,
                                 delay=args.delay, progress=True)
        ident = dataclasses.replace(ident, units=units, warnings=tuple(unit_warnings) + ident.warnings)
        # the files were checked before the fit; one that appeared since is replaced only with --force
        written.append(fit_report.write_mjcf(ident, out, replace=args.force, elements=elements))
        rep = fit_report.report(ident, written[0])
        if png is not None:
            written.append(draw_fit_report(ident, png, replace=args.force))
    except (ValueError, OSError, ModelUnavailable) as err:
        return _fail(str(err) + (f' (wrote {" and ".join(map(str, written))} before that)' if written else ''))
    except KeyboardInterrupt:
        done = f'wrote {" and ".join(map(str, written))} only' if written else 'nothing written'
        _close_progress_bars()
        print(f'fit-servo: interrupted (Ctrl-C); {_inert(done)}', file=sys.stderr)
        return 130
    try:
        print(fit_report.report_json(rep) if args.json else fit_report.report_text(rep), flush=True)
    except OSError as err:  # stdout on a full disk, a closed pipe: say so on stderr, and what was written
        _silence_stdout()
        return _fail(f'standard output took no report ({err.strerror or err}): wrote {" and ".join(map(str, written))}, '
                     f'but the report is lost; run again with standard output going to a terminal or to a file where '
                     f'there is room')
    return 0


def _silence_stdout() -> None:
    """Point standard output's file at /dev/null, so that the interpreter's last flush of what is still buffered
    cannot fail again at exit (Python's advice for a closed pipe)."""
    try:
        descriptor = os.open(os.devnull, os.O_WRONLY)
        os.dup2(descriptor, sys.stdout.fileno())
        os.close(descriptor)
    except (OSError, ValueError, AttributeError):  # no file behind sys.stdout (captured, say): nothing to flush
        pass


def _close_progress_bars() -> None:
    """Close every tqdm bar still open, so that a bar an interrupt left behind (one raised while tqdm was still drawing
    it, before the fit's ``finally`` could close it) ends its line now rather than redrawing itself under the last line
    at exit."""
    tqdm = sys.modules.get('tqdm')
    for bar in list(getattr(getattr(tqdm, 'tqdm', None), '_instances', ())):
        try:
            bar.close()
        except Exception:  # a bar interrupted half-built: nothing of it to end
            pass


def _inert(text: str) -> str:
    from physai.cli.outputs import inert
    return inert(text)


def _fail(message: str) -> int:
    print(f'error: {_inert(message)}', file=sys.stderr)  # the message may quote a recording's names or paths
    return 2


def draw_fit_report(ident, path, *, replace: bool = True) -> pathlib.Path:
    """The replay against the recording, per arm joint, every selected episode end to end; held-out ones shaded.

    Args:
      ident: an ``identify.Identification``.
      path: the PNG to write (atomically: ``outputs.write_atomic``).
      replace: whether a file already at ``path`` may be replaced (False: FileExistsError, the file kept).

    Returns:
      The path written.
    """
    import numpy as np
    from physai.cli.outputs import inert, write_atomic
    from matplotlib.figure import Figure  # no pyplot: the command changes no backend and keeps no figure open
    from physai.engine.so101 import ARM_JOINTS
    from physai.engine.arm_replay import arm_columns

    episodes = list(ident.fit) + list(ident.heldout)
    fig = Figure(figsize=(11, 2.0 * len(ARM_JOINTS)))
    axes = fig.subplots(len(ARM_JOINTS), 1, sharex=True)
    t0 = 0.0
    for k, e in enumerate(episodes):
        t = t0 + np.arange(e.nframe) / e.fps
        real = e.state[:, arm_columns(e.joints)]
        for j, ax in enumerate(axes):
            ax.plot(t, real[:, j], color='#888888', lw=2.2, alpha=0.8, label='recording' if k == 0 else None)
            ax.plot(t, ident.sim['menagerie'][k, :e.nframe, j], color='#d62728', lw=0.8,
                    label="Menagerie's servo" if k == 0 else None)
            ax.plot(t, ident.sim['fitted'][k, :e.nframe, j], color='#1f6fb4', lw=1.1,
                    label='fitted (the written file)' if k == 0 else None)
            if k >= len(ident.fit):
                ax.axvspan(t[0], t[-1], color='#f2c94c', alpha=0.25, lw=0,
                           label='held out' if k == len(ident.fit) else None)
            ax.axvline(t0, color='#444444', lw=0.6, ls=':')
        axes[0].text(t0 + 0.2, 1.02, f'episode {e.index}' + (' (held out)' if k >= len(ident.fit) else ''),
                     transform=axes[0].get_xaxis_transform(), fontsize=8)
        t0 = t[-1] + 1.0 / e.fps
    for ax, name in zip(axes, ARM_JOINTS):
        ax.set_ylabel(f'{name} (deg)')
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel('time over the episodes, end to end (s)')
    axes[0].legend(fontsize=8, ncols=4, loc='lower right')
    # the source is the recording's own name: shown as text, never read as mathtext ($...$) or control characters
    fig.suptitle(f'{inert(ident.source)}: open-loop replay against the recording', fontsize=10, parse_math=False)
    fig.tight_layout()
    return write_atomic(path, lambda f: fig.savefig(f, format='png', dpi=110), replace=replace)


if __name__ == '__main__':
    try:
        sys.exit(main())
    except BrokenPipeError:  # the reader piped the table into head or less and closed it early
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
