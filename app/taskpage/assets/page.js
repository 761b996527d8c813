// Fetches the page again while the task runs and swaps in what changed,
// keeping the folds the reader opened. Without this script the page
// refreshes itself (<noscript> meta refresh).
(function () {
  "use strict";
  var main = document.querySelector("main");
  if (!main || main.dataset.final === "true") return;
  var every = (parseInt(main.dataset.refresh, 10) || 3) * 1000;
  function stale() {
    var note = document.createElement("p");
    note.className = "stale";
    note.textContent = "This page is no longer available: the link expired or was revoked.";
    main.prepend(note);
  }
  function poll() {
    fetch(location.href, {
      headers: { "If-None-Match": '"' + main.dataset.version + '"' },
      cache: "no-store", credentials: "omit", redirect: "error"
    }).then(function (r) {
      if (r.status === 304) return null;
      if (r.status === 404) return undefined;
      if (!r.ok) throw new Error(String(r.status));
      return r.text();
    }).then(function (html) {
      if (html === undefined) return stale();
      if (html !== null) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var next = doc.querySelector("main");
        if (next) {
          main.querySelectorAll("details[open]").forEach(function (d) {
            var same = d.id && doc.getElementById(d.id);
            if (same) same.open = true;
          });
          document.title = doc.title;
          main.replaceWith(next);
          main = next;
        }
      }
      if (main.dataset.final !== "true") setTimeout(poll, every);
    }).catch(function () {
      setTimeout(poll, every * 3); // unreachable for now: try again, slower
    });
  }
  setTimeout(poll, every);
})();
