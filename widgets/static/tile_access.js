// Tile-access view: block pickers and an iteration slider; Python sends the drawing and the table.
function render({ model, el }) {
  el.classList.add("mirage-tile-access");
  const controls = document.createElement("div");
  controls.className = "mta-controls";
  const message = document.createElement("div");
  message.className = "mta-message";
  const body = document.createElement("div");
  el.append(controls, message, body);

  const pickers = ["x", "y", "z"].map((axis, i) => {
    const input = document.createElement("input");
    Object.assign(input, { type: "number", min: 0, step: 1 });
    input.dataset.axis = axis;
    input.onchange = () => {
      const block = [...model.get("block")];
      block[i] = Number(input.value);
      model.set("block", block);
      model.save_changes();
    };
    const label = document.createElement("label");
    label.append(`block ${axis} `, input);
    return { input, label };
  });
  const slider = document.createElement("input");
  Object.assign(slider, { type: "range", min: 0, step: 1, className: "mta-iteration" });
  const shown = document.createElement("span");
  const loop = document.createElement("label");
  loop.append("iteration ", slider, " ", shown);
  slider.oninput = () => {
    showIteration(Number(slider.value)); // at once, from the tiles already drawn
    model.set("iteration", Number(slider.value));
    model.save_changes();
  };
  controls.append(...pickers.map((p) => p.label), loop);

  function showIteration(i) {
    shown.textContent = `${i} (of 0…${model.get("forloop_range") - 1})`;
    body.querySelectorAll("g.mta-tile").forEach((r) => {
      const at = r.dataset.iteration;
      r.style.display = at === "all" || Number(at) === i ? "" : "none";
    });
  }
  function sync() {
    const grid = model.get("grid");
    const block = model.get("block");
    pickers.forEach((p, i) => {
      p.input.max = grid[i] - 1;
      p.input.value = block[i];
      p.input.disabled = grid[i] <= 1;
    });
    slider.max = model.get("forloop_range") - 1;
    slider.disabled = model.get("forloop_range") <= 1;
    slider.value = model.get("iteration");
    body.innerHTML = model.get("body");
    showIteration(model.get("iteration"));
  }
  for (const name of ["grid", "forloop_range", "block", "iteration", "body"]) model.on(`change:${name}`, sync);
  model.on("change:message", () => (message.textContent = model.get("message")));
  sync();
}
export default { render };
