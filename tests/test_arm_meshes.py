"""physai.book.arm_meshes: the SO-101's meshes for the page's 3D view, checked against MuJoCo's compiled model."""

import gzip
import json
import pathlib

import numpy as np
import pytest

from physai.book import arm_meshes
from physai.engine import bodies, so101

BUDGET = 2_000_000
"""bytes: the 3D assets a page loads on demand, compressed (issue 32), three.js not counted."""


@pytest.fixture(scope='module')
def built(tmp_path_factory):
    if not (arm_meshes.NODE_MODULES / 'meshoptimizer').is_dir():
        pytest.skip('node_modules/meshoptimizer is missing: run npm ci')
    folder = tmp_path_factory.mktemp('arm3d')
    summary = arm_meshes.build(folder)
    return folder, summary, json.loads((folder / 'so101.json').read_text())


@pytest.fixture(scope='module')
def model():
    return so101.load_so101()


def read_mesh(folder, mesh):
    raw = (folder / 'so101.bin').read_bytes()
    levels = np.frombuffer(raw, '<u2', mesh['vertices'] * 3, mesh['offset']).reshape(-1, 3)
    index = np.frombuffer(raw, '<u2', mesh['triangles'] * 3, mesh['offset'] + mesh['vertices'] * 6).reshape(-1, 3)
    return levels, index


def test_the_assets_stay_within_their_budget_compressed_and_raw(built):
    folder, summary, _ = built
    sizes = {path.name: path.stat().st_size for path in folder.iterdir()}
    assert set(sizes) == {'so101.json', 'so101.bin', 'LICENSE', 'NOTICE.md'}
    assert sum(sizes.values()) < BUDGET
    packed = sum(len(gzip.compress(path.read_bytes(), 9)) for path in folder.iterdir())
    assert packed < BUDGET / 4  # a quarter of the budget, raw or compressed, with room for a second model
    assert summary['files']['so101.bin']['bytes'] == sizes['so101.bin']


def test_the_meshes_are_simplified_within_the_error_bound(built):
    _, summary, description = built
    assert all(0 <= mesh['error_m'] <= arm_meshes.MAX_ERROR * (1 + 1e-6) for mesh in description['meshes'])
    assert summary['source_triangles'] == 325_020  # the 14 meshes of the 18 visual geoms, as MuJoCo compiled them
    assert summary['triangles'] < summary['source_triangles'] / 10


def test_the_ghost_arm_s_meshes_are_the_same_meshes_coarser(built):
    _, summary, description = built
    ghost = description['ghost_meshes']
    assert [m['id'] for m in ghost] == [m['id'] for m in description['meshes']]
    assert all(0 <= mesh['error_m'] <= arm_meshes.GHOST_ERROR * (1 + 1e-6) for mesh in ghost)
    assert all(g['triangles'] <= m['triangles'] for g, m in zip(ghost, description['meshes']))
    assert summary['ghost_triangles'] == sum(m['triangles'] for m in ghost) < summary['triangles'] / 2
    assert description['source']['ghost_max_error_m'] == arm_meshes.GHOST_ERROR


def test_every_drawn_vertex_is_one_mujoco_compiled_within_half_a_quantization_step(built, model):
    """meshoptimizer keeps a subset of the vertices, unmoved: quantized alike, each kept vertex's levels are those
    of a vertex of MuJoCo's mesh_vert, and min + levels * step is within step / 2 of it."""
    folder, _, description = built
    for mesh in description['meshes'] + description['ghost_meshes']:
        levels, index = read_mesh(folder, mesh)
        vert, _ = bodies.mesh_geometry(model, mesh['id'])
        low, step = np.array(mesh['min']), np.array(mesh['step'])
        compiled = np.rint((vert - low) / step).astype(np.int64)
        assert np.all(np.abs(low + compiled * step - vert) <= step / 2 * (1 + 1e-9))
        known = {tuple(row) for row in compiled}
        assert all(tuple(row) in known for row in levels.astype(np.int64)), mesh['name']
        assert index.max() == mesh['vertices'] - 1 and len(np.unique(index)) == mesh['vertices']
        assert max(step) < 2.2e-6  # m


def test_the_description_places_each_geom_as_mujoco_compiled_it(built, model):
    _, _, description = built
    assert description['format'] == arm_meshes.FORMAT and description['nbody'] == model.nbody
    assert [b['parent'] for b in description['bodies']] == model.body_parentid.tolist()
    assert [b['weld'] for b in description['bodies']] == model.body_weldid.tolist()
    assert [b['weld'] == 0 for b in description['bodies']] == [True, True] + [False] * (model.nbody - 2)  # world, base
    shown = bodies.visual_geoms(model)
    assert len(description['geoms']) == len(shown)
    for written, geom in zip(description['geoms'], shown):
        assert written['geom'] == geom.geom and written['body'] == geom.body
        assert description['meshes'][written['mesh']]['id'] == geom.mesh
        assert tuple(written['pos']) == geom.pos and tuple(written['quat']) == geom.quat  # float64, exactly
        assert tuple(written['rgba']) == geom.rgba
    xpos, xquat = bodies.body_poses(model, model.qpos0)
    assert description['home']['xpos'] == xpos[0].ravel().tolist()
    assert description['home']['xquat'] == xquat[0].ravel().tolist()


def test_the_licence_and_what_was_changed_are_beside_the_meshes(built):
    folder, _, description = built
    assert (folder / 'LICENSE').read_bytes() == (so101.folder() / 'LICENSE').read_bytes()
    assert 'Apache License' in (folder / 'LICENSE').read_text()
    notice = (folder / 'NOTICE.md').read_text()
    for needed in (arm_meshes.ROBOTSTUDIO_URL, arm_meshes.MENAGERIE_URL, description['source']['menagerie_commit'],
                   f"meshoptimizer {description['source']['meshoptimizer']}", 'quantized'):
        assert needed in notice


def test_a_rebuild_writes_the_same_bytes(built, tmp_path):
    folder, _, _ = built
    arm_meshes.build(tmp_path)
    for path in folder.iterdir():
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name


def test_without_the_pinned_simplifier_the_build_says_how_to_get_it(tmp_path):
    with pytest.raises(arm_meshes.ToolMissing, match='meshoptimizer/index.js is missing: run `npm ci`'):
        arm_meshes.build(tmp_path, node_modules=pathlib.Path(tmp_path / 'nowhere'))
    with pytest.raises(ValueError, match='max_error must be a finite number > 0 m, got 0'):
        arm_meshes.build(tmp_path, max_error=0)
    with pytest.raises(ValueError, match='ghost_error must be a finite number > 0 m, got -1'):
        arm_meshes.build(tmp_path, ghost_error=-1)


def test_the_command_prints_every_file_s_size(built, tmp_path, capsys):
    assert arm_meshes.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert 'so101.bin' in out and 'gzip -9' in out and 'triangles 325020 ->' in out and 'the ghost arm' in out
