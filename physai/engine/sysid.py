"""Chapter 4's fit: the servo model of :mod:`physai.engine.arm_replay` fitted to recorded SO-101 episodes.

The fit
    Six shared parameters (``PARAMS``: ``kp``, ``kv``, ``forcerange``, ``damping``, ``frictionloss``, ``armature``
    of :class:`~physai.engine.arm_replay.ArmServo`) in log10 space with bounds (``LOG_BOUNDS``), fitted with
    MuJoCo's bounded Levenberg-Marquardt least squares (``mujoco.minimize.least_squares``, with Marquardt's scaling
    and the schedule ``SOLVER``) on per-frame residuals (sim - real, degrees, :func:`residuals`) of the fit
    episodes, from two starts, each run until the solver's own tolerances stop it or an iteration gains less than
    ``FTOL`` of the cost (``max_iter`` is only a cap; :func:`least_squares`). ``least_squares`` asks for the
    residuals of several candidates at once (all six finite-difference probes of a Jacobian in one call), but a
    trial step is one candidate, three simulations for all the CPUs; so the starts, and leave-one-out's folds, run
    side by side (:func:`fit_servos`), and whatever they ask for at one time, every candidate on its episodes, is
    replayed as one ``mujoco.batch.Batch`` with one model per simulation. A replay gives the same bits
    whatever it is batched with, so each start takes the path it takes alone. The models are copies of the
    arm without its meshes, geoms and sites (contacts are off), since copying the mesh data cost more than
    simulating and placing the geoms a tenth of it.
    The starts end in one flat valley at nearly equal costs; the softest of those within ``COST_TIE`` is
    kept, since its path does not depend on the last bits of the arithmetic, and its servo is rounded to
    ``FIT_DIGITS`` significant digits, so everything computed from it is the same on any processor.

The teleport scale, the sag in held poses, the kp × damping map, leave-one-out and the ``sysid`` experiment
(``python -m physai sysid``) are :mod:`physai.experiments.servo_sysid`; chapter 4's panel is
:mod:`physai.interface.servo_sysid_panels`.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import sys
import threading
import time
from collections.abc import Sequence

import mujoco
import mujoco.batch
import mujoco.minimize
import numpy as np

from physai.engine import arm_replay, mj
from physai.engine.arm_replay import (MENAGERIE, PARAMS, THEROBOTSTUDIO, ArmServo, Replay, ReplayConfig, checked_items,
                                      replay)
from physai.engine.datasets import Episode
from physai.laws import checks


# log10 bounds of the fit, in PARAMS order: wide enough to hold every baseline but kv = 0
LOG_BOUNDS = (np.array([0.0, -3.0, -0.5, -3.0, -4.0, -3.0]),
              np.array([3.5, 1.5, 1.0, 1.0, 0.0, 0.0]))


def to_log(servo: ArmServo) -> np.ndarray:
    """(6,) log10 of the parameters in ``PARAMS`` order, clipped into ``LOG_BOUNDS``."""
    values = np.array([getattr(servo, name) for name in PARAMS], dtype=float)
    with np.errstate(divide='ignore'):
        return np.clip(np.log10(values), *LOG_BOUNDS)


def from_log(x: np.ndarray) -> ArmServo:
    """The servo whose log10 parameters (``PARAMS`` order) are ``x``, shape (6,)."""
    if np.shape(x) != (len(PARAMS),):
        raise ValueError(f'x must be {len(PARAMS)} log10 parameters ({", ".join(PARAMS)}), got shape {np.shape(x)}')
    return ArmServo(**{name: float(10.0 ** v) for name, v in zip(PARAMS, np.ravel(x))})


# --------------------------------------------------------------------------------------------------
# The fit
# --------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class FitStart:
    """One start of the fit and where it ended."""

    name: str
    start: ArmServo
    servo: ArmServo
    """The fitted servo."""
    cost: float
    """Final ½·mean squared residual, deg²."""
    iterations: int
    objectives: np.ndarray
    """(iterations + 1,) the cost at each iterate."""
    max_iter: int
    """The cap on iterations this start ran under."""

    @property
    def converged(self) -> bool:
        """The solver's own tolerances, or the ``FTOL`` stop, ended it before the ``max_iter`` cap."""
        return self.iterations < self.max_iter


@dataclasses.dataclass(frozen=True)
class FitResult:
    """The outcome of :func:`fit_servo`."""

    servo: ArmServo
    """The kept start's fitted servo, rounded to ``FIT_DIGITS`` significant digits: the book's fitted servo."""
    starts: tuple[FitStart, ...]
    evaluations: int
    """Candidate replays run (each candidate on every fit episode); depends on the solver's path, so it is
    never printed in checked outputs."""
    seconds: float
    """Wall time of the fit, s (varies from run to run; never printed in checked outputs)."""
    kept: str = ''
    """The name of the kept start (see :func:`fit_servo`)."""


def residuals(x: np.ndarray, episodes: Sequence[Episode], *, config: ReplayConfig = ReplayConfig(),
              decimate: int = 1) -> np.ndarray:
    """Per-frame residuals of candidates, the function ``least_squares`` minimises.

    Args:
      x: (6,) or (6, ncand) log10 parameters in ``PARAMS`` order.
      episodes: the fit episodes.
      config: replay settings.
      decimate: use every ``decimate``-th frame (1: all).

    Returns:
      (nres, ncand) ``(sim - real) / sqrt(nres)`` in degrees over frames 1, 1 + decimate, ... and the
      five arm joints, so ``0.5 * sum(r**2)`` is half the mean squared error.
    """
    x = np.asarray(x, dtype=float)
    if x.ndim not in (1, 2) or x.shape[0] != len(PARAMS) or x.size == 0:
        raise ValueError(f'x must be (6,) or (6, ncand) log10 parameters, got shape {x.shape}')
    if not (isinstance(decimate, numbers.Integral) and not isinstance(decimate, bool) and decimate >= 1):
        raise ValueError(f'decimate must be a whole number >= 1, got {decimate!r}')
    x = x.reshape(len(PARAMS), -1)
    runs = replay([from_log(c) for c in x.T], episodes, config=config)
    cols = []
    for row in runs:
        r = np.concatenate([(rep.sim_deg[1::decimate] - rep.real_deg[1::decimate]).ravel()
                            for rep in row])
        cols.append(r)
    r = np.stack(cols, axis=1)
    return r / math.sqrt(r.shape[0])


def _progress(total: int, desc: str, enabled: bool):
    if not enabled:
        return None
    from tqdm import tqdm
    return tqdm(total=total, desc=desc, file=sys.stderr, leave=True, ncols=80)


FIT_DIGITS = 3
"""Significant digits of the fitted servo the book uses (:attr:`FitResult.servo`).

The kept start's end point moves by less than 1e-6 (relative) when the last bits of the replays change
(``tests/test_sysid.py`` nudges it), so three digits are fixed on any processor, and every replay, table
and figure made with the rounded servo is a smooth function of fixed inputs. More would claim more than the
data hold: the leave-one-out fits differ in the third digit of the lag and in the first or second of every
parameter."""

COST_TIE = 0.01
"""Starts whose final costs lie within this fraction of the lowest are a tie (see :func:`fit_servo`)."""

SOLVER = dict(x_scale='jac', mu_min=1e-3, mu_max=1e4, mu_factor=10.0 ** 0.5)
"""The Levenberg-Marquardt schedule of every fit (``mujoco.minimize.least_squares`` keywords).

``x_scale='jac'`` is Marquardt's scaling: each parameter is measured in units of its own column of the Jacobian,
so the regulariser mu is relative to that parameter's curvature, 1 meaning a step about half the Gauss-Newton
one, whatever the units of the residuals. That lets one range serve every problem: mu never below 1e-3 (below
that the step is Gauss-Newton's anyway, and the solver then uses mu = 0), at most 1e4 (a step 10^-4 of the
gradient's, below what the finite differences resolve), raised by 10^0.5 per rejected trial step. The solver's
own defaults (mu from 1e-6 to 1e8 on the raw Hessian, raised by 10^0.1) spent 166 of the 244 candidate servos of
chapter 4's fit on trial steps, creeping up to the mu the problem needs, up to 64 in a row, and stopped 5 % higher
in cost (0.646 deg², kv at its lower bound); with this schedule and ``FTOL`` the fit takes 91 candidates (each
replayed on the three fit episodes)."""

FTOL = 1e-3
"""A start stops when an iteration lowers the cost by less than this fraction of it (0.1 %, a change of 0.05 % in
the root-mean-square error): the flat valley of the fit (the kv/damping split) otherwise takes tens of iterations
that each lower the cost by parts in 10^4 or 10^5 and move the servo along the valley. Chosen on the fit episodes'
cost alone: chapter 4's fit stops after 9 iterations at a cost of 0.6139 deg²; with no such stop it takes 36, and
its 91 candidate servos become 290, to reach 0.6132 (0.1 % lower), kp from 8.31 to 8.28 and the joint damping
moved along the valley (0.181 to 0.174)."""


class _Flat(Exception):
    """Raised from the iteration callback to stop a solver whose last iteration lowered the cost by < ``FTOL``."""


def least_squares(x0: np.ndarray, residual, *, bounds: tuple[np.ndarray, np.ndarray], eps: float, max_iter: int,
                  ftol: float = FTOL, on_iter=None) -> tuple[np.ndarray, list]:
    """``mujoco.minimize.least_squares`` with the fit's schedule (``SOLVER``) and its relative-decrease stop.

    Runs until the solver's own tolerances stop it, or until an iteration lowers the cost by less than ``ftol``
    of it; that iteration's step is then not taken (it gained less than ``ftol``). ``ftol = 0`` leaves only the
    solver's tolerances.

    Args:
      x0: (n,) start; residual: (n,) or (n, ncand) -> (nres, ncand); bounds, eps, max_iter: as
        ``least_squares``; ftol: the relative-decrease stop (default ``FTOL``); on_iter: called with the trace
        after each iteration, before the stop is checked.

    Returns:
      The end point, (n,), and the trace, whose last entry is the end point and its cost; ``len(trace) - 1``
      iterations were taken.
    """
    trace = []

    def callback(logs):
        trace[:] = logs
        if on_iter is not None:
            on_iter(logs)
        if logs[-1].reduction < ftol * logs[-1].objective:  # also the solver's own last entry (reduction 0)
            raise _Flat

    try:
        x, trace = mujoco.minimize.least_squares(x0, residual, bounds=bounds, eps=eps, max_iter=max_iter,
                                                 verbose=mujoco.minimize.Verbosity.SILENT, iter_callback=callback,
                                                 **SOLVER)
    except _Flat:
        x = np.ravel(trace[-1].candidate).copy()
    return np.ravel(x), list(trace)


def fit_servo(episodes: Sequence[Episode], *, starts: dict[str, ArmServo] | None = None,
              config: ReplayConfig = ReplayConfig(), max_iter: int = 50, decimate: int = 1,
              eps: float = 1e-3, ftol: float = FTOL, digits: int = FIT_DIGITS, progress: bool = True) -> FitResult:
    """Fit one :class:`ArmServo` to recorded episodes with ``mujoco.minimize.least_squares``.

    The six parameters are fitted as log10 values inside ``LOG_BOUNDS``. Each start runs
    Levenberg-Marquardt iterations (:func:`least_squares`: the schedule ``SOLVER``) until ``least_squares``'s
    own tolerances stop it (its default ``xtol`` on the step and ``gtol`` on the free gradient, or no step that
    lowers the cost) or an iteration lowers the cost by less than ``FTOL`` of it, at most ``max_iter`` of them.
    The fit is deterministic however many iterations it takes: every replay is (``mujoco.batch`` repeats
    ``mj_step`` bit for bit) and so is the solver. A start that hits the cap is reported
    (``FitStart.converged``), not hidden. The starts run side by side (:func:`fit_servos`): whatever each asks
    for at a time, the six probes of a Jacobian or one trial step, is replayed in one batch with what the others
    ask for, and each start takes exactly the path it would take alone.

    Which start is kept: the one with the lowest cost, except that costs within ``COST_TIE`` (1 %) of the
    lowest are a tie, which goes to the softest start (the lowest start kp). On the book's recording the two
    default starts end within 0.3 % of each other in cost, in one flat valley along the kv/damping split, so
    which is lower is no finding. Nor is it reproducible: from Menagerie's stiff, force-clamped gains the
    first iterations amplify a difference in the last bits about tenfold per iteration, so where that start
    stops along the valley changes with the processor (``PHYSAI_PERTURB`` shows it), while TheRobotStudio's
    soft start lands on the same point to better than 1e-6. The kept servo is rounded to ``digits``
    significant digits.

    Args:
      episodes: the fit episodes.
      starts: named initial servos; default the two disputed models, Menagerie's and TheRobotStudio's
        gains, a factor 56 apart in kp (kv = 0 starts at the lower bound of kv).
      config: replay settings.
      max_iter: the most iterations per start; a cap, not a target. On the book's recording both
        default starts stop by themselves well before 50.
      decimate: residuals at every ``decimate``-th frame. The simulation still runs every step (the
        replay is open loop), so this only shrinks the least-squares algebra, which is cheap anyway.
      eps: finite-difference step in log10 units (0.1 % of a decade); far above the constraint
        solver's tolerance, which MuJoCo's default (√machine-ε) is not.
      ftol: stop a start at an iteration that lowers the cost by less than this fraction of it (``FTOL``;
        0: only the solver's own tolerances stop it, which a fit started at another fit's end needs, so that it
        travels along a flat valley as far as its own data pull it, see :func:`least_squares`).
      digits: significant digits of the returned servo (``FitStart.servo`` keeps every digit).
      progress: a tqdm bar on stderr.

    Returns:
      The kept start's servo, rounded, and every start's outcome.
    """
    return fit_servos([episodes], starts=starts, config=config, max_iter=max_iter, decimate=decimate, eps=eps,
                      ftol=ftol, digits=digits, progress=progress)[0]


def fit_servos(problems: Sequence[Sequence[Episode]], *, starts: dict[str, ArmServo] | None = None,
               config: ReplayConfig = ReplayConfig(), max_iter: int = 50, decimate: int = 1,
               eps: float = 1e-3, ftol: float = FTOL, digits: int = FIT_DIGITS, progress: bool = True
               ) -> list[FitResult]:
    """:func:`fit_servo` on several sets of episodes at once (leave-one-out's folds, say), every start of each.

    Each start of each set is one ``least_squares`` solver in a thread of its own; whenever every solver still
    running waits for residuals, all their candidates (each on its own set's episodes) are replayed in one
    ``mujoco.batch`` call (:class:`_Lockstep`). A replay gives the same bits whatever it is batched with, so each
    result equals :func:`fit_servo` on that set alone, bit for bit; batching only keeps every thread busy (a
    trial step alone is three simulations for all the CPUs).

    Args:
      problems: the episode sets, one fit each.
      starts, config, max_iter, decimate, eps, ftol, digits, progress: as :func:`fit_servo`, for every set; the bar
        counts the iterations of all the solvers.

    Returns:
      One :class:`FitResult` per set, in order (``seconds`` is the wall time of the whole batched run).
    """
    if starts is None:
        starts = {'menagerie': MENAGERIE, 'therobotstudio': THEROBOTSTUDIO}
    if not isinstance(starts, dict) or not starts or not all(isinstance(v, ArmServo) for v in starts.values()):
        raise ValueError(f'starts must map at least one name to an ArmServo, got {starts!r}')
    if isinstance(problems, Episode) or not isinstance(problems, Sequence) or not problems:
        raise ValueError(f'problems must be one or more sequences of episodes, got {problems!r}')
    problems = [checked_items('episodes', episodes, Episode) for episodes in problems]
    if not all(problems):
        raise ValueError('episodes must hold at least one episode to fit, got none')
    if not isinstance(max_iter, int) or isinstance(max_iter, bool) or max_iter < 1:
        raise ValueError(f'max_iter must be an integer >= 1, got {max_iter!r}')
    if not (isinstance(digits, int) and not isinstance(digits, bool) and digits >= 1):
        raise ValueError(f'digits must be an integer >= 1, got {digits!r}')
    if not isinstance(config, ReplayConfig):
        raise TypeError(f'config must be a ReplayConfig, got {type(config).__name__}')
    if not (isinstance(decimate, numbers.Integral) and not isinstance(decimate, bool) and decimate >= 1):
        raise ValueError(f'decimate must be a whole number >= 1, got {decimate!r}')
    checks.positive('eps', eps, 'log10 units')
    checks.nonnegative('ftol', ftol, '(a fraction of the cost)')
    rates = sorted({e.fps for episodes in problems for e in episodes})
    if len(rates) > 1:
        raise ValueError(f'episodes must share one fps, got {rates}')
    for episodes in problems:
        if arm_replay.replay_steps(episodes, config) * len(PARAMS) * len(starts) * len(episodes) * len(problems) \
                > mj.MAX_TOTAL_STEPS:
            raise ValueError(f'a fit of {len(problems)} x {len(episodes)} episodes from {len(starts)} starts would '
                             f'batch more than {mj.MAX_TOTAL_STEPS:,} physics steps at once')
    lockstep = _Lockstep(config, decimate)
    bar = _progress(len(problems) * len(starts) * max_iter, 'fitting', progress)
    if bar is not None and len(problems) * len(starts) > 1:
        bar.set_postfix_str(f'{len(problems) * len(starts)} starts side by side')
    bar_lock = threading.Lock()

    def solve(problem: int, name: str, start: ArmServo) -> FitStart:
        counted = 0

        def on_iter(trace):
            nonlocal counted
            if bar is not None and len(trace) <= max_iter:
                with bar_lock:
                    bar.update(1)
                counted += 1

        x, trace = least_squares(to_log(start), lockstep.residual(problem, problems[problem]), bounds=LOG_BOUNDS,
                                 eps=eps, max_iter=max_iter, ftol=ftol, on_iter=on_iter)
        if bar is not None:  # a start that stopped early still fills its share of the bar
            with bar_lock:
                bar.update(max_iter - counted)
        objectives = np.array([float(log.objective) for log in trace])
        return FitStart(name=name, start=start, servo=from_log(x), cost=float(objectives[-1]),
                        iterations=len(trace) - 1, objectives=objectives, max_iter=max_iter)

    t0 = time.perf_counter()
    try:
        outcomes = lockstep.run([functools.partial(solve, p, name, start)
                                 for p in range(len(problems)) for name, start in starts.items()])
    finally:
        if bar is not None:
            bar.close()
    seconds = time.perf_counter() - t0
    results = []
    for p in range(len(problems)):
        mine = outcomes[p * len(starts):(p + 1) * len(starts)]
        kept = kept_start(mine)
        results.append(FitResult(servo=kept.servo.rounded(digits), starts=tuple(mine),
                                 evaluations=lockstep.evaluations[p], seconds=seconds, kept=kept.name))
    return results


class _Lockstep:
    """Several ``least_squares`` solvers, each in a thread of its own, whose residuals are replayed together.

    A solver's residual call waits until every solver still running waits on one too (or has finished); then the
    candidates of all of them, each on its own episodes, are replayed in one batch
    (:func:`physai.engine.arm_replay.replay_runs`) and every solver gets its columns, computed as :func:`residuals`
    computes them. What a solver gets does not depend on what it was batched with, so its path is the one it takes
    alone, however the threads are scheduled.
    """

    def __init__(self, config: ReplayConfig, decimate: int, nthread: int = 0, *, run=None):
        self.config, self.decimate, self.nthread = config, decimate, nthread
        self.run_models = run if run is not None else (
            lambda models, episodes: arm_replay.replay_runs(models, episodes, config, nthread))
        """``run(models, episodes)``: run k replays ``episodes[k]`` with ``models[k]``, all in one batch (default
        :func:`physai.engine.arm_replay.replay_runs` for :class:`ArmServo` models; :mod:`physai.engine.servo_models`
        passes its own)."""
        self.evaluations: dict[int, int] = {}
        """Candidates replayed per problem (each on every episode of the problem)."""
        self._cond = threading.Condition()
        self._asked: dict[object, tuple[np.ndarray, list[Episode]]] = {}
        self._answers: dict[object, np.ndarray | BaseException] = {}
        self._running = 0
        self._stopped = False

    def residual(self, problem: int, episodes: list[Episode], *, decode=from_log, nparam: int = len(PARAMS)):
        """The residual function of one solver of ``problem`` on ``episodes``: (nparam,) or (nparam, ncand) ->
        (nres, ncand), each candidate column turned into the model ``run`` replays by ``decode`` (default
        :func:`from_log`: six log10 parameters to an :class:`ArmServo`)."""
        token = object()
        self.evaluations.setdefault(problem, 0)

        def evaluate(x: np.ndarray) -> np.ndarray:
            x = np.asarray(x, dtype=float)
            if x.ndim not in (1, 2) or x.shape[0] != nparam or x.size == 0:
                raise ValueError(f'x must be ({nparam},) or ({nparam}, ncand) parameters, got shape {x.shape}')
            x = x.reshape(nparam, -1)
            with self._cond:
                if self._stopped:
                    raise RuntimeError('the fit was stopped')
                self.evaluations[problem] += x.shape[1]
                self._asked[token] = (x, episodes, decode)
                self._cond.notify_all()
                while token not in self._answers:
                    self._cond.wait()
                answer = self._answers.pop(token)
            if isinstance(answer, BaseException):
                raise answer
            return answer

        return evaluate

    def run(self, jobs: Sequence) -> list:
        """Run every job (a function of no arguments that calls residual functions of this object) in a thread of
        its own, replaying what they ask for together; their return values in order, or the first job's error."""
        results, errors = [None] * len(jobs), [None] * len(jobs)

        def work(i):
            try:
                results[i] = jobs[i]()
            except BaseException as err:  # handed to the caller below
                errors[i] = err
            finally:
                with self._cond:
                    self._running -= 1
                    self._cond.notify_all()

        self._running = len(jobs)
        threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(len(jobs))]
        for thread in threads:
            thread.start()
        try:
            while True:
                with self._cond:
                    while self._running and len(self._asked) < self._running:
                        self._cond.wait()
                    if not self._running:
                        break
                    asked, self._asked = self._asked, {}
                try:
                    answers = self._replay(asked)
                except Exception as err:  # bad input: every solver that asked raises it
                    answers = dict.fromkeys(asked, err)
                with self._cond:
                    self._answers.update(answers)
                    self._cond.notify_all()
        except BaseException:  # an interrupt: release the solvers, which then stop at their next call
            with self._cond:
                self._stopped = True
                self._answers.update(dict.fromkeys(self._asked, RuntimeError('the fit was stopped')))
                self._asked = {}
                self._cond.notify_all()
            raise
        for thread in threads:
            thread.join()
        for err in errors:
            if err is not None:
                raise err
        return results

    def _replay(self, asked: dict) -> dict:
        servos, episodes, spans = [], [], []
        for token, (x, eps, decode) in asked.items():
            spans.append((token, len(servos), x.shape[1], len(eps)))
            for column in x.T:
                servo = decode(column)
                servos += [servo] * len(eps)
                episodes += eps
        runs = self.run_models(servos, episodes)
        answers = {}
        for token, first, ncand, nep in spans:
            rows = [runs[first + i * nep:first + (i + 1) * nep] for i in range(ncand)]
            answers[token] = _residual_columns(rows, self.decimate)
        return answers


def _residual_columns(rows: Sequence[Sequence[Replay]], decimate: int) -> np.ndarray:
    """:func:`residuals` of replays already run: ``rows[i]`` candidate i on every fit episode; (nres, ncand)."""
    cols = [np.concatenate([(rep.sim_deg[1::decimate] - rep.real_deg[1::decimate]).ravel() for rep in row])
            for row in rows]
    r = np.stack(cols, axis=1)
    return r / math.sqrt(r.shape[0])


def kept_start(starts: Sequence[FitStart], *, tie: float = COST_TIE) -> FitStart:
    """The start :func:`fit_servo` keeps: the lowest cost, a tie within ``tie`` going to the lowest start kp."""
    lowest = min(s.cost for s in starts)
    return min((s for s in starts if s.cost <= lowest * (1 + tie)), key=lambda s: s.start.kp)
