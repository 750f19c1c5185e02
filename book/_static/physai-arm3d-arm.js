/**
 * physai-arm3d-arm.js: the SO-101 as three.js objects, from the description and meshes physai.book.arm_meshes writes.
 *
 * Reads `so101.json` and the binary beside it (decodeArm, loadArm), builds the arm's scene graph, one group per body
 * with its geoms' frames and merged meshes (buildArm), and places the bodies at MuJoCo's xpos and xquat
 * (setBodyPoses). No renderer and no page: it runs in Node too (tests/test_arm3d_view.py compares its geoms'
 * placements with MuJoCo's). The view, physai-arm3d.js, draws what it builds and re-exports it.
 */
import * as THREE from './three/three.module.js';
import { mergeGeometries, mergeVertices, toCreasedNormals } from './three/BufferGeometryUtils.js';
/** The layout of the arm's description this module reads (physai.book.arm_meshes.FORMAT). */
export const FORMAT = 'physai-arm3d/1';
/** Normals are smoothed across edges sharper than this, and kept sharp at the CAD parts' creases. */
export const CREASE_ANGLE = Math.PI / 6;
/** The ghost arm's colour and opacity (the recorded arm behind the simulated one). */
export const GHOST = { color: '#3b82d6', opacity: 0.35 };

/**
 * The arm's description and meshes from a `so101.json` and the binary beside it (physai.book.arm_meshes).
 * @param {object} description the parsed JSON
 * @param {ArrayBuffer} buffer the binary file's bytes
 * @returns {{description: object, meshes: {positions: Float32Array, index: Uint16Array}[], ghostMeshes: object[]}}
 *     ghostMeshes: the ghost arm's coarser copies (`ghost_meshes`), or `meshes` if the description has none
 */
export function decodeArm(description, buffer) {
    if (description.format !== FORMAT) {
        throw new Error(`the arm's description must be of format ${FORMAT}, got ${description.format}`);
    }
    if (buffer.byteLength !== description.bin_bytes) {
        throw new Error(`${description.bin} must hold ${description.bin_bytes} bytes, got ${buffer.byteLength}`);
    }
    const decode = (mesh) => {
        const levels = new Uint16Array(buffer, mesh.offset, mesh.vertices * 3);
        const index = new Uint16Array(buffer, mesh.offset + mesh.vertices * 6, mesh.triangles * 3);
        const positions = new Float32Array(mesh.vertices * 3);
        for (let v = 0; v < mesh.vertices; v++) {
            for (let axis = 0; axis < 3; axis++) {
                positions[3 * v + axis] = mesh.min[axis] + levels[3 * v + axis] * mesh.step[axis];
            }
        }
        return { positions, index };
    };
    const meshes = description.meshes.map(decode);
    const ghostMeshes = description.ghost_meshes ? description.ghost_meshes.map(decode) : meshes;
    return { description, meshes, ghostMeshes };
}

const loaded = new Map();

/**
 * Fetch and decode the arm once per URL (views of one page share it).
 * @param {string|URL} url the description, `.../so101.json`; the binary is named in it and sits beside it
 */
export function loadArm(url) {
    const key = new URL(url, document.baseURI).href;
    if (!loaded.has(key)) {
        const load = (async () => {
            const answer = await fetch(key);
            if (!answer.ok) throw new Error(`the arm's description could not be fetched from ${key}: ${answer.status}`);
            const description = await answer.json();
            const binUrl = new URL(description.bin, key).href;
            const bin = await fetch(binUrl);
            if (!bin.ok) throw new Error(`the arm's meshes could not be fetched from ${binUrl}: ${bin.status}`);
            return decodeArm(description, await bin.arrayBuffer());
        })();
        load.catch(() => loaded.delete(key));  // a failed load may be retried
        loaded.set(key, load);
    }
    return loaded.get(key);
}

function colour(rgba) {
    return new THREE.Color().setRGB(rgba[0], rgba[1], rgba[2], THREE.SRGBColorSpace);
}

/**
 * The arm as a three.js scene graph: one group per body that carries a geom (placed by setBodyPoses), on it each
 * visible geom's frame at its compiled geom_pos/geom_quat (`geoms`, empty objects) and one mesh per colour holding
 * those geoms' vertices placed by their frames. Pure scene graph: no renderer, so it also runs in Node.
 * @param {{description: object, meshes: object[], ghostMeshes?: object[]}} arm from decodeArm/loadArm
 * @param {{ghost?: boolean}} options ghost: one translucent colour (GHOST), drawn after the solid arm, with the
 *     coarser `ghostMeshes` and without the bodies fixed to the world (`weld` 0: the base), which the solid arm
 *     draws in the same place; a software renderer pays for every triangle (benchmarks/bench_arm3d.py)
 * @returns {{root: THREE.Group, bodies: (THREE.Group|null)[], geoms: THREE.Object3D[], dispose: () => void}}
 */
export function buildArm(arm, { ghost = false } = {}) {
    const { description } = arm;
    const drawnGeoms = ghost ? description.geoms.filter((geom) => description.bodies[geom.body].weld !== 0)
        : description.geoms;
    const geometries = (ghost ? arm.ghostMeshes ?? arm.meshes : arm.meshes).map(({ positions, index }) => {
        const indexed = new THREE.BufferGeometry();
        indexed.setAttribute('position', new THREE.BufferAttribute(positions, 3));
        indexed.setIndex(new THREE.BufferAttribute(index, 1));
        // Normals sharp at the parts' creases, smooth elsewhere; then the corners that share a position and a
        // normal merged again, so each is shaded once (a software renderer spends most of a frame on vertices).
        const creased = toCreasedNormals(indexed, CREASE_ANGLE);
        const merged = mergeVertices(creased);
        indexed.dispose();
        creased.dispose();
        return merged;
    });
    const materials = new Map();
    const material = (rgba) => {
        const key = ghost ? 'ghost' : rgba.join(',');
        if (!materials.has(key)) {
            // Lambert shading: a CAD part needs no physically based highlights, and a software renderer (no GPU)
            // draws it in about half the time. The ghost writes depth so that only its nearest surface shows
            // (one translucent layer, not every inner face of the part), and is pushed back in depth so that where
            // it coincides with the solid arm (the fixed base) the solid shows.
            materials.set(key, ghost
                ? new THREE.MeshLambertMaterial({ color: GHOST.color, transparent: true, opacity: GHOST.opacity,
                                                  polygonOffset: true, polygonOffsetFactor: 2, polygonOffsetUnits: 2 })
                : new THREE.MeshLambertMaterial({ color: colour(rgba), transparent: rgba[3] < 1, opacity: rgba[3] }));
        }
        return materials.get(key);
    };
    const root = new THREE.Group();
    root.name = ghost ? 'arm (ghost)' : 'arm';
    const bodies = description.bodies.map(() => null);
    const geoms = [];
    const drawn = new Map();  // body and material -> the geoms' meshes placed on the body, merged below
    for (const geom of drawnGeoms) {
        if (!bodies[geom.body]) {
            const body = new THREE.Group();
            body.name = description.bodies[geom.body].name;
            body.matrixAutoUpdate = true;
            bodies[geom.body] = body;
            root.add(body);
        }
        // The geom's frame on its body (geom_pos, geom_quat), an empty object: what the tests compare with MuJoCo's
        // geom_xpos/geom_xmat, and the placement of the geom's vertices in its body's merged mesh.
        const frame = new THREE.Object3D();
        frame.name = `geom ${geom.geom}`;
        frame.position.set(geom.pos[0], geom.pos[1], geom.pos[2]);
        frame.quaternion.set(geom.quat[1], geom.quat[2], geom.quat[3], geom.quat[0]);  // MuJoCo w,x,y,z
        frame.updateMatrix();
        bodies[geom.body].add(frame);
        geoms.push(frame);
        const key = `${geom.body} ${ghost ? 'ghost' : geom.rgba.join(',')}`;
        if (!drawn.has(key)) drawn.set(key, { body: geom.body, rgba: geom.rgba, parts: [] });
        drawn.get(key).parts.push(geometries[geom.mesh].clone().applyMatrix4(frame.matrix));
    }
    // One mesh per body and colour, its geoms' vertices moved into the body's frame: a draw call each (8 for the
    // SO-101's 18 geoms), which a software renderer pays for one by one.
    const merged = [];
    for (const { body, rgba, parts } of drawn.values()) {
        const geometry = parts.length === 1 ? parts[0] : mergeGeometries(parts);
        if (parts.length > 1) parts.forEach((g) => g.dispose());
        merged.push(geometry);
        const mesh = new THREE.Mesh(geometry, material(rgba));
        mesh.name = `body ${body}`;
        if (ghost) mesh.renderOrder = 1;
        bodies[body].add(mesh);
    }
    geometries.forEach((g) => g.dispose());
    return {
        root, bodies, geoms,
        dispose() {
            merged.forEach((g) => g.dispose());
            materials.forEach((m) => m.dispose());
        },
    };
}

/**
 * Place each body's group at MuJoCo's pose: position xpos[3b..3b+2], orientation xquat[4b..4b+3] (w, x, y, z).
 * @param {(THREE.Object3D|null)[]} bodies from buildArm
 */
export function setBodyPoses(bodies, xpos, xquat) {
    for (let b = 0; b < bodies.length; b++) {
        const body = bodies[b];
        if (!body) continue;
        body.position.set(xpos[3 * b], xpos[3 * b + 1], xpos[3 * b + 2]);
        body.quaternion.set(xquat[4 * b + 1], xquat[4 * b + 2], xquat[4 * b + 3], xquat[4 * b]);
    }
}
