// Chapter 1's background runs in a module Web Worker: the sag / rise curve over kp and the stability map
// (runs.js's kpCurve and stabilityRows), so a control never waits for them. Each job carries a generation; a newer
// job stops an older one between two runs, and the map comes back one kp row at a time.
import {Model, load} from './engine.js';
import {kpCurve, stabilityRows} from './runs.js';

let model = null, constants = null, ready = null, latest = 0;
const pause = () => new Promise((resolve) => setTimeout(resolve, 0));

// parts: the page's compiled engine and its glue (engine.js engineParts), so the worker fetches neither again
async function start({xml, engine}, panelConstants, parts) {
  model = new Model(await load(undefined, parts), xml, engine);
  constants = panelConstants;
}

async function job({generation, values, curve, map}) {
  if (curve) {
    const runs = kpCurve(model, values, constants);
    let step = runs.next();
    while (!step.done) {
      if (generation !== latest) return;
      await pause();
      step = runs.next();
    }
    postMessage({kind: 'curve', generation, curve: step.value});
  }
  if (map) {
    for (const [row, cells] of stabilityRows(model, values, constants)) {
      if (generation !== latest) return;
      postMessage({kind: 'map', generation, row, cells});
      await pause();
    }
    postMessage({kind: 'map-done', generation});
  }
}

onmessage = async (event) => {
  const message = event.data;
  try {
    if (message.kind === 'start') {
      ready = start(message.live, message.constants, message.parts);
      await ready;
      return;
    }
    latest = message.generation;
    await ready;
    await pause();   // let a newer job in before starting
    if (message.generation === latest) await job(message);
  } catch (error) {
    postMessage({kind: 'error', message: String(error?.message || error)});
  }
};
