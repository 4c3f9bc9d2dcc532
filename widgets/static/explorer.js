// Search-tree explorer: buttons, filters and the tree send actions; Python sends back HTML and SVG.
const JUMPS = [["candidate", "candidate"], ["verified", "verified"], ["pruned", "pruned"], ["oracle prune", "pruned:oracle"]];

function button(text, cls, onclick) {
  const b = document.createElement("button");
  b.textContent = text;
  b.className = cls;
  b.onclick = onclick;
  return b;
}

function render({ model, el }) {
  el.classList.add("mx-explorer");
  const send = (msg) => model.send(msg);
  const bar = document.createElement("div");
  bar.className = "mx-bar";
  bar.append(
    button("◀ back", "mx-step-back", () => send({ kind: "step", n: -1 })),
    button("step ▶", "mx-step", () => send({ kind: "step", n: 1 })),
  );
  for (const [name, to] of JUMPS) {
    bar.append(
      button(`◀ ${name}`, `mx-jump-prev`, () => send({ kind: "jump", to, direction: -1 })),
      button(`${name} ▶`, `mx-jump-next`, () => send({ kind: "jump", to, direction: 1 })),
    );
  }
  const status = document.createElement("div");
  status.className = "mx-status";
  const message = document.createElement("div");
  message.className = "mx-message";
  const filters = document.createElement("div");
  filters.className = "mx-filters";
  const body = document.createElement("div");
  body.className = "mx-body";
  const left = document.createElement("div");
  left.className = "mx-left";
  const counters = document.createElement("div");
  const tree = document.createElement("div");
  tree.className = "mx-tree";
  left.append(counters, tree);
  const right = document.createElement("div");
  right.className = "mx-right";
  const details = document.createElement("div");
  details.className = "mx-details";
  const drawing = document.createElement("div");
  drawing.className = "mx-svg";
  right.append(details, drawing);
  body.append(left, right);
  el.append(bar, status, message, filters, body);

  function drawFilters() {
    filters.replaceChildren();
    const active = new Set(model.get("active"));
    for (const label of model.get("labels")) {
      const lab = document.createElement("label");
      const box = document.createElement("input");
      box.type = "checkbox";
      box.checked = active.has(label);
      box.dataset.label = label;
      box.onchange = () => {
        const chosen = [...filters.querySelectorAll("input:checked")].map((b) => b.dataset.label);
        send({ kind: "filter", labels: chosen });
      };
      lab.append(box, document.createTextNode(" " + label));
      filters.append(lab);
    }
  }
  tree.addEventListener("click", (ev) => {
    const t = ev.target.closest("[data-toggle]");
    if (t) return send({ kind: "toggle", index: Number(t.dataset.toggle) });
    const s = ev.target.closest("[data-select]");
    if (s) send({ kind: "select", index: Number(s.dataset.select) });
  });
  function scrollToCurrent() {
    tree.querySelector(".mx-current")?.scrollIntoView({ block: "nearest" });
  }
  const sync = {
    status: () => (status.textContent = model.get("status")),
    message: () => (message.textContent = model.get("message")),
    labels: drawFilters,
    active: drawFilters,
    counters: () => (counters.innerHTML = model.get("counters")),
    tree: () => { tree.innerHTML = model.get("tree"); scrollToCurrent(); },
    details: () => (details.innerHTML = model.get("details")),
    svg: () => (drawing.innerHTML = model.get("svg")),
  };
  for (const [name, fn] of Object.entries(sync)) {
    model.on(`change:${name}`, fn);
    fn();
  }
}
export default { render };
