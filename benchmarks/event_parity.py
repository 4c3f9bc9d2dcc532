"""Two run folders of the same search hold the same events (issue 37, events by column): whatever their formats
(event blocks, JSON lines), their explorer indexes agree array for array (labels, parents, weights), random
events decode equal, every state id maps to the same event, and random states of the first replay to their
partial μGraphs. Prints what it checked and how long each folder took to open.

    .venv/bin/python benchmarks/event_parity.py NEW_FOLDER OLD_FOLDER [--events 3000] [--replays 300]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from mirage_lab.search.run_folder import events_file
from mirage_lab.widgets.event_index import CODE, EventIndex
from mirage_lab.widgets.explorer_state import ExplorerState


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("new", type=Path)
    ap.add_argument("old", type=Path)
    ap.add_argument("--events", type=int, default=3000, help="random events decoded from both")
    ap.add_argument("--replays", type=int, default=300, help="random states of NEW replayed")
    args = ap.parse_args(argv)
    t = time.perf_counter()
    new = ExplorerState(args.new, progress=False)
    print(f"{args.new / events_file(args.new)}: opened in {time.perf_counter() - t:.2f} s")
    t = time.perf_counter()
    old = EventIndex(args.old / events_file(args.old), progress=False)
    print(f"{args.old / events_file(args.old)}: opened in {time.perf_counter() - t:.2f} s")
    ok = len(new.index) == len(old)
    print(f"events: {len(new.index):,} and {len(old):,}")
    for name in ("labels", "parents", "weights"):
        same = ok and bool(np.array_equal(getattr(new.index, name), getattr(old, name)))
        print(f"{name}: {'equal' if same else 'DIFFER'}")
        ok = ok and same
    rng = np.random.default_rng(0)
    picks = rng.integers(0, len(old), args.events) if len(old) else []
    differ = sum(new.index.event(int(i)) != old.event(int(i)) for i in picks)
    print(f"{len(picks)} random events decoded both ways: {differ} differ")
    ids = dict(old.node_index) if isinstance(old.node_index, dict) else {}
    wrong = sum(new.index.node_index.get(k) != v for k, v in ids.items())
    print(f"state ids: {len(new.index.node_index):,} and {len(old.node_index):,}, {wrong} map elsewhere")
    states = np.flatnonzero(new.index.labels == CODE["expand"])
    for i in rng.choice(states, min(args.replays, len(states)), replace=False):
        new.partial(int(i))  # (a FormatError or a builder's error if a decision no longer replays)
    print(f"{min(args.replays, len(states))} random states replayed")
    ok = ok and not differ and not wrong and len(new.index.node_index) == len(old.node_index)
    print("same events" if ok else "THE EVENTS DIFFER")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
