// Row selection on the dead-letters page: a box that ticks every row of
// the page, and a count of the ticked rows beside the selection's buttons.
// Without script the rows can still be ticked one by one.
(function () {
  "use strict";
  var all = document.querySelector("[data-select-all]");
  var count = document.querySelector("[data-selection-count]");
  if (!all || !count) return;
  var boxes = Array.prototype.slice.call(document.querySelectorAll('input[name="pick"][form="selection"]'));
  var idle = count.textContent;
  function update() {
    var n = boxes.filter(function (b) { return b.checked; }).length;
    count.textContent = n === 0 ? idle : n + (n === 1 ? " letter selected" : " letters selected") + ";";
    all.checked = n > 0 && n === boxes.length;
    all.indeterminate = n > 0 && n < boxes.length;
  }
  all.hidden = false;
  all.addEventListener("change", function () {
    boxes.forEach(function (b) { b.checked = all.checked; });
    update();
  });
  boxes.forEach(function (b) { b.addEventListener("change", update); });
  update();
})();
