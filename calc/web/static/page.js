// calc web: no build step, no network. Empty fields are left out of the URL; a pasted config
// goes as a POST body; a file chosen is read into the text box; a click on a table heading
// sorts by that column; "copy" copies the CLI line; while a request runs, its seconds and a
// cancel button.
(function () {
  var form = document.querySelector("form");
  var config = form.querySelector("textarea[name=config]");
  var busy = document.querySelector(".busy"), timer = null;
  form.addEventListener("submit", function () {
    if (config && config.value.trim()) { form.method = "post"; }
    form.querySelectorAll("input,select,textarea").forEach(function (el) {
      if (!el.value) { el.disabled = true; setTimeout(function () { el.disabled = false; }); }
    });
    var start = Date.now();
    timer = setInterval(function () {  // a search takes seconds: say so, and offer to stop it
      busy.hidden = false;
      busy.querySelector("span").textContent = Math.round((Date.now() - start) / 1000);
    }, 500);
  });
  busy.querySelector("button").addEventListener("click", function () {
    window.stop();  // the connection closes; the server stops the search
    clearInterval(timer);
    busy.hidden = true;
  });
  var upload = form.querySelector("input.upload");
  if (upload) {
    upload.addEventListener("change", function () {
      var file = upload.files[0];
      if (!file) { return; }
      if (file.size > 1000000) { alert("config.json: larger than 1 MB"); return; }
      file.text().then(function (text) { config.value = text; });
    });
  }
  document.querySelectorAll("button.copy").forEach(function (button) {
    button.addEventListener("click", function () {
      navigator.clipboard.writeText(button.previousElementSibling.textContent);
    });
  });
  function key(cell) {
    var text = cell.textContent.trim(), number = parseFloat(text.replace(/,/g, ""));
    return isNaN(number) ? text : number;
  }
  document.querySelectorAll("table").forEach(function (table) {
    table.querySelectorAll("thead th").forEach(function (th, column) {
      th.addEventListener("click", function () {
        var body = table.tBodies[0], up = th.dataset.order !== "up";
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = key(a.cells[column]), y = key(b.cells[column]);
          return (x < y ? -1 : x > y ? 1 : 0) * (up ? 1 : -1);
        });
        rows.forEach(function (row) { body.appendChild(row); });
        th.dataset.order = up ? "up" : "down";
      });
    });
  });
})();
