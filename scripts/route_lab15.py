"""Route every setting Lab 15's instruments reach and keep the runs in labs/core/scenarios/lab15_runs.npz:
`python scripts/route_lab15.py`. Run it after any change to labs/core/engine/routing.py or to the
lab's router settings (tests/test_lab15_store.py fails until you do); the lab routes what the file
does not hold, so a stale file costs time, never a wrong number."""

from __future__ import annotations

import time

from labs.core.scenarios import lab15

if __name__ == "__main__":
    start = time.process_time()
    lab15.write_store()
    print(f"{len(lab15.instrument_keys())} runs -> {lab15.STORE} ({lab15.STORE.stat().st_size / 1e6:.2f} MB) in {time.process_time() - start:.1f} s of CPU")
