// μGraph viewer: draws the SVG Python sends and reports clicks; all state lives in Python.
function render({ model, el }) {
  el.classList.add("mirage-viewer");
  const crumbs = document.createElement("div");
  crumbs.className = "mirage-crumbs";
  const main = document.createElement("div");
  main.className = "mirage-main";
  const drawing = document.createElement("div");
  drawing.className = "mirage-drawing";
  const side = document.createElement("div");
  side.className = "mirage-side";
  const message = document.createElement("div");
  message.className = "mirage-message";
  const tilings = document.createElement("div");
  tilings.className = "mirage-tiling-panel";
  const analysis = document.createElement("div");
  analysis.className = "mirage-analysis-panel";
  analysis.addEventListener("click", (ev) => {
    if (ev.target.closest("[data-mirage-analyze]")) model.send({ kind: "analyze" });
  });
  main.append(drawing, side);
  el.append(crumbs, message, main, analysis, tilings);

  function drawCrumbs() {
    crumbs.replaceChildren();
    model.get("crumbs").forEach((name, i, all) => {
      const b = document.createElement("button");
      b.textContent = name;
      b.className = "mirage-crumb" + (i === all.length - 1 ? " current" : "");
      b.onclick = () => model.send({ kind: "crumb", index: i });
      crumbs.append(b);
      if (i < all.length - 1) crumbs.append(document.createTextNode(" › "));
    });
  }
  function markSelected() {
    drawing.querySelectorAll(".mirage-selected").forEach((g) => g.classList.remove("mirage-selected"));
    const id = model.get("selected");
    if (id) drawing.querySelector(`g[id="${id}"]`)?.classList.add("mirage-selected");
  }
  function drawSvg() {
    drawing.innerHTML = model.get("svg");
    drawing.querySelectorAll("g.node, g.cluster").forEach((g) => g.classList.add("mirage-clickable"));
    markSelected();
  }
  drawing.addEventListener("click", (ev) => {
    const g = ev.target.closest("g.node") || ev.target.closest("g.cluster");
    if (g && g.id) model.send({ kind: "click", id: g.id });
  });
  const sync = {
    svg: drawSvg,
    crumbs: drawCrumbs,
    selected: markSelected,
    details: () => (side.innerHTML = model.get("details")),
    tilings: () => (tilings.innerHTML = model.get("tilings")),
    analysis: () => (analysis.innerHTML = model.get("analysis")),
    message: () => (message.textContent = model.get("message")),
  };
  for (const [name, fn] of Object.entries(sync)) {
    model.on(`change:${name}`, fn);
    fn();
  }
}
export default { render };
