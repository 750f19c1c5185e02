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
