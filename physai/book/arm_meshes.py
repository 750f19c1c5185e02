"""The SO-101's meshes for the page's 3D view: MuJoCo Menagerie's visual meshes, simplified, quantized, with licence.

``python -m physai.book.arm_meshes OUTDIR`` (and the site build, ``book/_ext/physai_arm3d.py``, into
``_static/arm3d/``) writes what ``book/_static/physai-arm3d.js`` loads when a reader opens the 3D view:

``so101.json``
    the description: ``format`` (:data:`FORMAT`), ``nbody`` and ``bodies`` (name, ``parent`` = ``body_parentid``;
    body 0 is the world; ``weld`` = ``body_weldid``, 0 for a body fixed to the world), ``geoms`` (each visible mesh
    geom, :func:`physai.engine.bodies.visual_geoms`: ``geom`` id, ``body``, ``mesh`` = an index into ``meshes``,
    ``pos``/``quat`` = ``geom_pos``/``geom_quat`` and ``rgba``, float64 as MuJoCo compiled them), ``meshes``
    (``name``, MuJoCo's mesh ``id``, ``offset`` in ``so101.bin``, ``vertices``, ``triangles``, ``min`` and ``step``
    to read the vertices, ``source_triangles``, ``error_m``), ``ghost_meshes`` (the same meshes in the same order,
    simplified further, to ``ghost_error``: what the translucent ghost arm draws; a reader that does not know them
    draws the ghost with ``meshes``), ``home`` (every body's ``xpos``/``xquat`` at ``qpos0``, flat, for the first
    picture), ``bin``, ``bin_bytes``, ``bin_sha256`` and ``source`` (versions of MuJoCo, Menagerie and
    meshoptimizer, ``max_error_m``, ``ghost_max_error_m``, the licence).
``so101.bin``
    per mesh (``meshes``, then ``ghost_meshes``), its vertices as uint16 triples then its triangles as uint16
    triples (little-endian). A vertex is ``min + q * step`` per axis, in m, in the frame MuJoCo compiled the mesh in
    (``mesh_vert``; see :mod:`physai.engine.bodies`), so the page places it with the compiled
    ``geom_pos``/``geom_quat`` on the body's ``xpos``/``xquat`` and draws MuJoCo's own pose.
``LICENSE``, ``NOTICE.md``
    the meshes' licence (Apache-2.0, Menagerie's ``robotstudio_so101/LICENSE``, the same text as The Robot
    Studio's SO-ARM100 repository, where the meshes come from) and what was changed, as its section 4 asks.

How the 18 MB of STL (325,020 triangles in the 14 distinct meshes the 18 visual geoms use) become a few hundred KB:

1. **MuJoCo compiles them** (:func:`physai.engine.so101.load_so101`): vertices welded, moved into each mesh's frame.
2. **Simplified by meshoptimizer** (npm ``meshoptimizer``, pinned in ``package-lock.json``, run by Node on
   ``arm_meshes_simplify.mjs`` beside this file): each mesh as far as its error estimate stays within
   ``max_error`` (1 mm by default; the arm is about 0.4 m long). The simplifier keeps a subset of the
   vertices, unmoved, so every vertex drawn is one MuJoCo compiled.
3. **Quantized** to 16 bits per axis over each mesh's bounding box: at most half a step off, a step being the
   box's size / 65535 (under 2 um for the SO-101's largest part).

No mesh or normal is stored twice: the servo's mesh rides on five bodies and is stored once, and the page
computes normals. The output is the same bytes for the same inputs (Menagerie's files, MuJoCo, meshoptimizer,
``max_error``): ``tests/test_arm_meshes.py`` builds it twice and compares.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import hashlib
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile

import mujoco
import numpy as np

from physai.engine import bodies, so101
from physai.laws import checks


FORMAT = 'physai-arm3d/1'
"""The name and version of the layout above; the page refuses a description of another one."""
MAX_ERROR = 1e-3
"""m: meshoptimizer's error bound for the simplified meshes (1 mm: under a pixel of the view as it opens, where the
arm's 0.43 m span at its home pose covers some 300 px of a desktop page, about 1.4 mm a pixel; 0.3 mm doubles the
triangles, 15,618 instead of 8,044, which costs a software renderer some 15-20 % more CPU time per frame in the panels,
``benchmarks/bench_arm3d.py --panels --compare``)."""
GHOST_ERROR = 3e-3
"""m: the error bound of the ghost arm's meshes (chapter 4's recorded arm, drawn translucent behind the simulated
one). 3 mm, about 2 px of the view as it opens: the ghost is one translucent colour, which shows outlines, not
detail. Its meshes hold 2,506 triangles instead of 8,044; without the fixed base (which the solid arm draws in the same
place) it draws 1,886 a frame instead of 9,628. With the cursor's changes (``arm3d_view.js``) chapter 4's view costs
a software renderer about 0.7 of the CPU time a frame it did (``benchmarks/bench_arm3d.py --panels --compare``)."""
QUANT = 65535
"""Quantization levels per axis minus one (uint16)."""
ROOT = pathlib.Path(__file__).resolve().parents[2]
NODE_MODULES = ROOT / 'node_modules'
SIMPLIFIER = pathlib.Path(__file__).with_name('arm_meshes_simplify.mjs')
MENAGERIE_URL = 'https://github.com/google-deepmind/mujoco_menagerie/tree/main/robotstudio_so101'
ROBOTSTUDIO_URL = 'https://github.com/TheRobotStudio/SO-ARM100'


class ToolMissing(RuntimeError):
    """Node or the pinned meshoptimizer package is missing; the message says how to get it."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Mesh:
    """One mesh as written: its kept vertices (in the order the triangles first use them) and triangles."""

    name: str
    """Its name in the model (``mesh`` asset)."""
    id: int
    """Its id in the model (``mesh_*`` arrays)."""
    vertices: np.ndarray
    """(nvert, 3) float32, m, a subset of MuJoCo's ``mesh_vert`` rows."""
    triangles: np.ndarray
    """(ntri, 3) int indices into ``vertices``."""
    source_triangles: int
    """How many triangles MuJoCo compiled (``mesh_facenum``)."""
    error: float
    """meshoptimizer's estimate of the simplified surface's deviation, m."""


def _meshoptimizer(node_modules: pathlib.Path) -> tuple[str, pathlib.Path, str]:
    """(node executable, meshoptimizer's index.js, its version); raises :class:`ToolMissing`."""
    node = shutil.which('node')
    if node is None:
        raise ToolMissing('node is not installed: the arm\'s meshes are simplified by the npm package meshoptimizer, '
                          'which needs Node.js (make book installs it with npm ci)')
    index = node_modules / 'meshoptimizer' / 'index.js'
    if not index.is_file():
        raise ToolMissing(f'{index} is missing: run `npm ci` in {ROOT} (make book does) to install the pinned '
                          f'meshoptimizer')
    version = json.loads((index.parent / 'package.json').read_text(encoding='utf-8'))['version']
    return node, index, version


def simplify(model: mujoco.MjModel, meshes: list[int], *, max_error: float = MAX_ERROR,
             node_modules: pathlib.Path = NODE_MODULES) -> tuple[list[Mesh], str]:
    """Meshes ``meshes`` of ``model`` simplified by meshoptimizer within ``max_error`` m, and its version.

    Raises:
        ToolMissing: without Node or ``node_modules/meshoptimizer``.
        ValueError: if ``max_error`` is not > 0.
    """
    max_error = checks.positive('max_error', max_error, 'm')
    node, index, version = _meshoptimizer(node_modules)
    geometry = [bodies.mesh_geometry(model, mesh) for mesh in meshes]
    with tempfile.TemporaryDirectory(prefix='physai-arm-meshes-') as folder:
        folder = pathlib.Path(folder)
        (folder / 'meshes.json').write_text(json.dumps([{'nvert': len(v), 'nface': len(f)} for v, f in geometry]))
        with open(folder / 'meshes.bin', 'wb') as out:
            for vert, face in geometry:
                out.write(np.ascontiguousarray(vert, '<f4').tobytes())
                out.write(np.ascontiguousarray(face, '<u4').tobytes())
        done = subprocess.run([node, str(SIMPLIFIER), str(index), str(folder), repr(max_error)],
                              capture_output=True, text=True, check=True)
        report = json.loads(done.stdout.strip().rsplit('\n', 1)[-1])
        kept = np.frombuffer((folder / 'simplified.bin').read_bytes(), '<u4')
    out, at = [], 0
    for mesh, (vert, face), result in zip(meshes, geometry, report):
        triangles = kept[at:at + 3 * result['triangles']]
        at += 3 * result['triangles']
        used, first = np.unique(triangles, return_index=True)
        order = used[np.argsort(first)]  # vertices in the order the triangles first use them
        remap = np.empty(len(vert), dtype=np.int64)
        remap[order] = np.arange(len(order))
        out.append(Mesh(name=model.mesh(mesh).name, id=mesh, vertices=vert[order], triangles=remap[triangles].reshape(-1, 3),
                        source_triangles=len(face), error=float(result['error'])))
    return out, version


def quantize(vertices: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``vertices`` (n, 3) as uint16 levels ``q`` with ``min`` and ``step`` (3,) float64 such that
    ``min + q * step`` is within ``step / 2`` of each vertex, per axis (a flat axis gets step 0)."""
    low = vertices.min(axis=0).astype(np.float64)
    step = (vertices.max(axis=0).astype(np.float64) - low) / QUANT
    safe = np.where(step > 0, step, 1.0)
    levels = np.clip(np.rint((vertices.astype(np.float64) - low) / safe), 0, QUANT).astype('<u2')
    return levels, low, step


def _gz(data: bytes) -> int:
    return len(gzip.compress(data, compresslevel=9, mtime=0))


def build(outdir, *, max_error: float = MAX_ERROR, ghost_error: float = GHOST_ERROR,
          node_modules: pathlib.Path = NODE_MODULES) -> dict:
    """Write the SO-101's 3D-view assets into ``outdir`` (created if needed); see the module docstring.

    Returns:
        a summary: ``files`` {name: {'bytes', 'gzip'}}, ``triangles`` and ``source_triangles`` (sums over the
        meshes), ``vertices``, ``max_error`` (the largest estimate, m), ``quant_step`` (the largest step, m) and
        ``ghost_triangles`` (the sum over ``ghost_meshes``).
    """
    ghost_error = checks.positive('ghost_error', ghost_error, 'm')
    outdir = pathlib.Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    model = so101.load_so101()
    shown = bodies.visual_geoms(model)
    mesh_ids = sorted({g.mesh for g in shown})
    meshes, meshopt_version = simplify(model, mesh_ids, max_error=max_error, node_modules=node_modules)
    ghost_meshes, _ = simplify(model, mesh_ids, max_error=ghost_error, node_modules=node_modules)
    slot = {mesh: i for i, mesh in enumerate(mesh_ids)}

    chunks, offset, steps = [], 0, []

    def write(mesh: Mesh) -> dict:
        nonlocal offset
        if len(mesh.vertices) > QUANT + 1:
            raise ValueError(f'mesh {mesh.name} keeps {len(mesh.vertices)} vertices, more than uint16 indices reach')
        levels, low, step = quantize(mesh.vertices)
        steps.append(step.max())
        data = levels.tobytes() + mesh.triangles.astype('<u2').tobytes()
        written = {'name': mesh.name, 'id': mesh.id, 'offset': offset, 'vertices': len(mesh.vertices),
                   'triangles': len(mesh.triangles), 'min': low.tolist(), 'step': step.tolist(),
                   'source_triangles': mesh.source_triangles, 'error_m': mesh.error}
        chunks.append(data)
        offset += len(data)
        return written

    described = [write(mesh) for mesh in meshes]
    ghost_described = [write(mesh) for mesh in ghost_meshes]
    binary = b''.join(chunks)

    import mujoco_menagerie
    home_xpos, home_xquat = bodies.body_poses(model, model.qpos0)
    description = {
        'format': FORMAT,
        'model': 'robotstudio_so101/so101.xml',
        'nbody': model.nbody,
        'bodies': [{'name': model.body(b).name, 'parent': int(model.body_parentid[b]),
                    'weld': int(model.body_weldid[b])} for b in range(model.nbody)],
        'geoms': [{'geom': g.geom, 'body': g.body, 'mesh': slot[g.mesh], 'pos': list(g.pos), 'quat': list(g.quat),
                   'rgba': list(g.rgba)} for g in shown],
        'meshes': described,
        'ghost_meshes': ghost_described,
        'home': {'xpos': home_xpos[0].ravel().tolist(), 'xquat': home_xquat[0].ravel().tolist()},
        'bin': 'so101.bin',
        'bin_bytes': len(binary),
        'bin_sha256': hashlib.sha256(binary).hexdigest(),
        'source': {
            'mujoco': mujoco.__version__,
            'mujoco_menagerie': mujoco_menagerie.__version__,
            'menagerie_commit': mujoco_menagerie.commit(),
            'meshoptimizer': meshopt_version,
            'max_error_m': max_error,
            'ghost_max_error_m': ghost_error,
            'licence': 'Apache-2.0 (LICENSE)',
            'notice': 'NOTICE.md',
        },
    }
    text = json.dumps(description, sort_keys=True, separators=(',', ':')) + '\n'
    (outdir / 'so101.json').write_text(text, encoding='utf-8')
    (outdir / 'so101.bin').write_bytes(binary)
    shutil.copyfile(so101.folder() / 'LICENSE', outdir / 'LICENSE')
    (outdir / 'NOTICE.md').write_text(_notice(description), encoding='utf-8')

    files = {name: {'bytes': (outdir / name).stat().st_size, 'gzip': _gz((outdir / name).read_bytes())}
             for name in ('so101.json', 'so101.bin', 'LICENSE', 'NOTICE.md')}
    return {'files': files, 'triangles': sum(m.triangles.shape[0] for m in meshes),
            'source_triangles': sum(m.source_triangles for m in meshes),
            'vertices': sum(len(m.vertices) for m in meshes), 'max_error': max(m.error for m in meshes),
            'quant_step': float(max(steps)), 'ghost_triangles': sum(m.triangles.shape[0] for m in ghost_meshes)}


def _notice(description: dict) -> str:
    source = description['source']
    return f"""# The SO-101 meshes of this folder

`so101.bin` and `so101.json` hold the visual meshes of the SO-101 arm, derived from:

- The Robot Studio's SO-ARM100 repository, {ROBOTSTUDIO_URL} (`Simulation/SO101`), the arm's designers,
  licensed under the Apache License, Version 2.0;
- MuJoCo Menagerie's `robotstudio_so101` model, {MENAGERIE_URL} (derived from the above), licensed under the
  Apache License, Version 2.0; here Menagerie commit {source['menagerie_commit']} as packaged by the Python package
  `mujoco-menagerie` {source['mujoco_menagerie']}.

The licence is in `LICENSE` beside this file (Menagerie's `robotstudio_so101/LICENSE`, the same text as SO-ARM100's).

Changed by `python -m physai.book.arm_meshes`: the meshes were compiled by MuJoCo {source['mujoco']} (which moves
each into the frame of its own inertia), simplified with meshoptimizer {source['meshoptimizer']} to an error
estimate of at most {source['max_error_m'] * 1e3:g} mm (and, for the translucent ghost arm, a second copy to at most
{source['ghost_max_error_m'] * 1e3:g} mm), and their vertices quantized to 16 bits per axis; the
geoms' placements and colours are MuJoCo's compiled ones. Nothing else was changed.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog='python -m physai.book.arm_meshes', description=__doc__.split('\n')[0])
    parser.add_argument('outdir', help='folder to write so101.json, so101.bin, LICENSE and NOTICE.md into')
    parser.add_argument('--max-error', type=float, default=MAX_ERROR, help='simplification error bound, m')
    parser.add_argument('--ghost-error', type=float, default=GHOST_ERROR,
                        help='simplification error bound of the ghost arm\'s meshes, m')
    args = parser.parse_args(argv)
    try:
        summary = build(args.outdir, max_error=args.max_error, ghost_error=args.ghost_error)
    except (ToolMissing, so101.ModelUnavailable, ValueError) as err:
        print(f'arm_meshes: {err}', file=sys.stderr)
        return 2
    for name, size in summary['files'].items():
        print(f'{name:12s} {size["bytes"]:9d} bytes  {size["gzip"]:9d} gzip -9')
    total = sum(s['bytes'] for s in summary['files'].values())
    total_gz = sum(s['gzip'] for s in summary['files'].values())
    print(f'{"total":12s} {total:9d} bytes  {total_gz:9d} gzip -9')
    print(f'triangles {summary["source_triangles"]} -> {summary["triangles"]}, vertices {summary["vertices"]}, '
          f'error <= {summary["max_error"] * 1e3:.3f} mm, quantization step <= {summary["quant_step"] * 1e6:.2f} um; '
          f'the ghost arm\'s meshes {summary["ghost_triangles"]} triangles')
    return 0


if __name__ == '__main__':
    sys.exit(main())
