// The book's page panels (physai.interface.web writes their blocks): this script finds each panel's block, imports
// its chapter's module (named in the block, one module per chapter), builds the panel and draws its precomputed first
// view. A live block naming the panel (data-panel) brings MuJoCo on the reader's first touch (ui.js). Nothing here
// loads the engine. The page loads this module once (Sphinx adds it with a ?v= digest); no module imports it.
async function boot() {
  for (const root of document.querySelectorAll('div.physai-panel[data-panel]')) {
    if (root.dataset.built) continue;
    root.dataset.built = '1';
    try {
      const data = JSON.parse(root.querySelector('script.physai-panel-data').textContent);
      const block = document.querySelector(`div.physai-live[data-panel="${root.dataset.panel}"]`);
      const live = block ? JSON.parse(block.querySelector('script.physai-live-data').textContent) : null;
      const {default: Chapter} = await import(`./${data.module}`);
      const panel = new Chapter(root, data, live);
      panel.build();
      (window.physaiPanels = window.physaiPanels || {})[data.spec.key] = panel;
    } catch (error) {
      root.dataset.built = 'failed';
      console.error('physai panel:', error);
    }
  }
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', boot);
else boot();
