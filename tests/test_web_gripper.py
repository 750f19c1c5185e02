"""Chapter 5's page panel: the grasp in the reader's browser (``book/_static/panels/gripper_runs.js`` on
:func:`physai.interface.web_arm.gripper_xml`) against physai's grasp (:func:`physai.engine.gripper.grip`) in Python
MuJoCo 3.17.0, and the first view's verdicts against the runs they label.

What "agree" means here. The browser's model writes Menagerie's three gripper meshes as their convex hulls (what
MuJoCo collides with); recompiled, a hull is centred again, which moves its vertices on their body by the last bits.
Contacts between a cube and a jaw then part in the last bits, and a settling grasp's transient magnifies that for a
few steps (the moving jaw's force parts by 0.014 N at most over LeRobot's grasp). So the test asks the same
verdict, the squeeze over the hold's tail within :data:`SQUEEZE_RTOL`, the slide within :data:`SLIDE_TOL_MM`; a grasp
that jitters (a chaotic limit cycle) agrees in its verdict.
"""

import math

import mujoco
import numpy as np
import pytest

from physai.engine import gripper
from physai.experiments import gripper as grasp
from physai.interface import gripper_panels, web, web_arm
from browser import engine_url, module, node

SQUEEZE_RTOL = 0.01
"""The mean jaw force over the hold's tail, browser against Python (measured on :data:`SETTINGS`: 3.3e-3 at
Menagerie's full limit, where the jaw force still swings by 0.4 N over the tail; 1e-5 at most on the others)."""

SLIDE_TOL_MM = 0.02
"""mm: the cube's slide at the end of the hold, browser against Python (measured: 0.007 mm at Menagerie's full limit,
1.2e-5 mm at most on the others)."""

SETTINGS = [dict(torque_limit=2.94), dict(torque_limit=0.5, mass=0.3), dict(torque_limit=grasp.LEROBOT_LIMIT),
            dict(torque_limit=grasp.LEROBOT_LIMIT, mass=3.0),
            dict(mu=0.2, mass=0.3), dict(condim=3, integrator='Euler', timestep=0.002),
            dict(command='just inside the cube', kp=300.0)]


def values(change):
    return {**gripper_panels.gripper_spec().defaults, **change}


def test_the_browser_s_model_compiles_to_physai_s_grasp_model():
    m0 = gripper.build()
    m = mujoco.MjModel.from_xml_string(web_arm.gripper_xml())
    for field in ('body_mass', 'body_inertia', 'body_pos', 'body_quat', 'jnt_range', 'geom_friction', 'geom_condim',
                  'geom_priority', 'geom_solref', 'actuator_forcerange', 'actuator_gainprm', 'actuator_biasprm'):
        np.testing.assert_array_equal(getattr(m, field), getattr(m0, field), err_msg=field)
    # every geom but a mesh where it was; a mesh's hull is centred on the hull's own centroid, its geom moved to match
    plain = m0.geom_type != mujoco.mjtGeom.mjGEOM_MESH
    np.testing.assert_array_equal(m.geom_pos[plain], m0.geom_pos[plain])
    np.testing.assert_array_equal(m.geom_size[plain], m0.geom_size[plain])
    assert m.opt.cone == m0.opt.cone and m.opt.impratio == m0.opt.impratio


def page_runs(settings):
    script = f"""
import {{load, Model}} from '{module('engine.js')}';
import {{gripRun, gripVerdict}} from '{module('gripper_runs.js')}';
import {{readFileSync}} from 'node:fs';
const input = JSON.parse(readFileSync(0, 'utf8'));
const mujoco = await load('{engine_url()}');
const model = new Model(mujoco, input.live.xml, input.live.engine);
const out = [];
for (const s of input.settings) {{
  const it = gripRun(model, s, input.live.grasp, input.constants, {{sliceMs: 1e9}});
  let step = it.next();
  while (!step.done) step = it.next();
  out.push(gripVerdict(step.value, s, input.constants));
}}
console.log(JSON.stringify(out));
"""
    k = gripper_panels.gripper_constants()
    setups = []
    for change in settings:
        v = values(change)
        setups.append({'torqueLimit': v['torque_limit'], 'kp': v['kp'], 'kv': k['kv'], 'armature': v['armature'],
                       'command': k['commands'][v['command']], 'mass': v['mass'], 'mu': v['mu'],
                       'condim': int(v['condim']), 'timestep': v['timestep'], 'integrator': v['integrator']})
    live = web.block_data(web_arm.gripper_live().data)
    return node(script, {'live': live, 'settings': setups, 'constants': k})


def test_the_page_s_grasps_match_python_mujoco():
    page = page_runs(SETTINGS)
    for change, p in zip(SETTINGS, page):
        _, result = gripper_panels.panel_run(values(change))
        assert p['verdict'] == result['verdict'], (change, p, result)
        if result['verdict'] in ('jitters', 'diverged'):
            continue
        assert math.isclose(p['squeeze'], result['squeeze_n'], rel_tol=SQUEEZE_RTOL), (change, p, result)
        if result['verdict'] != 'slips':
            assert abs(p['slideMm'] - result['slide_mm']) < SLIDE_TOL_MM, (change, p, result)


def test_the_first_view_s_verdicts_follow_from_the_runs_they_label():
    data = web.block_data(gripper_panels.gripper_twin().data)
    view = data['firstView']
    at = view['at']
    grid = view['grid']
    stored = view['parts']['grasp']['data']
    i = 0
    for limit in grid['torque_limit']:
        for mass in grid['mass']:
            run, result = gripper_panels.panel_run({**at, 'torque_limit': limit, 'mass': mass})
            frame = stored[i]
            i += 1
            assert frame['verdict'] == grasp.verdict(run)['verdict'] == result['verdict']
            assert frame['gripWords'] == gripper_panels.status(result)
            slide = web.unpack(frame['gripSlide'], gripper_panels.SLIDE_STEP)
            assert len(slide) == len(run.time)
            end = min(1e3 * run.slide[-1], gripper_panels.SLIDE_TOP_MM)
            assert abs(slide[-1] - end) <= gripper_panels.SLIDE_STEP
            assert (result['verdict'] == 'slips') == (1e3 * run.slide[-1] > 1e3 * grasp.SLIP_DISTANCE)


def test_the_first_view_stays_small():
    import gzip
    size = sum(len(gzip.compress(block.data.encode(), 6)) for block in (gripper_panels.gripper_twin(),
                                                                            web_arm.gripper_live()))
    assert size < 1e6 / 10, size  # far under the 1 MB every page panel's first view must stay under


def gripper_blocks() -> str:
    """Chapter 5's page panel as the chapter's cells write it: its first view and its engine block
    (benchmarks/bench_web.py serves them)."""
    return gripper_panels.gripper_twin().data + web_arm.gripper_live().data
