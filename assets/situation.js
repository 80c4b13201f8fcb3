// Progressive enhancement only: keeps "Continue" disabled for the study's minimum reading time.
// Without JavaScript the page works the same; the server records a quality flag instead.
(function () {
  var button = document.getElementById("continue");
  if (!button) return;
  var seconds = parseInt(button.getAttribute("data-min-seconds") || "0", 10);
  if (!(seconds > 0)) return;
  var note = document.getElementById("wait-note");
  button.disabled = true;
  if (note) note.hidden = false;
  setTimeout(function () {
    button.disabled = false;
    if (note) note.hidden = true;
  }, seconds * 1000);
})();
