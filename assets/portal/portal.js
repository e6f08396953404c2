/* hookd portal: the only script of the portal (served by the worker; the
 * Content-Security-Policy allows no inline script). Everything works without
 * it but "reveal secret"; it adds confirmations before destructive actions. */
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("button[data-reveal]").forEach(function (btn) {
    btn.addEventListener("click", function () {
      var target = document.getElementById(btn.getAttribute("data-target"));
      fetch(btn.getAttribute("data-reveal"), { credentials: "same-origin" })
        .then(function (r) {
          if (!r.ok) throw new Error("HTTP " + r.status);
          return r.text();
        })
        .then(function (text) {
          target.textContent = text; /* text, never markup */
          target.hidden = false;
          btn.hidden = true;
        })
        .catch(function () {
          target.textContent = "The secret could not be loaded: reload the page.";
          target.hidden = false;
        });
    });
  });
  document.querySelectorAll("form[data-confirm]").forEach(function (form) {
    form.addEventListener("submit", function (ev) {
      if (!window.confirm(form.getAttribute("data-confirm"))) ev.preventDefault();
    });
  });
});
