"""physai.interface.servo_sysid_panels: chapter 4's live panel at extreme sliders and its static twin
(byte-stable, redrawn in headless Chromium)."""

import os

import pytest

from physai.engine import sysid
from physai.experiments import servo_sysid
from physai.interface import servo_sysid_panels


def test_panel_survives_extreme_sliders_and_the_twin_is_stable(synthetic_episode, soft):
    """Every slider at its ends redraws without an error; the twin's HTML is byte-identical twice."""
    ep = synthetic_episode(30)
    panel = servo_sysid_panels.sysid_panel(ep, soft)
    for change in (dict(kp=30000.0), dict(kp=1.0), dict(armature=0.0), dict(timestep=0.02),
                   dict(integrator='Euler'), dict(kv=0.001), dict(forcerange=0.2), dict(timestep=0.0005)):
        assert panel.update(**change)
        assert panel.error is None, (change, panel.error)
    kps = (1.0, 10.0, 100.0)
    first = servo_sysid_panels.sysid_twin(ep, soft, kps=kps).data
    assert first == servo_sysid_panels.sysid_twin(ep, soft, kps=kps).data
    assert 'physai-twin-sysid-kp' in first
    # the servo's own kp joins the frames, labelled, and the slider starts on it
    assert '"labels":["1","10","30 (fitted)","100"]' in first and '"init":2' in first


@pytest.mark.skipif(not os.path.exists('/usr/bin/chromium'), reason='headless Chromium is not installed')
def test_twin_redraws_in_a_browser_without_a_kernel(twin_page, synthetic_episode, soft):
    """Moving the kp slider of the static twin changes both plots, with no kernel and no errors."""
    open_page, errors = twin_page
    root = 'physai-twin-sysid-kp'
    page = open_page(servo_sysid_panels.sysid_twin(synthetic_episode(30), soft, kps=(1.0, 10.0, 100.0)).data)
    before = [page.inner_html(f'#{root}-plot-{i}') for i in (0, 1)]
    assert all('<path' in b for b in before)
    page.eval_on_selector(f'#{root}-kp', "e => { e.value = 0; e.dispatchEvent(new Event('input')); }")
    after = [page.inner_html(f'#{root}-plot-{i}') for i in (0, 1)]
    assert after[0] != before[0] and after[1] != before[1]
    assert errors == []


def test_the_panel_calls_a_rattling_replay_chattering(real):
    """At kp 30000, armature 0, 20 ms and Euler the panel once said 'stable' while the joints chattered ±20°."""
    _, heldout = servo_sysid.split(real)
    panel = servo_sysid_panels.sysid_panel(heldout[0], sysid.MENAGERIE)
    panel.update(kp=30000.0, armature=0.0, timestep=0.02, integrator='Euler')
    assert panel.error is None
    assert panel.state['status'].get_text().startswith('chatters')
