// The book's page panel as a Jupyter widget (physai.interface.widget.PanelWidget, through anywidget): the same
// Panel (ui.js) and chapter module the page uses, with the kernel as its source of results. The widget's `data` is
// the page block's JSON less its first view (spec, constants, module); a control sends `request`
// ({generation, values}) and Python's `reply` ({generation, values, frame, complete}) is drawn by the chapter's decode
// and draw. One request is in flight at a time: a control that moves while Python runs sends only its latest
// values when the reply comes, so a dragged slider never queues stale runs in the kernel.
//
// anywidget loads this module as one file (esbuild bundles it with what it imports: physai.book.widget_bundle),
// from a blob: address, so nothing here may resolve a file next to itself.
import PendulumPanel from './actuator_models_panels.js';
import ServoPanel from './position_actuators_panels.js';
import PdPanel from './where_pd_runs_panels.js';
import SysidPanel from './servo_sysid_panels.js';
import GripperPanel from './gripper_panels.js';
import FirmwarePanel from './servo_firmware_panels.js';

const CHAPTERS = {'position_actuators_panels.js': ServoPanel, 'actuator_models_panels.js': PendulumPanel,
                  'where_pd_runs_panels.js': PdPanel, 'servo_sysid_panels.js': SysidPanel,
                  'gripper_panels.js': GripperPanel, 'servo_firmware_panels.js': FirmwarePanel};

function render({model, el}) {
  const data = model.get('data');
  const Chapter = CHAPTERS[data.module];
  const root = document.createElement('div');
  root.className = 'physai-panel';
  root.id = `physai-panel-${data.spec.key}`;   // as the page block's: the tests' selectors and the inputs' ids
  root.dataset.panel = data.spec.key;
  el.appendChild(root);
  let inFlight = null, waiting = null;
  let sentAt = 0;
  const send = (request) => {
    inFlight = request.generation;
    sentAt = performance.now();
    model.set('request', request);
    model.save_changes();
  };
  // call: a custom message to the kernel ({kind, ...}), answered by one with the same id (the 3D view's files and
  // poses: where_pd_runs_panels.py, _arm3d_messages), resolved as {content, buffers}
  const calls = new Map();
  let called = 0;
  const onMessage = (content, buffers) => {
    const resolve = calls.get(content?.id);
    if (resolve) { calls.delete(content.id); resolve({content, buffers}); }
  };
  model.on('msg:custom', onMessage);
  const kernel = {ask: (request) => { if (inFlight === null) send(request); else waiting = request; },
                  call: (content) => new Promise((resolve) => {
                    const id = ++called;
                    calls.set(id, resolve);
                    model.send({...content, id});
                  })};
  const panel = new Chapter(root, data, null, kernel);
  // the kernel's part and the drawing's of the last first reply, ms (benchmarks/bench_widget.py reads them)
  const onReply = () => {
    const reply = model.get('reply'), arrived = performance.now(), answers = reply.generation === inFlight;
    if (inFlight !== null && reply.generation >= inFlight) {
      inFlight = null;
      if (waiting) { const next = waiting; waiting = null; send(next); }
    }
    panel.fromKernel(reply);
    if (answers) panel.kernelTimes = {roundTrip: arrived - sentAt, draw: performance.now() - arrived};
  };
  model.on('change:reply', onReply);
  panel.build();
  (window.physaiPanels = window.physaiPanels || {})[data.spec.key] = panel;
  return () => {
    model.off('change:reply', onReply);
    model.off('msg:custom', onMessage);
    if (panel.present) panel.togglePresent();   // a view removed while it presents takes its panel off the window
  };
}

export default {render};
