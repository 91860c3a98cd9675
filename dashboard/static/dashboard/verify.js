// The /verify page's drop zone. Progressive enhancement only: without this file the plain file input and
// the Verify button do everything. A file dropped on the zone fills the file input and submits the form;
// clicking the input or reaching it with the keyboard works as before.
document.addEventListener("DOMContentLoaded", function () {
  var zone = document.querySelector("[data-dropzone]");
  if (!zone) { return; }
  var form = zone.closest("form");
  var input = zone.querySelector("input[type=file]");
  var hint = zone.querySelector("[data-dropzone-hint]");
  if (!form || !input || typeof DataTransfer === "undefined") { return; }
  if (hint) { hint.hidden = false; }
  zone.classList.add("active");

  function carriesFiles(event) {
    return event.dataTransfer && Array.prototype.indexOf.call(event.dataTransfer.types || [], "Files") !== -1;
  }
  ["dragenter", "dragover"].forEach(function (name) {
    zone.addEventListener(name, function (event) {
      if (!carriesFiles(event)) { return; }
      event.preventDefault();
      event.dataTransfer.dropEffect = "copy";
      zone.classList.add("dragging");
    });
  });
  ["dragleave", "dragend"].forEach(function (name) {
    zone.addEventListener(name, function () { zone.classList.remove("dragging"); });
  });
  zone.addEventListener("drop", function (event) {
    zone.classList.remove("dragging");
    if (!event.dataTransfer || !event.dataTransfer.files.length) { return; }
    event.preventDefault();
    var files = new DataTransfer();
    files.items.add(event.dataTransfer.files[0]);  // the form checks one file at a time
    input.files = files.files;
    if (form.requestSubmit) { form.requestSubmit(); } else { form.submit(); }
  });
  // A file dropped beside the zone would make the browser open it and leave the page: ignore it instead.
  ["dragover", "drop"].forEach(function (name) {
    document.addEventListener(name, function (event) {
      if (!zone.contains(event.target) && carriesFiles(event)) { event.preventDefault(); }
    });
  });
});
