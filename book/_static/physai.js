/* This script runs in the page's head, before its body: the class lets the style sheet fold the answers (dropdown
   admonitions) from the first paint, before sphinx-togglebutton's script does it after the page has loaded, which
   made everything under them jump (a reader opening a link to a panel saw the page move twice). Without
   JavaScript the class is absent and the answers show. */
document.documentElement.classList.add('physai-js');

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
