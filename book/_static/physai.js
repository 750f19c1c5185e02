/* This script runs in the page's head, before its body: the class lets the style sheet fold the answers (dropdown
   admonitions) from the first paint, before sphinx-togglebutton's script does it after the page has loaded, which
   made everything under them jump (a reader opening a link to a panel saw the page move twice). Without
   JavaScript the class is absent and the answers show. */
document.documentElement.classList.add('physai-js');

/* A link to a panel (#physai-panel-servo) scrolls to it once the page above it has its final height: the math typeset
   (MathJax changes the height of every equation as it sets it, in several passes, and its fonts arrive later), the
   fonts loaded and the panel's first view drawn (it grows from its one-line fallback). The browser's own jump, made while the page was still growing above the panel, moved the panel and
   the text around it twice after the reader saw them (a layout shift of 0.5-0.66); now the page opens at its top and
   moves once, a scroll. */
(function () {
  const hash = location.hash;
  if (!/^#physai-panel-[a-z-]+$/.test(hash)) return;
  history.replaceState(history.state, '', location.pathname + location.search);
  function go(tries) {
    const target = document.getElementById(hash.slice(1));
    if (target && !target.dataset.drawn && tries > 0) {   // the panel's first view (boot.js) is not drawn yet
      setTimeout(function () { go(tries - 1); }, 50);
      return;
    }
    settled(function () {
      history.replaceState(history.state, '', location.pathname + location.search + hash);
      if (target) target.scrollIntoView();
    });
  }
  // then(): once the page's height has stayed the same for three frames running (at most a second's wait)
  function settled(then) {
    let last = -1, same = 0, frames = 0;
    (function frame() {
      const height = document.documentElement.scrollHeight;
      same = height === last ? same + 1 : 0;
      last = height;
      frames += 1;
      if (same >= 3 || frames > 60) then(); else requestAnimationFrame(frame);
    })();
  }
  function whenSet(tries) {
    const startup = window.MathJax && MathJax.startup && MathJax.startup.promise;
    const next = function () { requestAnimationFrame(function () { go(200); }); };
    if (startup) startup.then(function () { return document.fonts.ready; }).then(next);
    else if (document.querySelector('div.math, span.math') && tries > 0) setTimeout(function () { whenSet(tries - 1); }, 100);
    else document.fonts.ready.then(next);
  }
  window.addEventListener('load', function () { whenSet(50); });
})();

/* Displayed equations fit their column: an equation wider than the room beside its number is set in a smaller
   size, down to FIT_MIN of the text's (the long ones are split in the chapters' source, so at desktop width
   none needs it; on a phone some do). Below that the equation scrolls inside its own box, never the page. */
(function () {
  const FIT_MIN = 0.6;
  function fit() {
    document.querySelectorAll('div.math mjx-container[display="true"]').forEach(function (box) {
      const math = box.firstElementChild;
      if (!math) return;
      box.style.fontSize = '';
      const natural = math.getBoundingClientRect().width;
      const room = box.clientWidth - 2;
      const scale = natural > room ? Math.max(FIT_MIN, room / natural) : 1;
      if (scale < 1) box.style.fontSize = (100 * scale).toFixed(1) + '%';
      box.dataset.fitScale = scale.toFixed(3);
    });
  }
  function whenTypeset() {
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
      MathJax.startup.promise.then(fit);
    } else if (document.querySelector('div.math')) {
      setTimeout(whenTypeset, 100);
    }
  }
  window.addEventListener('load', whenTypeset);
  let pending = null;
  window.addEventListener('resize', function () { clearTimeout(pending); pending = setTimeout(fit, 100); });
})();

/* A result table (physai.interface.tables) wider than its column (on a phone: 8 of the book's 92, none at 1280 px) is
   set as two or more narrower tables in its box, each with the table's first column (the row's name) and a run of
   the others, every header over its own column as in the whole table: the reader compares rows down a column as
   before and never scrolls sideways. The parts are cut where they fit, as evenly as the widths allow; the whole table
   stays in the box, hidden, and comes back whenever the column has room for it (a wider window, a phone turned). A zero-height ruler in each box reports
   the column's width (a ResizeObserver, whose reports come between a layout and its paint: the table is cut before
   it is first drawn, so nothing moves after the reader sees it; one in a folded answer, when the answer opens); the
   box itself would not do, as cutting changes its height. Rulers go in as soon as the page has parsed each table.
   Without JavaScript the whole table scrolls in its box. */
(function () {
  const BOX = 'physai-table';
  if (!window.ResizeObserver || !window.MutationObserver) return;
  const rulers = new ResizeObserver(function (entries) {
    entries.forEach(function (entry) { fit(entry.target.parentElement); });
  });

  // table restricted to the columns in keep (indices, in order): a copy with the other cells removed
  function part(table, keep) {
    const copy = table.cloneNode(true);
    copy.removeAttribute('id');
    copy.classList.remove('physai-whole');
    copy.classList.add('physai-part');
    copy.querySelectorAll('tr').forEach(function (row) {
      Array.from(row.cells).forEach(function (cell, index) { if (!keep.includes(index)) cell.remove(); });
    });
    return copy;
  }

  function range(from, to) {
    const out = [];
    for (let i = from; i < to; i += 1) out.push(i);
    return out;
  }

  // the runs of columns 1..n-1 (each shown after column 0) that fit room: first the fewest parts, cutting each where
  // the next column would not fit; then the same number of parts with the columns shared out evenly, when those fit
  function cuts(box, table, n, room) {
    const fits = function (keep) {
      const probe = box.appendChild(part(table, keep));
      const width = probe.getBoundingClientRect().width;
      probe.remove();
      return width <= room + 0.5;
    };
    const greedy = [];
    let start = 1;
    while (start < n) {
      let end = start + 1;
      while (end < n && fits([0].concat(range(start, end + 1)))) end += 1;
      greedy.push(range(start, end));
      start = end;
    }
    const k = greedy.length, columns = n - 1, even = [];
    for (let i = 0, at = 1; i < k; i += 1) {
      const size = Math.floor(columns / k) + (i < columns % k ? 1 : 0);
      even.push(range(at, at + size));
      at += size;
    }
    return even.every(function (run) { return fits([0].concat(run)); }) ? even : greedy;
  }

  function fit(box) {
    if (!box) return;
    const ruler = box.querySelector(':scope > .physai-table-ruler');
    const table = box.querySelector(':scope > table:not(.physai-part)');
    if (!ruler || !table) return;
    const room = ruler.getBoundingClientRect().width;
    if (!room || String(room) === box.dataset.fittedTo) return;   // folded away, or already fitted to this width
    box.dataset.fittedTo = String(room);
    box.querySelectorAll(':scope > table.physai-part').forEach(function (old) { old.remove(); });
    table.classList.remove('physai-whole');
    box.classList.remove('physai-parted');
    const n = table.tHead && table.tHead.rows.length ? table.tHead.rows[0].cells.length : 0;
    if (n < 3 || table.getBoundingClientRect().width <= room + 0.5) return;
    table.classList.add('physai-whole');   // hidden by physai.css while its parts show
    cuts(box, table, n, room).forEach(function (run) { box.appendChild(part(table, [0].concat(run))); });
    box.classList.add('physai-parted');
  }

  function watch(box) {
    if (box.querySelector(':scope > .physai-table-ruler')) return;
    const ruler = document.createElement('div');
    ruler.className = 'physai-table-ruler';
    ruler.setAttribute('aria-hidden', 'true');
    box.insertBefore(ruler, box.firstChild);
    rulers.observe(ruler);   // its first report comes after the next layout, before that frame is painted
  }

  // a box the parser has finished: something follows it or one of its ancestors
  function parsed(node) {
    for (let n = node; n && n !== document.body; n = n.parentNode) if (n.nextSibling) return true;
    return false;
  }

  let pending = [];
  const parsing = new MutationObserver(function (records) {
    records.forEach(function (record) {
      record.addedNodes.forEach(function (node) {
        if (node.nodeType === 1 && node.classList.contains(BOX)) pending.push(node);
      });
    });
    pending = pending.filter(function (box) {
      if (!parsed(box)) return true;
      watch(box);
      return false;
    });
  });
  if (document.readyState === 'loading') {
    parsing.observe(document.documentElement, {childList: true, subtree: true});
  }
  function all() {
    parsing.disconnect();
    pending = [];
    document.querySelectorAll('.' + BOX).forEach(watch);
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', all);
  else all();
})();
