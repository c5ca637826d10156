// The import pages: the upload form refuses a file over the size limit before sending it,
// and the status page polls progress.json while the import is not final. No framework.
"use strict";

var POLL_MS = 2000;

function megabytes(bytes) {
  return (bytes / 1048576).toFixed(1) + " MB";
}

// The server refuses a larger body as it arrives, but a browser still sending it may show a
// reset connection instead of the page's message: say it here, before anything is sent.
function guardUploadSize() {
  var input = document.querySelector("input[type=file][data-max-bytes]");
  if (!input) return;
  var limit = Number(input.dataset.maxBytes);
  input.form.addEventListener("submit", function (event) {
    // The limit is for the body's files together: the result file and the file that came with it.
    var total = 0, count = 0;
    input.form.querySelectorAll("input[type=file]").forEach(function (each) {
      if (each.files[0]) { total += each.files[0].size; count += 1; }
    });
    var old = document.getElementById("upload-too-large");
    if (old) old.remove();
    if (total <= limit) return;
    event.preventDefault();
    var message = document.createElement("p");
    message.className = "error";
    message.id = "upload-too-large";
    var what = count > 1 ? "These files together (" + megabytes(total) + ") are" :
      "This file (" + megabytes(total) + ") is";
    message.textContent = what + " larger than the upload limit of " + megabytes(limit) +
      ": nothing was sent.";
    input.insertAdjacentElement("afterend", message);
  });
}

function pollImport() {
  var status = document.getElementById("import-status");
  if (!status || status.dataset.final === "true") return;
  fetch(status.dataset.progressUrl, {credentials: "same-origin"})
    .then(function (r) { return r.json(); })
    .then(function (p) {
      // The end shows the error or the link to the run: the page draws those itself.
      if (p.final) {
        window.location.reload();
        return;
      }
      var state = document.getElementById("import-state");
      state.textContent = p.state;
      state.className = "state state-" + p.state;
      document.getElementById("import-progress").textContent =
        p.progress + " point" + (p.progress === 1 ? "" : "s") + " read";
      setTimeout(pollImport, POLL_MS);
    })
    .catch(function () { setTimeout(pollImport, POLL_MS * 2); });
}

document.addEventListener("DOMContentLoaded", function () {
  guardUploadSize();
  setTimeout(pollImport, POLL_MS);
});
