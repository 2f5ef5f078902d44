// Live refresh for the adk dashboard: every data-refresh seconds, fetch the
// same page and swap in its #live region. No build step, no dependency.
// Paused while the tab is hidden, while a form field in the region has
// focus, or by the footer button.
(function () {
  "use strict";
  var region = document.getElementById("live");
  if (!region) return;
  var secs = parseInt(region.getAttribute("data-refresh") || "0", 10);
  if (!secs) return;
  var paused = false;
  var toggle = document.getElementById("live-toggle");
  if (toggle) {
    toggle.addEventListener("click", function () {
      paused = !paused;
      toggle.textContent = paused ? "resume live refresh" : "pause live refresh";
    });
  }
  function busy() {
    var a = document.activeElement;
    return a && region.contains(a) && /^(INPUT|SELECT|TEXTAREA)$/.test(a.tagName);
  }
  function tick() {
    if (paused || document.hidden || busy()) return;
    fetch(window.location.href, { credentials: "same-origin", headers: { "X-Live-Refresh": "1" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (!html || paused || busy()) return;
        var next = new DOMParser().parseFromString(html, "text/html").getElementById("live");
        if (next) region.replaceChildren.apply(region, Array.prototype.slice.call(next.childNodes));
      })
      .catch(function () { /* a missed refresh is retried on the next tick */ });
  }
  window.setInterval(tick, secs * 1000);
})();
