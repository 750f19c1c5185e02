/**
 * physai-arm3d-poses.js: body poses as plain numbers, MuJoCo's (xpos, and xquat as w, x, y, z): the quaternion
 * arithmetic that magnifies a motion about a reference pose (magnifyPoses). No three.js: the view
 * (physai-arm3d.js) draws what this computes and re-exports it.
 */
// Quaternions as [w, x, y, z] in plain arrays, MuJoCo's order and Hamilton product (mju_mulQuat).
function qmul(a, b) {
    return [a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
            a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
            a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
            a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0]];
}
const qconj = (q) => [q[0], -q[1], -q[2], -q[3]];
function qrot(q, v) {  // q v q*
    const r = qmul(qmul(q, [0, v[0], v[1], v[2]]), qconj(q));
    return [r[1], r[2], r[3]];
}
function qpow(q, k) {  // the rotation of q, its angle times k, about the same axis (shortest way)
    const s = q[0] < 0 ? -1 : 1;
    const w = s * q[0], x = s * q[1], y = s * q[2], z = s * q[3];
    const sin = Math.hypot(x, y, z);
    if (sin < 1e-12) return [1, k * x, k * y, k * z];
    const half = Math.atan2(sin, w) * k;
    const f = Math.sin(half) / sin;
    return [Math.cos(half), f * x, f * y, f * z];
}
const take = (array, i, n) => Array.from({ length: n }, (_, j) => array[n * i + j]);

/**
 * Each body's excursion from a reference pose, magnified: the body's pose relative to its parent turned further
 * about the same axis by `factor` times its turn from the reference, and moved `factor` times as far, then the
 * chain recomposed from the world outwards, so the bodies stay joined. For hinge joints at their body's origin (every
 * joint of the SO-101) that is exactly MuJoCo's pose at qpos_ref + factor (qpos - qpos_ref), while
 * factor |qpos - qpos_ref| < pi (tests/test_arm3d_view.py checks it).
 * @param {number[]} parents body_parentid (body 0 is the world)
 * @returns {{xpos: Float64Array, xquat: Float64Array}}
 */
export function magnifyPoses(parents, xpos, xquat, reference, factor) {
    const nbody = parents.length;
    const outPos = new Float64Array(nbody * 3);
    const outQuat = new Float64Array(nbody * 4);
    outQuat[0] = 1;
    for (let b = 1; b < nbody; b++) {
        const p = parents[b];
        // relative pose now and at the reference: R_p^T (x_b - x_p), q_p* q_b
        const rel = (pos, quat) => {
            const qp = take(quat, p, 4), xp = take(pos, p, 3), xb = take(pos, b, 3);
            return { t: qrot(qconj(qp), [xb[0] - xp[0], xb[1] - xp[1], xb[2] - xp[2]]),
                     q: qmul(qconj(qp), take(quat, b, 4)) };
        };
        const now = rel(xpos, xquat), ref = rel(reference.xpos, reference.xquat);
        const turn = qpow(qmul(qconj(ref.q), now.q), factor);
        const q = qmul(ref.q, turn);
        const t = [0, 1, 2].map((i) => ref.t[i] + factor * (now.t[i] - ref.t[i]));
        const qp = take(outQuat, p, 4), xp = take(outPos, p, 3);
        const x = qrot(qp, t);
        const qb = qmul(qp, q);
        const norm = Math.hypot(...qb);
        for (let i = 0; i < 3; i++) outPos[3 * b + i] = xp[i] + x[i];
        for (let i = 0; i < 4; i++) outQuat[4 * b + i] = qb[i] / norm;
    }
    return { xpos: outPos, xquat: outQuat };
}
