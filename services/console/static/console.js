// citetrace evidence console: small progressive enhancement over server-rendered pages.
// Without this script every marker is a plain link to its pinned version page.
(function () {
  "use strict";

  // --- evidence panel --------------------------------------------------------------------------
  var panel = document.getElementById("evidence-panel");
  var body = document.getElementById("evidence-body");
  var opener = null;
  var loading = 0;

  function markerOf(node) {
    return node && node.closest ? node.closest("a.marker[data-evidence-url]") : null;
  }

  function setExpanded(marker, value) {
    if (marker) marker.setAttribute("aria-expanded", value ? "true" : "false");
  }

  function focusTitle() {
    var title = document.getElementById("evidence-title");
    (title || panel).focus();
  }

  function openPanel(marker) {
    if (!panel) return;
    if (opener && opener !== marker) setExpanded(opener, false);
    opener = marker;
    setExpanded(marker, true);
    var ticket = ++loading;
    body.innerHTML = '<h2 id="evidence-title" tabindex="-1">Loading ' +
      escapeText(marker.getAttribute("aria-label") || "source") + "\u2026</h2>";
    panel.hidden = false;
    document.body.classList.add("panel-open");
    panel.setAttribute("data-state", "loading");
    focusTitle();
    // The passage is fetched live, with this reader's session, every time: never from a cache.
    fetch(marker.getAttribute("data-evidence-url"), {
      credentials: "same-origin",
      cache: "no-store",
      headers: { "X-Console-Fragment": "1" }
    }).then(function (response) {
      return response.text().then(function (html) { return { ok: response.ok, html: html }; });
    }).then(function (result) {
      if (ticket !== loading) return;
      body.innerHTML = result.html;
      panel.setAttribute("data-state", result.ok ? "open" : "refused");
      panel.setAttribute("data-passage-id", marker.getAttribute("data-passage-id") || "");
      focusTitle();
    }).catch(function () {
      if (ticket !== loading) return;
      body.innerHTML = '<h2 id="evidence-title" tabindex="-1">The source could not be loaded</h2>' +
        "<p>The console did not answer. No text is shown; try again.</p>";
      panel.setAttribute("data-state", "refused");
      focusTitle();
    });
  }

  function closePanel() {
    if (!panel || panel.hidden) return;
    panel.hidden = true;
    document.body.classList.remove("panel-open");
    panel.removeAttribute("data-state");
    loading++;
    var back = opener;
    setExpanded(back, false);
    opener = null;
    if (back) back.focus();
  }

  function escapeText(text) {
    var div = document.createElement("div");
    div.textContent = text;
    return div.innerHTML;
  }

  if (panel) {
    document.querySelectorAll("a.marker[data-evidence-url]").forEach(function (marker) {
      // It opens a panel now rather than navigating: a button to assistive technology.
      marker.setAttribute("role", "button");
      marker.setAttribute("aria-haspopup", "dialog");
    });
    document.addEventListener("click", function (event) {
      var marker = markerOf(event.target);
      if (marker && !event.ctrlKey && !event.metaKey && !event.shiftKey && event.button === 0) {
        event.preventDefault();
        openPanel(marker);
        return;
      }
      if (event.target.closest && event.target.closest("[data-close-panel]")) {
        closePanel();
      }
    });
    document.addEventListener("keydown", function (event) {
      var marker = markerOf(event.target);
      if (marker && (event.key === "Enter" || event.key === " " || event.key === "Spacebar")) {
        event.preventDefault();
        openPanel(marker);
      } else if (event.key === "Escape" && !panel.hidden) {
        event.preventDefault();
        closePanel();
      }
    });
  }

  // --- copy answer ------------------------------------------------------------------------------
  document.querySelectorAll("button.copy-answer").forEach(function (button) {
    button.hidden = false;
    var status = document.querySelector(".copy-status");
    button.addEventListener("click", function () {
      var markdown = button.getAttribute("data-markdown") || "";
      var html = button.getAttribute("data-html") || "";
      var done = function () { if (status) status.textContent = "Answer copied with its markers and pinned links."; };
      var failed = function () { if (status) status.textContent = "Copying is not available here: use a download."; };
      if (navigator.clipboard && window.ClipboardItem) {
        var item = new ClipboardItem({
          "text/plain": new Blob([markdown], { type: "text/plain" }),
          "text/html": new Blob([html], { type: "text/html" })
        });
        navigator.clipboard.write([item]).then(done, function () {
          navigator.clipboard.writeText(markdown).then(done, failed);
        });
      } else if (navigator.clipboard) {
        navigator.clipboard.writeText(markdown).then(done, failed);
      } else {
        failed();
      }
    });
  });

  // --- version page: #chars=a-b ------------------------------------------------------------------
  var text = document.getElementById("version-text");
  if (text) {
    highlightFromHash();
    window.addEventListener("hashchange", highlightFromHash);
  }

  function highlightFromHash() {
    var note = document.getElementById("cited-note");
    text.querySelectorAll("mark.cited").forEach(function (mark) {
      mark.replaceWith(document.createTextNode(mark.textContent));
    });
    text.normalize();
    // #chars=a-b, or with other fragment parameters first (e.g. #page=3&chars=a-b of a paged source).
    var match = /(?:^#|&)chars=(\d+)-(\d+)(?:&|$)/.exec(window.location.hash);
    if (!match) { if (note) note.hidden = true; return; }
    var start = parseInt(match[1], 10), end = parseInt(match[2], 10);
    var length = parseInt(text.getAttribute("data-length"), 10);
    if (!(start < end) || end > length) {
      if (note) { note.hidden = false; note.textContent = "The link names characters " + start + "\u2013" + end +
        ", which are not inside this version (" + length + " characters)."; }
      return;
    }
    var marks = wrapCodePoints(text, start, end);
    if (!marks.length) return;
    marks[0].id = "cited-span";
    marks[0].setAttribute("tabindex", "-1");
    if (note) {
      note.hidden = false;
      note.textContent = "Highlighted: characters " + start + "\u2013" + end + ", the passage the answer cited.";
    }
    marks[0].scrollIntoView({ block: "center" });
    marks[0].focus({ preventScroll: true });
  }

  // Offsets are Unicode code points (as the service computes them), not UTF-16 units.
  function wrapCodePoints(root, start, end) {
    var walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    var pieces = [];
    var offset = 0;
    var node;
    while ((node = walker.nextNode())) {
      var chars = Array.from(node.data);
      var nodeStart = offset, nodeEnd = offset + chars.length;
      offset = nodeEnd;
      if (nodeEnd <= start || nodeStart >= end) continue;
      var from = Math.max(start, nodeStart) - nodeStart;
      var to = Math.min(end, nodeEnd) - nodeStart;
      pieces.push({ node: node, from: chars.slice(0, from).join("").length, to: chars.slice(0, to).join("").length });
    }
    return pieces.map(function (piece) {
      var range = document.createRange();
      range.setStart(piece.node, piece.from);
      range.setEnd(piece.node, piece.to);
      var mark = document.createElement("mark");
      mark.className = "cited";
      range.surroundContents(mark);
      return mark;
    });
  }
})();
