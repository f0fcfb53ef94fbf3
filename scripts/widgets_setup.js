/*
 * Glue between the vendored ipywidgets HTML manager, RequireJS and MathJax 3 on the
 * course website. scripts/vendor_js.py copies this file to
 * book/_vendor/js/jupyter-widgets/setup.js; _config.yml (nb_ipywidgets_js) loads it on
 * every page with widgets, after require.js and before embed-amd.js.
 *
 * 1. Fonts. The HTML manager computes the URL of the files it loads (Font Awesome)
 *    from the RequireJS URL of its modules, "<baseUrl>@jupyter-widgets/...", and the
 *    RequireJS baseUrl is the folder of the page. Mapping "@jupyter-widgets" to the
 *    folder of this file (found from this script's own URL, so it works on every page
 *    at any depth) makes them load from _static/js/jupyter-widgets/, where
 *    vendor_js.py puts them, and never from a CDN.
 *
 * 2. MathJax. @jupyter-widgets/controls typesets widget labels with the MathJax 2
 *    API, MathJax.Hub.Queue(["Typeset", MathJax.Hub, element]), whenever
 *    window.MathJax exists; the book loads MathJax 3, which has no Hub, so every
 *    widget with a description threw "Cannot read properties of undefined (reading
 *    'Queue')". MathJax 3 replaces window.MathJax with its own object when it starts;
 *    the setter below gives that object a small Hub.Queue that forwards to
 *    MathJax.typesetPromise, before any widget can be rendered.
 */
(function () {
  "use strict";

  var here = document.currentScript.src.split("?")[0].split("#")[0];
  var folder = here.slice(0, here.lastIndexOf("/"));
  window.require.config({
    paths: {
      "@jupyter-widgets": folder,
      "@jupyter-widgets/html-manager/dist": folder
    }
  });

  function typesetLater(mj, element) {
    var ready = (mj.startup && mj.startup.promise) || Promise.resolve();
    ready
      .then(function () {
        return mj.typesetPromise ? mj.typesetPromise(element ? [element] : undefined) : null;
      })
      .catch(function (err) {
        console.warn("MathJax could not typeset a widget label:", err);
      });
  }

  function addHub(mj) {
    if (mj && typeof mj === "object" && mj.version && !mj.Hub) {
      mj.Hub = {
        Queue: function () {
          for (var i = 0; i < arguments.length; i++) {
            var job = arguments[i];
            if (Array.isArray(job) && job[0] === "Typeset") {
              typesetLater(mj, job[2]);
            }
          }
        }
      };
    }
    return mj;
  }

  var current = window.MathJax;
  if (current && current.version) {
    addHub(current); // MathJax 3 already running
    return;
  }
  var descriptor = Object.getOwnPropertyDescriptor(window, "MathJax");
  if (descriptor && !descriptor.configurable) {
    return; // declared with var: cannot intercept; leave the page as it is
  }
  Object.defineProperty(window, "MathJax", {
    configurable: true,
    enumerable: true,
    get: function () {
      return current;
    },
    set: function (value) {
      current = addHub(value);
    }
  });
})();
