// The live panel's background runs (a module Web Worker): the sag / rise curve over kp and the stability map, so
// a slider never waits for them. Each job carries a generation number; a newer job stops an older one between two
// runs, and the map is sent back one kp row at a time so the page fills it progressively.
import * as core from './physai-live-core.js';

let link = null;
let ready = null;  // the engine's start-up; jobs that arrive during it wait for it
let latest = 0;
const pause = () => new Promise((resolve) => setTimeout(resolve, 0));

async function start(config) {
  const {default: loadMujoco} = await import(new URL('mujoco/mujoco_wasm.js', import.meta.url).href);
  const mujoco = await loadMujoco();
  link = new core.Link(mujoco, config.xml, 'worker-link');
  postMessage({kind: 'ready'});
}

async function curve(job) {
  const {values, config} = job;
  const rows = [];
  for (const kp of config.kpGrid) {
    if (job.generation !== latest) return;
    const params = core.servoParams({...values, kp}, config.linkInertia);
    const r = core.stepResponse(link, params, {q0: config.q0, duration: config.duration});
    const ok = core.settled(r);
    rows.push({kp, sagDeg: ok ? r.sagDeg : NaN, riseMs: ok ? r.riseMs : NaN, bad: !ok});
    await pause();
  }
  postMessage({kind: 'curve', generation: job.generation, rows});
}

async function map(job) {
  const {values, config} = job;
  for (let i = 0; i < config.stabilityKp.length; i++) {
    const cells = [];
    for (const armature of config.stabilityArmature) {
      if (job.generation !== latest) return;
      const params = core.servoParams({...values, kp: config.stabilityKp[i], armature}, config.linkInertia);
      const r = core.stepResponse(link, params, {q0: config.q0, duration: config.stabilitySteps * values.timestep});
      cells.push(core.unstable(r, config.q0));
    }
    postMessage({kind: 'map', generation: job.generation, row: i, cells});
    await pause();
  }
  postMessage({kind: 'map-done', generation: job.generation});
}

onmessage = async (event) => {
  const message = event.data;
  try {
    if (message.kind === 'start') {
      ready = start(message.config);
      await ready;
      return;
    }
    latest = message.generation;
    await ready;
    await pause();  // let a newer job in before starting
    if (message.generation !== latest) return;
    if (message.curve) await curve(message);
    if (message.map) await map(message);
  } catch (error) {
    postMessage({kind: 'error', message: String(error && error.message || error)});
  }
};
