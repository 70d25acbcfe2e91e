// Loaded just before the Jupyter widget manager (@jupyter-widgets/html-manager 1.x,
// embed-amd.js) on a page with widgets; sst_core.book.site puts it there.
(function () {
  // 1. The manager's AMD modules locate their assets (the icon fonts) next to the module's
  //    URL, which require.js otherwise resolves under the page's own folder (404s). Point
  //    them at the folder the manager is served from.
  var dir = (document.documentElement.dataset.content_root || "") + "_static/html-manager";
  if (window.require && window.require.config) {
    window.require.config({paths: {
      "@jupyter-widgets/base": dir + "/base",
      "@jupyter-widgets/controls": dir + "/controls",
      "@jupyter-widgets/html-manager": dir + "/html-manager",
      "@jupyter-widgets/html-manager/dist": dir
    }});
  }
  // 2. The manager typesets widget labels with MathJax 2's MathJax.Hub.Queue; the book
  //    loads MathJax 3, which has no Hub. Give it one that typesets with MathJax 3, both
  //    before MathJax starts (MathJax keeps this configuration object) and after.
  var mj = window.MathJax;
  if (!mj) {
    return;  // a page without math: the manager typesets nothing
  }
  var hub = {Queue: function (job) {
    var m = window.MathJax, element = job && job[2];
    if (m && m.typesetPromise && element) {
      m.typesetPromise([element]).catch(function () {});
    }
  }};
  mj.Hub = mj.Hub || hub;
  if (!mj.version) {  // still the configuration: hook MathJax 3's start
    var startup = mj.startup = mj.startup || {};
    var ready = startup.ready;
    startup.ready = function () {
      if (ready) { ready(); } else { window.MathJax.startup.defaultReady(); }
      window.MathJax.Hub = window.MathJax.Hub || hub;
    };
  }
})();
