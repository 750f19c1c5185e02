// Simplifies triangle meshes with meshoptimizer's simplifier (npm `meshoptimizer`, pinned in package-lock.json),
// for physai/book/arm_meshes.py, which runs it as
//
//     node arm_meshes_simplify.mjs MESHOPTIMIZER_INDEX_JS FOLDER MAX_ERROR_M
//
// FOLDER/meshes.json lists the meshes ([{nvert, nface}, ...]); FOLDER/meshes.bin holds, mesh after mesh, the
// vertices (nvert x 3 float32, m) then the triangles (nface x 3 uint32). Each mesh is simplified as far as it goes
// while meshoptimizer's error estimate stays within MAX_ERROR_M metres ('ErrorAbsolute'; target 0 triangles means
// "as few as that error allows"). The simplifier only removes vertices: every vertex it keeps is one of the input's,
// unmoved. FOLDER/simplified.bin gets the kept triangles (uint32, mesh after mesh); stdout gets one JSON line,
// [{triangles, error}, ...], error being meshoptimizer's estimate of the deviation, in m.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [library, folder, maxErrorText] = process.argv.slice(2);
const maxError = Number(maxErrorText);
if (!(maxError > 0)) throw new Error(`MAX_ERROR_M must be a number > 0 m, got ${maxErrorText}`);
const { MeshoptSimplifier } = await import(pathToFileURL(library).href);
await MeshoptSimplifier.ready;

const meshes = JSON.parse(fs.readFileSync(path.join(folder, 'meshes.json'), 'utf8'));
const input = fs.readFileSync(path.join(folder, 'meshes.bin'));
const output = [];
const report = [];
let offset = 0;
for (const { nvert, nface } of meshes) {
    const vertices = new Float32Array(input.buffer.slice(input.byteOffset + offset, input.byteOffset + offset + nvert * 12));
    offset += nvert * 12;
    const triangles = new Uint32Array(input.buffer.slice(input.byteOffset + offset, input.byteOffset + offset + nface * 12));
    offset += nface * 12;
    const [kept, error] = MeshoptSimplifier.simplify(triangles, vertices, 3, 0, maxError, ['ErrorAbsolute']);
    output.push(Buffer.from(kept.buffer, kept.byteOffset, kept.byteLength));
    report.push({ triangles: kept.length / 3, error });
}
if (offset !== input.length) throw new Error(`meshes.bin holds ${input.length} bytes, meshes.json describes ${offset}`);
fs.writeFileSync(path.join(folder, 'simplified.bin'), Buffer.concat(output));
console.log(JSON.stringify(report));
